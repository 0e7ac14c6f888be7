import Foundation
import Testing

/// What suites need beside `LiveRig`'s own init: clients that come
/// after LiveMic, `ctl --json` answers as objects, and waits on LiveMic's own evidence (its
/// threads, the real-time guard's report) instead of sleeps. LiveMic's client name is the rig's
/// (`LiveRig.clientName`, `lmclient`): the suites' port names follow it.
extension LiveRig {
  /// A JACK client of the test's that comes after LiveMic started (a device that appears, or one
  /// made again after `server.killAndRestart()`), on the rig's server. Not in `clients` (those
  /// are made before LiveMic): the test closes it, or its deinit does. `activate` (default: the
  /// spec's) false registers its ports only (`TestClient.activate()` then activates it).
  func join(_ spec: Client, activate: Bool? = nil) throws -> TestClient {
    try TestClient(
      name: spec.name, server: server.name, signal: spec.signal, captureChannels: spec.captureChannels,
      seconds: spec.seconds, midi: spec.midi, activate: activate ?? spec.activate)
  }

  /// `livemic ctl -n lmclient --json WORDS` against this rig's LiveMic, its answer as an object
  /// (empty when it is not one).
  func json(_ words: [String]) throws -> [String: Any] {
    jsonObject(try ctl(["--json"] + words).stdout)
  }

  /// The path of this rig's control socket (under its folder, LiveMic's `XDG_RUNTIME_DIR`).
  var socketPath: String { folder.appendingPathComponent("livemic/\(Self.clientName).sock").path }

  /// How many threads LiveMic's process has now (`/proc/PID/task`); nil once it is gone.
  var threadCount: Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(livemic.process.processIdentifier)/task"))?
      .count
  }

  /// Returns once the real-time guard (the rig made `guarded`) has rewritten its counters after
  /// this call (it does every 200 ms, by an atomic rename, counting cycles meanwhile): the file
  /// then holds every call counted before the call. False when that takes over `timeoutSeconds`.
  func waitForGuardReport(timeoutSeconds: Double = 5) -> Bool {
    guard let counters else { return false }
    let cycles = { Int(RealtimeGuard.counters(counters)["cycles"] ?? "") ?? -1 }
    let before = cycles()
    return waitUntil(seconds: timeoutSeconds) { cycles() > before }
  }

  /// The reconnections LiveMic's `status` counts (nil when it does not answer).
  var reconnections: Int? { status()?["reconnections"] as? Int }

  /// Returns once LiveMic's `status` counts `count` reconnections (its connections restored
  /// then: the supervisor answers only after the whole reconnection); false after `seconds`.
  func waitForReconnections(_ count: Int, seconds: Double = 10) -> Bool {
    waitUntil(seconds: seconds) { (reconnections ?? -1) >= count }
  }
}
