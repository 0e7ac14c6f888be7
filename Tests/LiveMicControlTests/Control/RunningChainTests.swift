import DSP
import Foundation
import LV2Host
import LiveMicPresets
import TestSupport
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The running chain on its own: built offline, no session, no server.
@Suite struct RunningChainTests {
  static func settings(_ rate: Double) -> HostSettings {
    HostSettings(sampleRate: rate, maxBlockFrames: 256, nominalBlockFrames: 256, fixedBlocks: true)
  }

  /// The `voice` preset's chain at `rate`, with the command line's `midi` mappings.
  static func running(_ rate: Double = 48000, midi: [MidiMapping] = []) throws -> RunningChain {
    var run = RunOptions()
    run.preset = "voice"
    let (preset, entries) = try LiveSession.stages(for: run)
    let built = try ChainBuilder.build(entries, settings: settings(rate))
    return RunningChain(built, entries: entries, preset: preset, midi: midi)
  }

  @Test("A new sample rate builds the chain again with every value the user set")
  func repreparingKeepsValues() throws {
    let running = try Self.running()
    #expect(running.chain.set("output.volume", 0.7) != nil)
    let before = running.chain
    let skipped = try running.reprepare(settings: Self.settings(44100))
    #expect(skipped.isEmpty)
    #expect(running.chain !== before)
    #expect(running.chain.sampleRate == 44100)
    let volume = try #require(running.chain.parameter("output.volume"))
    #expect(abs(running.chain.targets.value(volume.index) - 0.7) < 1e-6)
    #expect(running.presetName == "voice")
  }

  @Test("ctl mode: a stage resolved again in another mode, the other values kept; refusals in one sentence")
  func switchesOneStage() throws {
    let running = try Self.running()
    let fil4 = Installed.fil4
    let installed: (String) -> PluginAvailability = { $0 == fil4 ? .installed : .notInstalled }
    #expect(running.chain.set("eq.bass_db", 5) != nil)
    #expect(running.chain.set("denoise.bypass", 1) != nil)
    // denoise as WebRTC's: the stage's bypass (a shared name) and every other value carry over.
    let (entries, resolution) = try running.entries(
      switching: "denoise", to: .webrtc, availability: installed)
    #expect(resolution.effective == "webrtc" && resolution.requested == .webrtc)
    #expect(entries.map(\.id) == running.entries.map(\.id))
    #expect(entries.first { $0.id == "denoise" }?.unit?.type == "webrtc-denoise")
    let built = try ChainBuilder.build(entries, settings: Self.settings(48000))
    running.carryValues(to: built.chain)
    running.adoptMode(built, entries: entries, resolution: resolution)
    let value = { (key: String) in running.chain.parameter(key).map { running.chain.targets.value($0.index) }
    }
    #expect(value("eq.bass_db") == 5 && value("denoise.bypass") == 1)
    #expect(running.modes.first { $0.id == "denoise" }?.effective == "webrtc")
    #expect(running.chain.latencyFrames > 1000, "WebRTC's frames are declared")
    // And back: the preset's entry is what is resolved again, not the WebRTC unit.
    let (back, builtin) = try running.entries(switching: "denoise", to: .builtin, availability: installed)
    #expect(builtin.effective == "builtin" && back.first { $0.id == "denoise" }?.unit?.type == "denoise")
    // Refused: a stage that is not there, one without modes, a plugin that is not installed.
    #expect(throws: ModeError.noStage(id: "nosuch")) {
      try running.entries(switching: "nosuch", to: .builtin, availability: installed)
    }
    #expect(throws: ModeError.modesNotSupported(unit: "eq")) {
      try running.entries(switching: "eq", to: .plugin, availability: installed)
    }
    do {
      _ = try running.entries(switching: "denoise", to: .plugin, availability: installed)
      Issue.record("mode plugin without an installed plugin was accepted")
    } catch {
      #expect(error.description.hasPrefix("stage 'denoise' asks for mode 'plugin' but none of its plugins"))
    }
  }

  @Test("MIDI mappings bind to the chain's parameters; one to a missing key is refused in one sentence")
  func bindsMidi() throws {
    let running = try Self.running(
      midi: [
        MidiMapping(cc: 7, channel: nil, key: "output.volume"), MidiMapping(cc: 8, channel: 1, key: "nope.x"),
      ])
    let map = MidiMap()
    let refused = running.bind(map)
    #expect(refused.count == 1)
    #expect(refused.first?.contains("'nope.x'") == true, "\(refused)")
    let volume = try #require(running.chain.parameter("output.volume"))
    // CC 7 at 127 on channel 1: the volume's maximum.
    map.apply(
      status: 0xB0, 7, 127, targets: running.chain.targets, count: running.chain.parameterCount)
    #expect(abs(running.chain.targets.value(volume.index) - volume.spec.maximum) < 1e-6)
  }

  @Test("A learned mapping replaces the controller's earlier one")
  func learnReplaces() throws {
    let running = try Self.running(midi: [MidiMapping(cc: 7, channel: nil, key: "output.volume")])
    running.learn(cc: 7, channel: 0, key: "input.gain_db")
    #expect(running.midiMappings.filter { $0.cc == 7 }.map(\.key) == ["input.gain_db"])
    #expect(running.midiMappings.last?.channel == 1)
  }

  @Test("--watch sees a preset file's change once")
  func presetFileChangesOnce() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lmrun-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("mine.json")
    try #"{"name": "mine", "chain": [{"unit": "input"}, {"unit": "output"}]}"#.write(
      to: file, atomically: true, encoding: .utf8)
    var run = RunOptions()
    run.preset = file.path
    let (preset, entries) = try LiveSession.stages(for: run)
    let running = RunningChain(
      try ChainBuilder.build(entries, settings: Self.settings(48000)), entries: entries, preset: preset,
      midi: [])
    #expect(!running.presetFileChanged())
    try FileManager.default.setAttributes(
      [.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: file.path)
    #expect(running.presetFileChanged())
    #expect(!running.presetFileChanged())
  }
}

/// The supervisor's minute of xrun totals.
@Suite struct XrunHistoryTests {
  @Test("Counts the xruns of the last minute and forgets older samples")
  func lastMinute() {
    var history = XrunHistory()
    #expect(history.lastMinute(total: 5) == 0)
    let start = DispatchTime.now().uptimeNanoseconds
    history.record(10, at: DispatchTime(uptimeNanoseconds: start))
    history.record(12, at: DispatchTime(uptimeNanoseconds: start + 30_000_000_000))
    #expect(history.lastMinute(total: 15) == 5)
    history.record(20, at: DispatchTime(uptimeNanoseconds: start + 61_000_000_000))
    #expect(history.oldestTotal == 12)
    #expect(history.lastMinute(total: 20) == 8)
    history.removeAll()
    #expect(history.oldestTotal == nil)
  }
}
