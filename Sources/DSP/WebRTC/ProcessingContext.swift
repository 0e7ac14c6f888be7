/// How a chain is to run, given to every stage at `prepare`: offline (`livemic render`, `bench`,
/// the tests), units that hand work to a helper thread in real time do it inline,
/// deterministically; live, the helper threads run at `helperPriority` (SCHED_FIFO; 0: normal
/// scheduling) with latency enough for a host period of `hostPeriodFrames`.
///
/// Thread: any (value type). The session makes one for each client and period it builds a chain
/// for (`LiveSession.settings(for:)`); the chain keeps the one it was prepared with.
public struct ProcessingContext: Sendable, Equatable {
  /// True when nothing runs in real time.
  public var isOffline: Bool
  /// The SCHED_FIFO priority of helper threads (below the audio thread's), 0 for none.
  public var helperPriority: Int32
  /// The host's period (JACK's buffer size) in frames, 0 when unknown: a unit that hands work to
  /// a helper thread declares latency enough for a whole period.
  public var hostPeriodFrames: Int

  /// Offline: no helper threads, no host period.
  public static let offline = ProcessingContext(isOffline: true, helperPriority: 0, hostPeriodFrames: 0)

  /// Live on a client whose period is `hostPeriodFrames`, helpers at `helperPriority` (clamped
  /// to 0 and up).
  public static func live(helperPriority: Int32, hostPeriodFrames: Int) -> ProcessingContext {
    ProcessingContext(
      isOffline: false, helperPriority: max(helperPriority, 0), hostPeriodFrames: max(hostPeriodFrames, 0))
  }

  /// The helper-thread latency for frames of `frameLength`: the frame itself, then the time the
  /// helper has to process it, at least one frame and at least one host period (a period longer
  /// than a frame pushes several frames at once, and all of them are due before the next
  /// cycle). Offline the frames are processed inline: two frames, whatever the block.
  public func helperLatencyFrames(frameLength: Int) -> Int {
    frameLength + (isOffline ? frameLength : max(frameLength, hostPeriodFrames))
  }

  /// Whether units built for `hostPeriodFrames` declare another latency at a period of
  /// `frames` (then they are built again): only when either period is longer than a 10 ms frame
  /// at `sampleRate`.
  public func helperLatencyChanges(toPeriod frames: Int, sampleRate: Double) -> Bool {
    let frame = Int(sampleRate / 100)
    return max(frame, hostPeriodFrames) != max(frame, frames)
  }
}
