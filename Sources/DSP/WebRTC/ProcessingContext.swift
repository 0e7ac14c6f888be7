import CWebRTC
import Synchronization

/// How the chains of this process run. Offline (`livemic render`, `bench`, the tests), units that
/// hand work to a helper thread in real time do it inline, deterministically. Live, the helper
/// threads run at `helperPriority` (SCHED_FIFO; 0: normal scheduling).
///
/// Thread: set before a chain is built (the session sets the priority from each new client).
public enum ProcessingContext {
  private static let offline = Atomic<Bool>(false)
  private static let priority = Atomic<Int32>(0)
  /// True when nothing runs in real time.
  public static var isOffline: Bool { offline.load(ordering: .relaxed) }
  /// Says that nothing in this process runs in real time (or, `false`, that it does).
  public static func runOffline(_ on: Bool = true) { offline.store(on, ordering: .relaxed) }
  /// The SCHED_FIFO priority of helper threads (below the audio thread's), 0 for none.
  public static var helperPriority: Int32 { priority.load(ordering: .relaxed) }
  /// Sets it: one below the JACK client's real-time priority, or 0 when the client is not real-time.
  public static func setHelperPriority(_ value: Int32) { priority.store(max(value, 0), ordering: .relaxed) }

  private static let period = Atomic<Int>(0)
  /// The host's period (JACK's buffer size) in frames, 0 when unknown: a unit that hands work to
  /// a helper thread declares latency enough for a whole period.
  public static var hostPeriodFrames: Int { period.load(ordering: .relaxed) }
  /// Sets it (the session, before it builds a chain for a client or a new buffer size).
  public static func setHostPeriod(frames: Int) { period.store(max(frames, 0), ordering: .relaxed) }

  /// The helper-thread latency for frames of `frameLength`: the frame itself, then the time the
  /// helper has to process it, at least one frame and at least one host period (a period longer
  /// than a frame pushes several frames at once, and all of them are due before the next
  /// cycle). Offline the frames are processed inline: two frames, whatever the block.
  public static func helperLatencyFrames(frameLength: Int) -> Int {
    frameLength + (isOffline ? frameLength : max(frameLength, hostPeriodFrames))
  }

  /// Whether units built for `hostPeriodFrames` declare another latency at a period of
  /// `frames` (then they are built again): only when either period is longer than a 10 ms frame
  /// at `sampleRate`.
  public static func helperLatencyChanges(toPeriod frames: Int, sampleRate: Double) -> Bool {
    let frame = Int(sampleRate / 100)
    return max(frame, hostPeriodFrames) != max(frame, frames)
  }
}
