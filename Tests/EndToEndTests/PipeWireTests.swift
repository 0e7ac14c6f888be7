import Foundation
import Testing

extension EndToEnd {
  /// LiveMic under PipeWire's JACK implementation: `pw-jack` puts PipeWire's libjack in front of
  /// jackd2's, and a private `pipewire` daemon (no session manager, no devices) drives the graph.
  @Suite(
    "PipeWire's JACK (pw-jack)", .serialized,
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: "/usr/bin/pw-jack")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/pipewire"),
      "PipeWire's pw-jack is not installed (Debian: pipewire pipewire-jack; scripts/setup --test installs them)"
    ))
  struct PipeWireTests {
    /// A private `pipewire` daemon in its own runtime folder, and the environment that reaches
    /// it; stopped by `stop`.
    struct Daemon {
      let runtime: URL
      let env: [String: String]
      let process: Process

      init(_ label: String) throws {
        runtime = Paths.temporaryFolder(label)
        chmod(runtime.path, 0o700)
        var env = Paths.childEnvironment()
        env["XDG_RUNTIME_DIR"] = runtime.path
        env["PIPEWIRE_RUNTIME_DIR"] = runtime.path  // it takes precedence over XDG_RUNTIME_DIR
        env["JACK_NO_START_SERVER"] = "1"
        self.env = env
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/pipewire")
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let socket = runtime.appendingPathComponent("pipewire-0").path
        guard waitUntil(seconds: 10, { FileManager.default.fileExists(atPath: socket) }) else {
          stop()
          throw HarnessError("pipewire did not start in this environment")
        }
      }

      func stop() {
        if process.isRunning {
          kill(process.processIdentifier, SIGTERM)
          process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: runtime)
      }

      /// A `livemic` under pw-jack on this daemon.
      struct LiveMicRun {
        let process: Process
        let log: URL
        /// Its log so far.
        var text: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        /// Kills it (SIGKILL) if it still runs: the end of a test that failed before stopping it.
        func killIfRunning() {
          guard process.isRunning else { return }
          kill(process.processIdentifier, SIGKILL)
          process.waitUntilExit()
        }
      }

      /// Starts `livemic ARGUMENTS` under pw-jack on this daemon, its log into `log`, and waits
      /// (10 s) until it has started.
      func livemic(_ arguments: [String], log: URL) throws -> LiveMicRun {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/pw-jack")
        process.arguments = [Paths.livemic.path] + arguments
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let run = LiveMicRun(process: process, log: log)
        guard waitUntil(seconds: 10, { run.text.contains("latency capture-to-playback") }) else {
          run.killIfRunning()
          throw HarnessError("livemic did not start under pw-jack: \(run.text)")
        }
        return run
      }

      /// The cycles a running LiveMic named `name` reports (`ctl status`), -1 when it does not.
      func cycles(_ name: String) throws -> Int {
        let status = try runLiveMic(["ctl", "-n", name, "--json", "status"], environment: env)
        return (jsonObject(status.stdout)["cycles"] as? NSNumber)?.intValue ?? -1
      }
    }

    @Test("livemic runs under pw-jack: ports, processing, the control socket and a clean exit")
    func runsUnderPwJack() throws {
      let daemon = try Daemon("pw")
      defer { daemon.stop() }
      let (runtime, env) = (daemon.runtime, daemon.env)
      let log = runtime.appendingPathComponent("livemic.txt")
      let run = try daemon.livemic(["-n", "lmpw", "-p", "flat", "--no-connect"], log: log)
      defer { run.killIfRunning() }
      let (livemic, text) = (run.process, { run.text })
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", "lmpw", "--json"] + words, environment: env)
      }
      let cycles = { try daemon.cycles("lmpw") }
      let before = try cycles()
      usleep(1_000_000)
      let after = try cycles()
      #expect(before >= 0 && after > before, "cycles \(before) → \(after): \(text())")
      #expect(try ctl(["set", "output.volume", "0.5"]).status == 0)
      kill(livemic.processIdentifier, SIGINT)
      #expect(waitUntil(seconds: 10) { !livemic.isRunning })
      livemic.waitUntilExit()
      #expect(livemic.terminationStatus == 0, "\(text())")
      #expect(text().contains("stopped after"), "\(text())")
    }

    /// PipeWire 0.3.65's libjack calls the shutdown callback for any error its daemon reports
    /// against the client's core object (an "unknown resource" when a port it was binding
    /// vanished: under load, another client closing). `Tests/Support/pipewire/client-error.c`
    /// sends LiveMic's client that error: LiveMic must go on without reconnecting (before the
    /// fix it reconnected, 28 ms of audio lost and every route re-made). A real loss with the
    /// daemon still there, LiveMic's client destroyed (`pw-cli destroy`), still reconnects.
    @Test(
      "an error PipeWire's libjack reports as a shutdown: LiveMic goes on; its client destroyed: it reconnects"
    )
    func coreErrorIsNoShutdown() throws {
      let daemon = try Daemon("pw-error")
      defer { daemon.stop() }
      let tool = daemon.runtime.appendingPathComponent("client-error")
      let flags = try #require(
        try runTool("pkg-config", ["--cflags", "--libs", "libpipewire-0.3"]),
        "libpipewire-0.3-dev is missing (scripts/setup --test installs it)")
      let source = Paths.root.appendingPathComponent("Tests/Support/pipewire/client-error.c").path
      let libraries = flags.split(whereSeparator: \.isWhitespace).map(String.init)
      let built = try runTool("cc", ["-O1", "-Wall", "-o", tool.path, source] + libraries)
      try #require(built != nil, "cc failed to build client-error")
      let log = daemon.runtime.appendingPathComponent("livemic.txt")
      let run = try daemon.livemic(["-n", "lmpwerr", "-p", "flat", "--no-connect"], log: log)
      defer { run.killIfRunning() }
      let (livemic, text) = (run.process, { run.text })

      let injected = Process()
      injected.executableURL = tool
      injected.arguments = ["lmpwerr"]
      injected.environment = daemon.env
      try injected.run()
      injected.waitUntilExit()
      try #require(injected.terminationStatus == 0, "client-error found no client 'lmpwerr'")
      #expect(waitUntil(seconds: 5) { text().contains("LiveMic goes on") }, "\(text())")
      let before = try daemon.cycles("lmpwerr")
      usleep(500_000)
      let after = try daemon.cycles("lmpwerr")
      #expect(before > 0 && after > before, "cycles \(before) → \(after): \(text())")
      #expect(!text().contains("went away"), "\(text())")

      // The daemon destroys LiveMic's client: a loss, though the daemon is still there.
      let clients = try #require(
        try runTool(
          "env",
          [
            "XDG_RUNTIME_DIR=\(daemon.runtime.path)", "PIPEWIRE_RUNTIME_DIR=\(daemon.runtime.path)", "pw-cli",
            "ls", "Client",
          ]))
      var id: String?
      var current: String?
      for line in clients.split(separator: "\n") {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
        if words.first == "id", words.count > 1 { current = String(words[1]) }
        if line.contains("pipewire.sec.pid = \"\(livemic.processIdentifier)\"") { id = current }
      }
      let clientID = try #require(id, "no PipeWire client of LiveMic's process: \(clients)")
      _ = try runTool(
        "env",
        [
          "XDG_RUNTIME_DIR=\(daemon.runtime.path)", "PIPEWIRE_RUNTIME_DIR=\(daemon.runtime.path)", "pw-cli",
          "destroy", clientID,
        ])
      #expect(waitUntil(seconds: 10) { text().contains("reconnected to") }, "\(text())")
      let reconnected = try daemon.cycles("lmpwerr")
      usleep(500_000)
      #expect(try daemon.cycles("lmpwerr") > reconnected, "\(text())")
      kill(livemic.processIdentifier, SIGINT)
      #expect(waitUntil(seconds: 10) { !livemic.isRunning })
      livemic.waitUntilExit()
      #expect(livemic.terminationStatus == 0, "\(text())")
    }
  }
}
