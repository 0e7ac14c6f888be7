import DSP
import Foundation
import TestSupport
import Testing

@testable import LV2Host
@testable import LiveMicControl
@testable import LiveMicPresets

/// Processing modes resolved against the real installed plugins: x42's fil4 (x42-plugins) is
/// the installed plugin, `urn:livemic:test:not-installed` the one that is not. In the serialized
/// plugin suite: resolution reads lilv's world.
extension PluginTests {
  static let bogus = "urn:livemic:test:not-installed"

  func parse(_ chain: String) throws(PresetError) -> Preset {
    try Preset.parse(Data(#"{"name": "modes", "chain": [\#(chain)]}"#.utf8), path: "modes.json")
  }

  @Test("no mode, or mode builtin: the built-in unit runs, and the resolution says so")
  func builtinMode() throws {
    let preset = try parse(
      #"{"unit": "highpass", "params": {"freq_hz": 120}}, {"unit": "denoise", "mode": "builtin"}, {"unit": "eq"}"#
    )
    #expect(preset.chain.map(\.unit?.type) == ["highpass", "denoise", "eq"])
    #expect(preset.resolutions.map(\.id) == ["highpass", "denoise"])  // eq has no mode
    let hp = try #require(preset.resolution(of: "highpass"))
    #expect(hp.requested == .builtin && hp.effective == "builtin")
    #expect(hp.reason.contains("built-in"))
  }

  @Test(
    "the voice units default to automatic, the high-pass to builtin; without plugins the built-in units run")
  func defaultModes() throws {
    let preset = try parse(
      #"{"unit": "highpass"}, {"unit": "denoise"}, {"unit": "leveler"}, {"unit": "aec"}, {"unit": "denoise", "id": "d2", "plugins": ["\#(Installed.fil4)"]}"#
    )
    let modes = preset.resolutions.map { "\($0.id) \($0.requested.rawValue) \($0.effective)" }
    // fil4 is installed here, yet highpass keeps the built-in unit; Debian packages none of the
    // voice units' plugins, so denoise and leveler run built-in and aec WebRTC's; a list of the
    // entry's own is used by default.
    #expect(
      modes == [
        "highpass builtin builtin", "denoise automatic builtin", "leveler automatic builtin",
        "aec automatic webrtc", "d2 automatic \(Installed.fil4)",
      ], "\(modes)")
    // aec's automatic engine is WebRTC's canceller (EchoRoomTests: it cancels a music bed).
    let aec = try #require(preset.resolution(of: "aec"))
    #expect(aec.reason.contains("WebRTC's engine runs"), "\(aec.reason)")
    let denoise = try #require(preset.resolution(of: "denoise"))
    #expect(denoise.reason.contains("is not installed") && denoise.reason.contains("built-in unit runs"))
    #expect(preset.chain.prefix(4).map(\.unit?.type) == ["highpass", "denoise", "leveler", "webrtc-aec"])
  }

  @Test("plugin and automatic with the preferred plugin installed: it runs, with mapped parameters")
  func installedPlugin() throws {
    for mode in ["plugin", "automatic"] {
      let preset = try parse(
        #"{"unit": "highpass", "mode": "\#(mode)", "plugins": ["\#(Self.bogus)", "\#(Installed.fil4)"], "params": {"freq_hz": 120, "slope_db": 24}, "plugin_params": {"HPQ": 0.5}}"#
      )
      guard case .plugin(let d) = preset.chain[0] else {
        Issue.record("mode \(mode): expected an LV2 entry, got \(preset.chain[0])")
        continue
      }
      #expect(d.id == "highpass" && d.uri == Installed.fil4)
      #expect(d.values == ["HPfreq": 120, "HighPass": 1, "HPQ": 0.5])
      let r = try #require(preset.resolution(of: "highpass"))
      #expect(r.requested.rawValue == mode && r.effective == Installed.fil4)
      #expect(r.reason.contains("\(Self.bogus) is not installed"), "\(r.reason)")
      #expect(r.reason.contains("slope_db has no counterpart"), "\(r.reason)")
    }
    // It builds and filters: 40 Hz is cut, 1 kHz passes.
    let preset = try parse(#"{"unit": "highpass", "mode": "plugin", "params": {"freq_hz": 200}}"#)
    let built = try Installed.build(
      try preset.stages(applying: [ParameterOverride(key: "highpass.freq_hz", value: 300)]))
    #expect(Installed.value(built.chain, "highpass.HPfreq") == 300)
    func gain(_ hz: Double) -> Double {
      var l = (0..<48000).map { Float(0.5 * sin(2 * Double.pi * hz * Double($0) / 48000)) }
      var r = l
      Installed.process(built.chain, &l, &r)
      let tail = l[24000...].map { Double($0 * $0) }.reduce(0, +) / 24000
      return 10 * log10(tail / 0.125)
    }
    #expect(gain(40) < -20)
    #expect(abs(gain(2000) - 20 * log10(0.3)) < 1)  // the output volume's default 0.3
  }

  @Test("automatic without an installed plugin falls back to the built-in unit (aec: WebRTC's) and says why")
  func automaticFallsBack() throws {
    let preset = try parse(
      #"{"unit": "leveler", "mode": "automatic", "plugins": ["\#(Self.bogus)"]}, {"unit": "aec", "mode": "automatic"}"#
    )
    #expect(preset.chain.map(\.unit?.type) == ["leveler", "webrtc-aec"])
    let leveler = try #require(preset.resolution(of: "leveler"))
    #expect(leveler.requested == .automatic && leveler.effective == "builtin")
    #expect(
      leveler.reason.contains("\(Self.bogus) is not installed")
        && leveler.reason.contains("built-in unit runs"))
    let aec = try #require(preset.resolution(of: "aec"))
    #expect(aec.effective == "webrtc" && aec.reason.contains("no plugin is listed"), "\(aec.reason)")
  }

  @Test("plugin without an installed plugin is refused with one sentence naming the stage")
  func pluginRefused() {
    let chain = #"{"unit": "denoise", "mode": "plugin", "plugins": ["\#(Self.bogus)"]}"#
    #expect(throws: PresetError.self) { try parse(chain) }
    do {
      _ = try parse(chain)
    } catch {
      #expect(
        error.description
          == "preset 'modes.json', key 'chain[0].mode': stage 'denoise' asks for mode 'plugin' but none of its "
          + "plugins can be used (\(Self.bogus) is not installed); install one or use mode 'automatic'")
    }
  }

