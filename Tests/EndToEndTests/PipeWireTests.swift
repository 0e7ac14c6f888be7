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
    @Test("livemic runs under pw-jack: ports, processing, the control socket and a clean exit")
    func runsUnderPwJack() throws {
      let runtime = Paths.temporaryFolder("pw")
      defer { try? FileManager.default.removeItem(at: runtime) }
      chmod(runtime.path, 0o700)
      var env = Paths.childEnvironment()
      env["XDG_RUNTIME_DIR"] = runtime.path
      env["PIPEWIRE_RUNTIME_DIR"] = runtime.path  // it takes precedence over XDG_RUNTIME_DIR
      env["JACK_NO_START_SERVER"] = "1"
      let daemon = Process()
      daemon.executableURL = URL(fileURLWithPath: "/usr/bin/pipewire")
      daemon.environment = env
      daemon.standardOutput = FileHandle.nullDevice
      daemon.standardError = FileHandle.nullDevice
      try daemon.run()
      defer {
        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()
      }
      let socket = runtime.appendingPathComponent("pipewire-0").path
      try #require(
        waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: socket) },
        "pipewire did not start in this environment")

      let log = runtime.appendingPathComponent("livemic.txt")
      _ = FileManager.default.createFile(atPath: log.path, contents: nil)
      let livemic = Process()
      livemic.executableURL = URL(fileURLWithPath: "/usr/bin/pw-jack")
      livemic.arguments = [Paths.livemic.path, "-n", "lmpw", "-p", "flat", "--no-connect"]
      livemic.environment = env
      livemic.standardOutput = FileHandle.nullDevice
      livemic.standardError = try FileHandle(forWritingTo: log)
      try livemic.run()
      defer {
        if livemic.isRunning {
          kill(livemic.processIdentifier, SIGKILL)
          livemic.waitUntilExit()
        }
      }
      let text = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
      #expect(waitUntil(seconds: 10) { text().contains("latency capture-to-playback") }, "\(text())")
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", "lmpw", "--json"] + words, environment: env)
      }
      let cycles = { () throws -> Int in
        (jsonObject(try ctl(["status"]).stdout)["cycles"] as? NSNumber)?.intValue ?? -1
      }
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
  }
}
