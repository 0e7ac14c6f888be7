import DSP
import Dispatch
import Synchronization

/// What JACK's non-process callbacks report to the supervisor: they only store atomics and
/// signal `wake` (async-signal-safe work, as the JACK API requires for shutdown).
///
/// Thread: written by libjack's threads, read by the supervisor.
public final class EngineEvents: @unchecked Sendable {
  /// Signalled whenever something below changes (shared across reconnections).
  public let wake: DispatchSemaphore
  /// Set once the server has shut the client down.
  public let serverLost = Atomic<Bool>(false)
  /// Xruns counted since the client opened.
  public let xruns = Atomic<UInt64>(0)
  /// The delay of the latest xrun in microseconds, as Float bits.
  public let lastXrunMicrosecondsBits = Atomic<UInt32>(0)
  /// The server's buffer size, updated by the buffer-size callback.
  public let bufferFrames = Atomic<UInt32>(0)
  /// The server's sample rate, updated by the sample-rate callback.
  public let sampleRate = Atomic<UInt32>(0)
  /// Latency the chain adds, in frames, reported to JACK by the latency callback.
  public let chainLatencyFrames = Atomic<UInt32>(0)

  /// The client the callbacks belong to (set before activation, for `jack_get_xrun_delayed_usecs`).
  nonisolated(unsafe) var clientHandle: OpaquePointer?

  /// True while JACK runs in freewheel mode (the graph as fast as it can, for an export).
  public let freewheeling = Atomic<Bool>(false)
  /// Freewheel notifications so far (starts and stops), so the supervisor also sees a start and
  /// a stop that both came between two of its wakes.
  public let freewheelChanges = Atomic<UInt64>(0)
  /// LiveMic's cycles and frames run when freewheeling last started, and last stopped: their
  /// differences are what ran freewheeling.
  public let freewheelStartCycles = Atomic<UInt64>(0)
  public let freewheelStartFrames = Atomic<UInt64>(0)
  public let freewheelStopCycles = Atomic<UInt64>(0)
  public let freewheelStopFrames = Atomic<UInt64>(0)
  /// The audio thread's state, whose counters the freewheel callback reads (set before
  /// activation, never changed while active).
  nonisolated(unsafe) var processState: ProcessState?

  /// Set when ports appear or disappear or connections change; the supervisor clears it.
  public let graphChanged = Atomic<Bool>(false)

  /// Full names of other clients' ports unregistered since the supervisor last asked
  /// (`takeVanishedPorts`): a port that vanished and came back between two readings of the
  /// graph lost its connections to the server, not to a user.
  private let vanished = Locked<Set<String>>([])

  /// Notes an unregistered port. Thread: libjack's notification thread (not the process
  /// callback).
  func portVanished(_ name: String) {
    vanished.withLock { _ = $0.insert(name) }
  }

  /// The ports unregistered since the last call, and forgets them. Thread: the supervisor.
  public func takeVanishedPorts() -> Set<String> {
    vanished.withLock { ports in
      defer { ports = [] }
      return ports
    }
  }

  /// Notes that freewheeling started (`on`) or stopped: the counters run so far, then the
  /// state, then the count the supervisor watches. Thread: libjack's notification thread.
  func noteFreewheel(_ on: Bool) {
    let cycles = processState?.cycles.load(ordering: .relaxed) ?? 0
    let frames = processState?.framesRun.load(ordering: .relaxed) ?? 0
    if on {
      freewheelStartCycles.store(cycles, ordering: .relaxed)
      freewheelStartFrames.store(frames, ordering: .relaxed)
    } else {
      freewheelStopCycles.store(cycles, ordering: .relaxed)
      freewheelStopFrames.store(frames, ordering: .relaxed)
    }
    freewheeling.store(on, ordering: .relaxed)
    freewheelChanges.add(1, ordering: .releasing)
  }

  public init(wake: DispatchSemaphore = DispatchSemaphore(value: 0)) {
    self.wake = wake
  }
}
