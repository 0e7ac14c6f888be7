import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the signals ask of the supervisor: SIGINT/SIGTERM stop, SIGHUP reloads the preset,
/// SIGUSR1 unmutes. Each handler only sets its flag and wakes the supervisor, which takes the
/// flags at its next wake; SIGPIPE is ignored (a stream reader that goes away gives EPIPE).
///
/// Thread: the handlers run on a Dispatch queue; the supervisor reads and takes the flags.
final class SignalFlags: @unchecked Sendable {
  private let stop = Atomic<Bool>(false)
  private let reload = Atomic<Bool>(false)
  private let unmute = Atomic<Bool>(false)
  private var sources: [(Int32, any DispatchSourceSignal)] = []

  init() {}

  /// Installs the handlers for `signals` (all four by default); each wakes `wake`.
  func install(wake: DispatchSemaphore, signals: [Int32] = [SIGHUP, SIGUSR1, SIGINT, SIGTERM]) {
    signal(SIGPIPE, SIG_IGN)
    for sig in signals {
      signal(sig, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
      source.setEventHandler { [weak self] in
        self?.note(sig)
        wake.signal()
      }
      source.resume()
      sources.append((sig, source))
    }
  }

  /// Cancels the handlers and gives their signals back their default action (tests).
  func uninstall() {
    for (sig, source) in sources {
      source.cancel()
      signal(sig, SIG_DFL)
    }
    sources.removeAll()
  }

  /// Sets the flag `sig` stands for.
  func note(_ sig: Int32) {
    switch sig {
    case SIGHUP: reload.store(true, ordering: .releasing)
    case SIGUSR1: unmute.store(true, ordering: .releasing)
    case SIGINT, SIGTERM: requestStop()
    default: break
    }
  }

  /// Asks the supervisor to stop (a signal, or the session manager's wait cut short).
  func requestStop() { stop.store(true, ordering: .releasing) }

  /// True once a stop was asked for (it stays asked).
  var stopRequested: Bool { stop.load(ordering: .acquiring) }

  /// True when a reload was asked for since the last call.
  func takeReload() -> Bool { reload.exchange(false, ordering: .acquiringAndReleasing) }

  /// True when an unmute was asked for since the last call.
  func takeUnmute() -> Bool { unmute.exchange(false, ordering: .acquiringAndReleasing) }
}
