import Foundation
import TestSupport
import Testing

/// `livemic plugins` and `livemic plugins show`, run as the release binary.
extension EndToEnd {
  @Suite("Command line: plugins")
  struct PluginCommandLineTests {

    @Test("'livemic plugins' lists eg-amp with its name, class and audio layout; FILTER narrows")
    func list() throws {
      let all = try runLiveMic(["plugins"])
      #expect(all.status == 0 && all.stderr.isEmpty)
      #expect(all.stdout.contains("\(Installed.amp)\n    Simple Amplifier [Amplifier Plugin, audio 1→1]\n"))
      #expect(all.stdout.contains(" — cannot host: it has no audio ports (a MIDI or control utility)"))
      let filtered = try runLiveMic(["plugins", "amplifier"])
      #expect(filtered.stdout.contains(Installed.amp) && !filtered.stdout.contains("dpl#stereo"))
      let none = try runLiveMic(["plugins", "no-such-plugin-x"])
      #expect(none.status == 0 && none.stdout == "no installed LV2 plugin matches 'no-such-plugin-x'\n")
    }

    @Test("'livemic plugins --json' is a JSON array with the same keys in every row")
    func listJSON() throws {
      let result = try runLiveMic(["plugins", "--json"])
      #expect(result.status == 0)
      let rows = try #require(
        JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stdout)")
      let keys: Set = ["uri", "name", "className", "audioInputs", "audioOutputs", "canHost", "reason"]
      #expect(rows.allSatisfy { Set($0.keys) == keys })
      let amp = try #require(rows.first { $0["uri"] as? String == Installed.amp })
      #expect(
        amp["name"] as? String == "Simple Amplifier" && amp["className"] as? String == "Amplifier Plugin")
      #expect(amp["audioInputs"] as? Int == 1 && amp["audioOutputs"] as? Int == 1)
      #expect(amp["canHost"] as? Bool == true && amp["reason"] is NSNull)
      #expect(rows.contains { $0["canHost"] as? Bool == false && $0["reason"] is String })
    }

    @Test("'livemic plugins show' prints the gain port with its range; --json the whole description")
    func show() throws {
      let text = try runLiveMic(["plugins", "show", Installed.amp])
      #expect(text.status == 0)
      #expect(text.stdout.hasPrefix("Simple Amplifier\n  URI:      \(Installed.amp)\n"), "\(text.stdout)")
      #expect(text.stdout.contains(#"    0 gain (control in) "Gain" range -90 to 24, default 0 dB"#))
      #expect(text.stdout.contains("  hostable: yes\n"))
      let json = try runLiveMic(["plugins", "show", "--json", Installed.amp])
      let object = try #require(
        JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
      let ports = try #require(object["ports"] as? [[String: Any]])
      #expect(ports.first?["symbol"] as? String == "gain" && ports.first?["minimum"] as? Double == -90)
    }

    @Test("an unknown URI exits 1 with one sentence; a missing URI is a usage error (2)")
    func errors() throws {
      let unknown = try runLiveMic(["plugins", "show", "http://example.org/nope"])
      #expect(unknown.status == 1 && unknown.stdout.isEmpty)
      #expect(
        unknown.stderr
          == "livemic: error: no LV2 plugin with URI 'http://example.org/nope' is installed "
          + "('livemic plugins' lists them)\n")
      let missing = try runLiveMic(["plugins", "show"])
      #expect(missing.status == 2 && missing.stderr.contains("use 'livemic plugins show URI'"))
      let bogus = try runLiveMic(["plugins", "--bogus"])
      #expect(bogus.status == 2 && bogus.stderr.contains("unknown option '--bogus' for 'livemic plugins'"))
    }

    @Test("a plugin with an unmet required feature is listed as not hostable, with the feature")
    func unmetFeature() throws {
      let folder = Paths.temporaryFolder("lv2cli")
      defer { try? FileManager.default.removeItem(at: folder) }
      let uri = "http://example.org/livemic-test/needs-unsupported"
      let feature = "http://example.org/ns/unsupported-feature"
      try LV2Tests.writeBundle(in: folder, uri: uri, requiredFeature: feature)
      let environment = ["LV2_PATH": folder.path + ":/usr/lib/lv2"]
      let reason = "it requires the feature \(feature), which LiveMic does not provide"
      let show = try runLiveMic(["plugins", "show", uri], environment: environment)
      #expect(show.status == 0 && show.stdout.contains("  hostable: no: \(reason)\n"), "\(show.stdout)")
      let list = try runLiveMic(["plugins", "needs-unsupported"], environment: environment)
      #expect(list.stdout.hasPrefix("\(uri)\n    LiveMic test plugin with an unmet feature ["))
      #expect(list.stdout.hasSuffix(" — cannot host: \(reason)\n"), "\(list.stdout)")
    }

    @Test("--help documents --plugin and the plugins command")
    func help() throws {
      let help = try runLiveMic(["--help"])
      #expect(
        help.stdout.contains("--plugin URI") && help.stdout.contains("livemic plugins [--json] [FILTER]"))
      let plugins = try runLiveMic(["plugins", "--help"])
      #expect(plugins.status == 0 && plugins.stdout.contains("USAGE: livemic plugins [--json] [FILTER]"))
    }
  }
}
