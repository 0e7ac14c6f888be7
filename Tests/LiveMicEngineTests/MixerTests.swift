import DSP
import Foundation
import Testing

@testable import LiveMicEngine

/// The music bed (mixed after the chain, ducked under the voice) and the monitor mix, through
/// whole cycles.
@Suite struct MixerTests {
  typealias E = Engine

  static func gain(_ db: Float) -> Float { DSPMath.gain(decibels: db) }

  /// A state whose chain multiplies by `gain` and has a `music` and a `monitor` stage.
  static func state(
    gain: Float = 1, music: [String: Float] = [:], monitor: [String: Float]? = nil
  ) -> ProcessState {
    var stages = [StageDescription(id: "music", type: "music", values: music)]
    if let monitor { stages.append(StageDescription(id: "monitor", type: "monitor", values: monitor)) }
    return ProcessState(chain: E.chain(gain: gain, stages), sampleRate: E.sampleRate)
  }

  /// Runs `seconds` of cycles of 256 frames.
  static func run(_ state: ProcessState, _ io: FakePorts, seconds: Double) {
    for _ in 0..<Int(seconds * E.sampleRate / 256) { io.run(state, frames: 256) }
  }

  @Test("The music is added to the processed voice at its volume, exactly once settled")
  func musicVolume() {
    let state = Self.state(gain: 0.5, music: ["volume_db": -6])
    let io = FakePorts()
    io.music = true
    io.input(left: 0.2, right: 0.2)
    io.musicInput(left: 0.5, right: -0.5)
    E.openRamp(state, io)
    io.run(state, frames: 256)
    let out = io.output(frames: 256)
    #expect(out.left.allSatisfy { $0 == 0.1 + 0.5 * Self.gain(-6) })
    #expect(out.right.allSatisfy { $0 == 0.1 - 0.5 * Self.gain(-6) })
    #expect(state.music.duckDecibels == 0, "ducking is off by default")
  }

  @Test("Without a music stage the music plays at the default volume; at -60 dB it is off")
  func musicDefaultsAndOff() {
    let state = ProcessState(chain: E.chain(gain: 0), sampleRate: E.sampleRate)
    let io = FakePorts()
    io.music = true
    io.musicInput(left: 1, right: 1)
    E.openRamp(state, io)
    let defaultDb = MusicBed.parameters[0].defaultValue
    #expect(
      io.output(frames: 256).left.allSatisfy { abs($0 - Self.gain(defaultDb)) < 1e-6 },
      "\(io.output(frames: 4).left) vs \(Self.gain(defaultDb))")
    let off = Self.state(gain: 0, music: ["volume_db": -60])
    E.openRamp(off, io)
    #expect(io.output(frames: 256).left.allSatisfy { $0 == 0 })
  }

  @Test("Ducking dips the music by its depth while the voice is present, back after hold and release")
  func ducking() {
    let settings: [String: Float] = [
      "volume_db": 0, "duck": 1, "duck_threshold_db": -40, "duck_depth_db": 12, "duck_attack_ms": 50,
      "duck_release_ms": 400, "duck_hold_ms": 100,
    ]
    let state = Self.state(gain: 1, music: settings)
    let io = FakePorts()
    io.music = true
    io.musicInput(left: 0.1, right: 0.1)
    E.openRamp(state, io)
    #expect(state.music.duckDecibels == 0, "no voice: no dip")
    io.input(left: 0.5, right: 0.5)  // far above -40 dBFS
    Self.run(state, io, seconds: 0.03)
    let partway = state.music.duckDecibels
    #expect(partway > 0 && partway < 12, "halfway through the 50 ms attack: \(partway)")
    Self.run(state, io, seconds: 0.05)
    #expect(state.music.duckDecibels == 12)
    #expect(io.output(frames: 256).left.allSatisfy { abs($0 - (0.5 + 0.1 * Self.gain(-12))) < 1e-6 })
    io.input(left: 0, right: 0)
    Self.run(state, io, seconds: 0.08)
    #expect(state.music.duckDecibels == 12, "held for 100 ms")
    Self.run(state, io, seconds: 0.2)
    let releasing = state.music.duckDecibels
    #expect(releasing > 0 && releasing < 12, "releasing over 400 ms: \(releasing)")
    Self.run(state, io, seconds: 0.4)
    #expect(state.music.duckDecibels == 0)
    #expect(io.output(frames: 256).left.allSatisfy { abs($0 - 0.1) < 1e-6 }, "the music back at full volume")
  }

  @Test("The monitor gets the voice at voice_db and the music at music_db, not ducked, ramped")
  func monitorMix() {
    let state = Self.state(
      gain: 0.5, music: ["volume_db": -6, "duck": 1],
      monitor: ["voice_db": -6, "music_db": 0, "reverb_db": -60])
    let io = FakePorts()
    io.music = true
    io.monitor = true
    io.input(left: 0.4, right: 0.2)
    io.musicInput(left: 0.1, right: -0.1)
    E.openRamp(state, io)
    #expect(state.music.duckDecibels > 0, "the main outputs' music is ducked")
    let monitor = io.monitorOutput(frames: 256)
    let voice = Self.gain(-6)
    #expect(
      monitor.left.allSatisfy { abs($0 - (0.2 * voice + 0.1)) < 1e-6 },
      "\(monitor.left.prefix(4)) vs \(0.2 * voice + 0.1)")
    #expect(monitor.right.allSatisfy { abs($0 - (0.1 * voice - 0.1)) < 1e-6 })
    state.ramp.fadeOut()
    Self.run(state, io, seconds: 0.06)
    #expect(io.monitorOutput(frames: 256).left.allSatisfy { $0 == 0 }, "muted with the outputs")
  }

  @Test("Without music inputs the monitor has the voice only; the reverb is heard only there")
  func monitorReverb() {
    let state = Self.state(monitor: ["voice_db": 0, "reverb_db": 0])
    let io = FakePorts()
    io.monitor = true
    E.openRamp(state, io)
    // One click, then silence: the main outputs go quiet at once, the monitor rings on.
    io.inputLeft[0] = 1
    io.inputRight[0] = 1
    io.run(state, frames: 256)
    io.input(left: 0, right: 0)
    Self.run(state, io, seconds: 0.2)
    #expect(io.output(frames: 256).left.allSatisfy { $0 == 0 }, "no reverb in the main outputs")
    let tail = io.monitorOutput(frames: 256).left.map { abs($0) }.max() ?? 0
    #expect(tail > 1e-5, "the reverb tail in the monitor: \(tail)")
  }
}
