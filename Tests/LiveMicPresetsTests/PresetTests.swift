import DSP
import Foundation
import TestSupport
import Testing

@testable import LiveMicControl
@testable import LiveMicPresets

let packageRoot = Programs.packageRoot
let shipped = PresetLibrary(folders: [packageRoot.appendingPathComponent("presets").path])

@Suite("Presets")
struct PresetTests {
  @Test(
    "every shipped preset loads and builds",
    arguments: ["flat", "voice", "karaoke", "podcast", "stream", "hearing", "announce"])
  func shippedPresetLoads(name: String) throws {
    let preset = try shipped.load(name)
    #expect(preset.name == name)
    #expect(!preset.description.isEmpty)
    let chain = try ChainAssembly.build(preset.units, sampleRate: 48000)
    // denoise declares its speexdsp frames: 10 ms at 48 kHz.
    let denoised = ["voice", "stream", "hearing", "announce", "podcast"].contains(name)
    #expect(chain.latencyFrames == (denoised ? 480 : 0))
  }

  @Test("hearing and voice suppress feedback and noise before a limiter; stream levels and denoises")
  func issue7Presets() throws {
    func active(_ name: String) throws -> Set<String> {
      Set(try shipped.load(name).units.filter { !$0.bypassed }.map(\.type))
    }
    for name in ["hearing", "voice"] {
      #expect(try active(name).isSuperset(of: ["feedback", "denoise", "limiter"]), "\(name)")
    }
    #expect(try active("stream").isSuperset(of: ["denoise", "leveler", "limiter"]))
    #expect(try active("karaoke").isSuperset(of: ["echo", "reverb", "limiter"]))
    #expect(try shipped.load("hearing").units.first { $0.type == "limiter" }?.values["ceiling_db"] == -6)
    // announce: the music bed ducks under the voice.
    #expect(try shipped.load("announce").units.first { $0.type == "music" }?.values["duck"] == 1)
  }

  @Test("every shipped preset but flat ends with the limiter on, before the output volume")
  func limiterIsLast() throws {
    for (name, result) in shipped.all() where name != "flat" {
      let stages = try result.get().units
      let last = stages.last { $0.type != OutputVolume.typeName }
      #expect(last?.type == Limiter.typeName && last?.bypassed == false, "\(name)")
      #expect(stages.last?.type == OutputVolume.typeName, "\(name)")
    }
  }

  @Test("flat bypasses every unit at volume 1")
  func flatIsFlat() throws {
    let flat = try shipped.load("flat")
    for stage in flat.units where stage.type != OutputVolume.typeName {
      #expect(stage.bypassed, "\(stage.id)")
    }
    #expect(flat.volume == 1)
  }

  @Test("the default output volume is 0.3 unless a preset says otherwise")
  func defaultVolume() throws {
    let voice = try shipped.load("voice")
    #expect(voice.volume == nil)
    let chain = try ChainAssembly.build(voice.units, sampleRate: 48000)
    #expect(chain.targets.value(chain.parameter("output.volume")!.index) == 0.3)
    #expect(try shipped.load("hearing").volume == 0.2)
  }