  @Test(
    "malformed mode keys are errors naming the key",
    arguments: [
      (
        #"{"unit": "denoise", "mode": "fast"}"#,
        "key 'chain[0].mode': expected \"builtin\", \"plugin\", \"automatic\" or \"webrtc\""
      ),
      (
        #"{"unit": "denoise", "plugins": "x"}"#,
        "key 'chain[0].plugins': expected an array of LV2 plugin URIs"
      ),
      (#"{"unit": "eq", "mode": "plugin"}"#, "key 'chain[0].mode': unit 'eq' has no processing modes"),
    ])
  func malformedModes(entry: String, message: String) {
    do {
      _ = try parse(entry)
      Issue.record("\(entry) parsed")
    } catch {
      #expect(error.description.contains(message), "\(error.description)")
    }
  }

  @Test("resolution through a given availability: cannot-host plugins are skipped with their reason")
  func cannotHost() throws {
    let stage = StageDescription(id: "hp", type: "highpass")
    let (entry, r) = try ProcessingModes.resolve(
      stage, request: ModeRequest(mode: .automatic, plugins: ["a", "b"]),
      availability: { $0 == "a" ? .cannotHost("it needs a UI") : .installed })
    #expect(entry.id == "hp" && r.effective == "b")
    #expect(r.reason.contains("a cannot be hosted: it needs a UI"))
  }
}

extension PluginTests {
  @Test(
    "plugins off (\"plugins\": false, --no-plugins): plugin and automatic run the built-in unit, and say why")
  func pluginsOff() throws {
    let entry = #"{"unit": "highpass", "mode": "plugin", "plugins": ["\#(Installed.fil4)"]}"#
    let fromPreset = try Preset.parse(
      Data(#"{"name": "off", "plugins": false, "chain": [\#(entry)]}"#.utf8), path: "off.json")
    #expect(fromPreset.chain.first?.unit?.type == "highpass", "\(fromPreset.chain)")
    let r = try #require(fromPreset.resolution(of: "highpass"))
    #expect(
      r.effective == "builtin" && r.reason.contains("plugins are off (\"plugins\": false in the preset)"),
      "\(r)")
    let fromOption = try Preset.parse(
      Data(#"{"name": "on", "chain": [\#(entry)]}"#.utf8), path: "on.json", pluginsOff: "--no-plugins")
    #expect(fromOption.resolution(of: "highpass")?.reason.contains("plugins are off (--no-plugins)") == true)
    #expect(throws: PresetError.self) {
      try Preset.parse(Data(#"{"name": "x", "plugins": "no", "chain": []}"#.utf8), path: "x.json")
    }
  }

  @Test("mode webrtc: the stage becomes its WebRTC unit, keeping the values that unit has")
  func webrtcMode() throws {
    let preset = try parse(
      #"{"unit": "denoise", "mode": "webrtc", "params": {"suppression_db": 12, "keep_held": 1}}"#)
    let unit = try #require(preset.chain.first?.unit)
    #expect(unit.type == "webrtc-denoise" && unit.id == "denoise" && unit.values == ["suppression_db": 12])
    let r = try #require(preset.resolution(of: "denoise"))
    #expect(r.effective == "webrtc" && r.reason.contains("keep_held has no counterpart"), "\(r)")
    #expect(throws: PresetError.self) { try parse(#"{"unit": "highpass", "mode": "webrtc"}"#) }
  }
}
