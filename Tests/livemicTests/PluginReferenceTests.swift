import Foundation
import TestSupport
import Testing

@testable import LV2Host
@testable import LiveMicPresets
@testable import livemic

/// `livemic plugins` and `livemic plugins show`, with real plugins from Debian packages.
/// Serialized: lilv's world is used from one thread at a time.
@Suite("Plugin reference", .serialized)
struct PluginReferenceTests {
  let world = ChainBuilder.world

  @Test("'livemic plugins' lists installed plugins as text and as JSON with every key")
  func listing() throws {
    let text = PluginReference.list(filter: "eg-amp", json: false)
    #expect(text == "\(Installed.amp)\n    Simple Amplifier [Amplifier Plugin, audio 1→1]\n")
    #expect(
      PluginReference.list(filter: "no-such-plugin-x", json: false)
        == "no installed LV2 plugin matches 'no-such-plugin-x'\n")
    let json = PluginReference.list(filter: nil, json: true)
    let rows = try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
    #expect(rows.count == world.allPlugins().count && rows.count > 100)
    let keys: Set = ["uri", "name", "className", "audioInputs", "audioOutputs", "canHost", "reason"]
    for row in rows { #expect(Set(row.keys) == keys, "\(row)") }
    let amp = try #require(rows.first { $0["uri"] as? String == Installed.amp })
    #expect(amp["canHost"] as? Bool == true && amp["reason"] is NSNull)
    #expect(amp["audioInputs"] as? Int == 1 && amp["className"] as? String == "Amplifier Plugin")
    let refused = try #require(rows.first { $0["uri"] as? String == Installed.noAudio })
    #expect(refused["canHost"] as? Bool == false)
    #expect((refused["reason"] as? String)?.hasPrefix("it has no audio ports") == true)
  }

  @Test("'livemic plugins show' prints ports with ranges, latency, features; unknown URIs are errors")
  func show() throws {
    let amp = try PluginReference.show(uri: Installed.amp, json: false)
    #expect(amp.contains(#"0 gain (control in) "Gain" range -90 to 24, default 0 dB"#), "\(amp)")
    #expect(
      amp.contains("audio:    1 in, 1 out (runs as two instances on the stereo chain, one on a mono input)"))
    let dpl = try PluginReference.show(uri: Installed.dpl, json: false)
    #expect(dpl.contains("latency:  reported on port 8 (latency)"), "\(dpl)")
    #expect(dpl.contains("[integer, reports latency]"))
    let detune = try PluginReference.show(uri: Installed.detune, json: false)
    #expect(detune.contains("Out Of Tune  <http://drobilla.net/plugins/mda/presets#Detune-out-of-tune>"))
    #expect(throws: PluginError.unknownURI("http://example.org/nope")) {
      try PluginReference.show(uri: "http://example.org/nope", json: false)
    }
    #expect(
      PluginError.unknownURI("x").description
        == "no LV2 plugin with URI 'x' is installed ('livemic plugins' lists them)")
  }
}
