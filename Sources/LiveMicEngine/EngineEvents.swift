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

  /// True while JACK runs in freewheel mode (as fast as it can, for export).
  public let freewheeling = Atomic<Bool>(false)

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

  public init(wake: DispatchSemaphore = DispatchSemaphore(value: 0)) {
    self.wake = wake
  }
}
