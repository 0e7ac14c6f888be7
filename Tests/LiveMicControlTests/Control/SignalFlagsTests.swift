import Dispatch
import Testing

@testable import LiveMicControl

#if canImport(Glibc)
  import Glibc
#endif

/// The signal flags on their own: a signal sets its flag and wakes the supervisor; the flags
/// are taken once.
@Suite(.serialized) struct SignalFlagsTests {
  /// Waits until the handlers listen (a Dispatch signal source starts a moment after
  /// `resume`): sends SIGUSR1 until `wake` is signalled, then lets any extra one land and
  /// clears what they set. False after 5 s.
  static func waitUntilListening(_ flags: SignalFlags, _ wake: DispatchSemaphore) -> Bool {
    for _ in 0..<50 {
      kill(getpid(), SIGUSR1)
      if wake.wait(timeout: .now() + .milliseconds(100)) == .success {
        usleep(300_000)
        while wake.wait(timeout: .now()) == .success {}
        _ = flags.takeUnmute()
        return true
      }
    }
    return false
  }

  @Test("SIGHUP asks for a reload and SIGUSR1 for an unmute, each taken once; both wake the supervisor")
  func reloadAndUnmute() {
    let flags = SignalFlags()
    let wake = DispatchSemaphore(value: 0)
    flags.install(wake: wake, signals: [SIGHUP, SIGUSR1])
    defer { flags.uninstall() }
    #expect(Self.waitUntilListening(flags, wake))
    kill(getpid(), SIGUSR1)
    #expect(wake.wait(timeout: .now() + .seconds(5)) == .success)
    #expect(flags.takeUnmute() && !flags.takeUnmute() && !flags.takeReload())
    kill(getpid(), SIGHUP)
    #expect(wake.wait(timeout: .now() + .seconds(5)) == .success)
    #expect(flags.takeReload() && !flags.takeReload())
    #expect(!flags.stopRequested)
  }

  @Test("SIGINT and SIGTERM ask for a stop, which stays asked")
  func stop() {
    for sig in [SIGINT, SIGTERM] {
      let flags = SignalFlags()
      flags.note(sig)
      #expect(flags.stopRequested && flags.stopRequested && !flags.takeReload() && !flags.takeUnmute())
    }
    let flags = SignalFlags()
    flags.requestStop()
    #expect(flags.stopRequested)
  }
}