  @Test("the user's folder wins over the shipped one; a path works too")
  func searchOrder() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lm-presets-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let mine = #"{"name": "voice", "description": "mine", "chain": [{"unit": "limiter"}]}"#
    try mine.write(to: folder.appendingPathComponent("voice.json"), atomically: true, encoding: .utf8)
    let library = PresetLibrary(folders: [folder.path] + shipped.folders)
    #expect(try library.load("voice").description == "mine")
    #expect(
      try library.load(packageRoot.appendingPathComponent("presets/voice.json").path).description != "mine")
  }

  /// Malformed files: each error names the file, the key and the reason, in one sentence.
  @Test(
    "malformed presets give the documented error",
    arguments: [
      ("{", "it is not valid JSON"),
      ("[]", "key '(top level)': expected a JSON object"),
      (#"{"chain": []}"#, "key 'name': expected a non-empty string"),
      (
        #"{"name": "x", "chain": [], "colour": 1}"#,
        "key 'colour': unknown key (allowed: chain, description, midi, name, plugins, route, volume)"
      ),
      (#"{"name": "x"}"#, "key 'chain': expected an array of stages"),
      (#"{"name": "x", "volume": 2, "chain": []}"#, "key 'volume': expected a number from 0 to 1"),
      (#"{"name": "x", "chain": [{"unit": "flanger"}]}"#, "key 'chain[0].unit': unknown unit 'flanger'"),
      (
        #"{"name": "x", "chain": [{"unit": "eq", "params": {"bass": 1}}]}"#,
        "key 'chain[0].params.bass': unit 'eq' has no parameter 'bass'"
      ),
      (
        #"{"name": "x", "chain": [{"unit": "eq", "params": {"bass_db": "loud"}}]}"#,
        "key 'chain[0].params.bass_db': expected a number"
      ),
      (
        #"{"name": "x", "chain": [{"unit": "eq", "params": {"bass_db": 40}}]}"#,
        "key 'chain[0].params.bass_db': 40 is outside the range -20 to 20"
      ),
      (
        #"{"name": "x", "chain": [{"unit": "eq", "bypass": "yes"}]}"#,
        "key 'chain[0].bypass': expected true or false"
      ),
      (
        #"{"name": "x", "chain": [{"unit": "eq"}, {"unit": "eq"}]}"#,
        "key 'chain[1].id': stage id 'eq' is used twice"
      ),
      (#"{"name": "x", "chain": [{"unit": "eq", "gain": 1}]}"#, "key 'chain[0].gain': unknown key"),
      (
        #"{"name": "x", "chain": [], "route": {"out": ["USB.*:playback_", "system:(playback"]}}"#,
        "key 'route.out': 'system:(playback' is not a port-name pattern (a POSIX extended regular expression:"
      ),
    ])
  func malformed(text: String, message: String) throws {
    do {
      _ = try Preset.parse(Data(text.utf8), path: "bad.json")
      Issue.record("parsed: \(text)")
    } catch {
      #expect(error.description.contains("preset 'bad.json'"), "\(error.description)")
      #expect(error.description.contains(message), "\(error.description)")
      #expect(!error.description.contains("\n"))
    }
  }

  @Test("a missing preset lists where it looked")
  func missing() {
    #expect(throws: PresetError.self) { try shipped.load("nope") }
    do { _ = try shipped.load("nope") } catch {
      #expect(error.description.hasPrefix("no preset named 'nope' (searched "))
    }
  }
}

@Suite("Overrides")
struct OverrideTests {
  @Test("KEY=VALUE parses numbers and on/off")
  func parsing() throws {
    #expect(
      try ParameterOverride(parsing: "eq.bass_db=-3.5") == ParameterOverride(key: "eq.bass_db", value: -3.5))
    #expect(try ParameterOverride(parsing: "echo.bypass=off").value == 0)
    #expect(try ParameterOverride(parsing: "echo.bypass=on").value == 1)
    #expect(throws: OverrideError.malformed("eq.bass_db")) { try ParameterOverride(parsing: "eq.bass_db") }
    #expect(throws: OverrideError.badValue(key: "eq.bass_db", value: "x")) {
      try ParameterOverride(parsing: "eq.bass_db=x")
    }
  }

  @Test("overrides become the initial values; unknown keys and ranges are errors")
  func applying() throws {
    let voice = try shipped.load("voice")
    let stages = try voice.stages(applying: [
      ParameterOverride(key: "eq.bass_db", value: 4), ParameterOverride(key: "echo.bypass", value: 0),
    ])
    #expect(stages.first { $0.id == "eq" }?.unit?.values["bass_db"] == 4)
    #expect(stages.first { $0.id == "echo" }?.unit?.bypassed == false)
    #expect(throws: OverrideError.self) {
      try voice.stages(applying: [ParameterOverride(key: "eq.nope", value: 1)])
    }
    #expect(throws: OverrideError.self) {
      try voice.stages(applying: [ParameterOverride(key: "flanger.rate", value: 1)])
    }
    #expect(throws: OverrideError.self) {
      try voice.stages(applying: [ParameterOverride(key: "bass_db", value: 1)])
    }
    #expect(throws: OverrideError.outOfRange(key: "output.volume", value: 2, range: 0...1)) {
      try voice.stages(applying: [ParameterOverride(key: "output.volume", value: 2)])
    }
  }
}
