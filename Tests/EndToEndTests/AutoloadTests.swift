import Foundation
import Testing

extension EndToEnd {
  /// Presets that follow the output device: the route's target picks the preset.
  @Suite("Autoload: a preset per output device", .serialized)
  struct AutoloadTests {
    static func presetEvents(_ file: URL) -> [(name: String, reason: String)] {
      EventStreamTests.events(file).filter { $0["event"] as? String == "preset-loaded" }.map {
        ($0["name"] as? String ?? "", $0["reason"] as? String ?? "")
      }
    }

    static func ctl(_ words: [String], _ environment: [String: String]) throws -> [String: Any] {
      jsonObject(try runLiveMic(["ctl", "-n", "lmauto", "--json"] + words, environment: environment).stdout)
    }

    @Test("headphones get one preset, the hall's speakers another; a lost target's mute is kept")
    func followsTheOutput() throws {
      let folder = Paths.temporaryFolder("autoload")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let events = folder.appendingPathComponent("events.jsonl")
      let rules = folder.appendingPathComponent("autoload.json")
      try #"""
      {"autoload": [{"target": "^lmphones:", "preset": "podcast"}, {"target": "^lmhall:", "preset": "hearing"}],
       "fallback": "voice"}
      """#.write(to: rules, atomically: true, encoding: .utf8)
      let server = try JackServer(period: 64)
      defer { server.stop() }
      let generator = try TestClient(
        name: "lmgen", server: server.name, signal: .sine(frequencyHz: 440, amplitude: 0.3),
        captureChannels: 0)
      defer { generator.close() }
      let hall = try TestClient(name: "lmhall", server: server.name, signal: nil, captureChannels: 2)
      defer { hall.close() }
      var phones: TestClient? = try TestClient(
        name: "lmphones", server: server.name, signal: nil, captureChannels: 2)
      let livemic = try LiveMicProcess(
        [
          "-s", server.name, "-n", "lmauto", "-p", "flat", "--connect-in", "lmgen:out", "--route-out",
          "lmphones:in_",
          "--route-out", "lmhall:in_", "--autoload", rules.path, "--events", events.path,
        ], environment: env)
      #expect(
        waitUntil(seconds: 10) { Self.presetEvents(events).contains { $0 == ("podcast", "autoload") } },
        "the headphones' preset was not loaded: \(livemic.log)")
      #expect(try Self.ctl(["status"], env)["preset"] as? String == "podcast")

      // The headphones go away: the route falls back to the hall (muted, the default policy)
      // and the hall's preset is loaded, still muted.
      phones?.close()
      phones = nil
      #expect(
        waitUntil(seconds: 10) { Self.presetEvents(events).contains { $0 == ("hearing", "autoload") } },
        "the hall's preset was not loaded: \(livemic.log)")
      let status = try Self.ctl(["status"], env)
      #expect(status["preset"] as? String == "hearing", "\(status)")
      #expect(status["muted"] as? Bool == true, "the route loss's mute must be kept: \(status)")
      #expect(livemic.log.contains("autoload: the output goes to lmhall:in_1"), "\(livemic.log)")
      #expect(livemic.interrupt() == 0)
    }

    @Test("a broken autoload file is refused at start in one sentence")
    func brokenFileIsRefused() throws {
      let folder = Paths.temporaryFolder("autoloadbad")
      defer { try? FileManager.default.removeItem(at: folder) }
      let rules = folder.appendingPathComponent("autoload.json")
      try #"{"autoload": [{"target": "(", "preset": "voice"}]}"#.write(
        to: rules, atomically: true, encoding: .utf8)
      let server = try JackServer(period: 64)
      defer { server.stop() }
      let result = try runLiveMic([
        "-s", server.name, "-n", "lmautobad", "--no-connect", "--autoload", rules.path,
      ])
      #expect(result.status == 1, "\(result.stderr)")
      #expect(
        result.stderr.contains(
          "the autoload file '\(rules.path)' cannot be used: autoload[0].target '(' is not a regular expression"
        ), "\(result.stderr)")
    }
  }
}
