import Foundation
import Testing

/// The fixture an end-to-end test starts from: a private folder, a private server, the test's
/// own JACK clients on it, and LiveMic connected to them, ready once LiveMic answers `status`
/// (its control socket answers only after the client runs and its connections are made, so no
/// log line is waited for). Torn down by `stop()` (from a `defer`), in reverse order.
///
/// The folder is LiveMic's `XDG_RUNTIME_DIR` and `XDG_CONFIG_HOME`: its control socket is the
/// rig's own (suites run at once in scripts/e2e, and another suite's `lmclient` must never
/// answer this one's `ctl`), and no user preset is seen. docs/testing.md, "Adding a test".
///
/// Thread: the test's.
final class LiveRig {
  /// One JACK client of the test's: a generator (`signal`), a capture (`captureChannels`), or both.
  struct Client {
    var name: String
    var signal: TestSignal?
    var captureChannels = 0
    var midi = false
    /// How many seconds of each capture channel the client keeps (`TestClient`'s `seconds`).
    var seconds: Double = 12
    /// False: registered but not active when LiveMic starts (the test calls `activate()`).
    var activate = true
  }

  /// LiveMic's JACK client name, and the name `ctl -n` reaches it by.
  static let clientName = "lmclient"

  let folder: URL
  /// Whether the rig made `folder` (and removes it at deinit) or the test gave it.
  private let ownsFolder: Bool
  let server: JackServer
  /// The test's clients, in the order it gave them.
  let clients: [TestClient]
  let livemic: LiveMicProcess
  /// The real-time guard's counters, when the rig was made `guarded`.
  let counters: URL?
  /// What every `livemic` the rig runs gets: its private runtime folder.
  let environment: [String: String]
  /// Whether deinit expects LiveMic to stop with status 0 (false for a test that kills it).
  var expectsCleanExit = true

  /// Starts a server (`period` frames), the `clients`, then `livemic` with `-s SERVER -n
  /// lmclient` and the arguments `arguments` makes from the clients (their port names), and
  /// waits until it answers `status`. `guarded` preloads the project's real-time guard. `folder`:
  /// one the test made (`Paths.temporaryFolder`) to name files in on LiveMic's command line
  /// (recordings, events, presets) and read after `stop()`; the test removes it, not the rig.
  init(
    period: Int = JackServer.takePeriod, clients specs: [Client] = [], guarded: Bool = false,
    folder given: URL? = nil, environment extra: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation, _ arguments: ([TestClient]) -> [String] = { _ in [] }
  ) throws {
    folder = given ?? Paths.temporaryFolder("rig")
    ownsFolder = given == nil
    environment = ["XDG_RUNTIME_DIR": folder.path].merging(extra) { _, new in new }
    server = try JackServer(period: period)
    var made: [TestClient] = []
    for spec in specs {
      made.append(
        try TestClient(
          name: spec.name, server: server.name, signal: spec.signal, captureChannels: spec.captureChannels,
          seconds: spec.seconds, midi: spec.midi, activate: spec.activate))
    }
    clients = made
    counters = guarded ? folder.appendingPathComponent("rtguard.txt") : nil
    livemic = try LiveMicProcess(
      ["-s", server.name, "-n", Self.clientName] + arguments(made), guardOutput: counters,
      environment: environment)
    guard waitUntil(seconds: 15, { !livemic.process.isRunning || status() != nil }),
      livemic.process.isRunning
    else {
      throw HarnessError("livemic did not start: \(livemic.log)")
    }
  }

  /// Tears the rig down (once; deinit does it too, and removes the folder): LiveMic interrupted,
  /// its exit status checked unless `expectsCleanExit` is false, the clients closed, the server
  /// stopped. Call it from a `defer` right after making the rig: Swift may end an object's life
  /// after its last use, before the end of the scope.
  func stop(sourceLocation: SourceLocation = #_sourceLocation) {
    guard !stopped else { return }
    stopped = true
    let exit = livemic.interrupt()
    if expectsCleanExit {
      #expect(exit == 0, "livemic's exit: \(livemic.log)", sourceLocation: sourceLocation)
    }
    for client in clients { client.close() }
    server.stop()
  }
  private var stopped = false

  deinit {
    stop()
    if ownsFolder { try? FileManager.default.removeItem(at: folder) }
  }

  /// The client named `name`.
  func client(_ name: String) -> TestClient {
    guard let client = clients.first(where: { $0.name == name }) else {
      preconditionFailure("the rig has no client '\(name)'")
    }
    return client
  }

  /// Runs `livemic ctl -n lmclient WORDS` against this rig's LiveMic.
  @discardableResult
  func ctl(_ words: String...) throws -> (status: Int32, stdout: String, stderr: String) {
    try ctl(words)
  }

  /// Runs `livemic ctl -n lmclient WORDS` against this rig's LiveMic.
  @discardableResult
  func ctl(_ words: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    try runLiveMic(["ctl", "-n", Self.clientName] + words, environment: environment)
  }

  /// LiveMic's `status` answer as an object, nil when it does not answer.
  func status() -> [String: Any]? { Self.status(name: Self.clientName, environment: environment) }

  /// Returns once LiveMic has processed `seconds` of audio from now, by the cycles its `status`
  /// counts: a ramp it began (the start-quiet ramp, an unmute's) is over
  /// however slowly the machine runs the server, where a wall-clock sleep could end first.
  /// Records an issue if that takes longer than `timeoutSeconds`.
  func waitForAudio(
    seconds: Double = 1.3, timeoutSeconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    Self.waitForAudio(
      name: Self.clientName, environment: environment, seconds: seconds, timeoutSeconds: timeoutSeconds,
      log: { self.livemic.log }, sourceLocation: sourceLocation)
  }

  /// A witness of the capture client `capture` for takes (`retaking`): its generators' channels,
  /// and this rig's LiveMic's missed cycles.
  func witness(_ capture: TestClient, generators: [(channel: Int, signal: TestSignal)]) -> Witness {
    let environment = environment
    return Witness(
      capture: capture, generators: generators,
      missedCycles: { Witness.missedCycles(client: Self.clientName, environment: environment) })
  }

  /// Expects the real-time guard (the rig made `guarded`) to have counted nothing.
  func expectNothingCounted(sourceLocation: SourceLocation = #_sourceLocation) {
    guard let counters else {
      Issue.record("the rig runs without the real-time guard", sourceLocation: sourceLocation)
      return
    }
    RealtimeGuard.expectNothingCounted(counters, sourceLocation: sourceLocation)
  }
}
