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
      jsonObject(
        try runLiveMic(["ctl", "-n", LiveRig.clientName, "--json"] + words, environment: environment).stdout)
    }

    @Test("headphones get one preset, the hall's speakers another; a lost target's mute is kept")
    func followsTheOutput() throws {
      // The rules and the events file are named on LiveMic's command line, before the rig exists.
      let folder = Paths.temporaryFolder("autoload")
      defer { try? FileManager.default.removeItem(at: folder) }
      let events = folder.appendingPathComponent("events.jsonl")
      let rules = folder.appendingPathComponent("autoload.json")
      try #"""
      {"autoload": [{"target": "^lmphones:", "preset": "podcast"}, {"target": "^lmhall:", "preset": "hearing"}],
       "fallback": "voice"}
      """#.write(to: rules, atomically: true, encoding: .utf8)
      let rig = try LiveRig(
        period: 64,
        clients: [
          .init(name: "lmgen", signal: .sine(frequencyHz: 440, amplitude: 0.3)),
          .init(name: "lmhall", captureChannels: 2), .init(name: "lmphones", captureChannels: 2),
        ]
      ) { _ in
        [
          "-p", "flat", "--connect-in", "lmgen:out", "--route-out", "lmphones:in_", "--route-out",
          "lmhall:in_",
          "--autoload", rules.path, "--events", events.path,
        ]
      }
      defer { rig.stop() }
      let (env, livemic) = (rig.environment, rig.livemic)
      #expect(
        waitUntil(seconds: 10) { Self.presetEvents(events).contains { $0 == ("podcast", "autoload") } },
        "the headphones' preset was not loaded: \(livemic.log)")
      #expect(try Self.ctl(["status"], env)["preset"] as? String == "podcast")

      // The headphones go away: the route falls back to the hall (muted, the default policy)
      // and the hall's preset is loaded, still muted.
      rig.client("lmphones").close()
      #expect(
        waitUntil(seconds: 10) { Self.presetEvents(events).contains { $0 == ("hearing", "autoload") } },
        "the hall's preset was not loaded: \(livemic.log)")
      let status = try Self.ctl(["status"], env)
      #expect(status["preset"] as? String == "hearing", "\(status)")
      #expect(status["muted"] as? Bool == true, "the route loss's mute must be kept: \(status)")
      #expect(livemic.log.contains("autoload: the output goes to lmhall:in_1"), "\(livemic.log)")
    }

    @Test("a broken autoload file is refused at start in one sentence")
    func brokenFileIsRefused() throws {
      let folder = Paths.temporaryFolder("autoloadbad")
      defer { try? FileManager.default.removeItem(at: folder) }
      let rules = folder.appendingPathComponent("autoload.json")
      try #"{"autoload": [{"target": "(", "preset": "voice"}]}"#.write(
        to: rules, atomically: true, encoding: .utf8)
      // Refused before LiveMic opens its client: no LiveRig (it starts a LiveMic), just a server.
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
