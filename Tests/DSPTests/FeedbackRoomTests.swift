import DSP
import Foundation
import Testing

/// Gain before feedback in a set of rooms the suite builds itself (issue 36): the `voice`
/// chain (presets/voice.json) in a closed loop through each room, the feedback suppressor on
/// against off (bypassed). A room is a loudspeaker band (150 Hz to 6 kHz), its resonances,
/// a soft saturation at full scale, a path delay and a broadband gain G; `walk` changes path and
/// resonance halfway through the speech, as when the singer walks.
///
/// A G is stable when the loop's output stays within 6 dB of the open loop's (the same chain,
/// no room) in every 100 ms window (no howl burst: the open loop's level floored at 20 dB under
/// its speech RMS, so the room's natural ring in pauses is no burst), and the last 0.4 s of the
/// second of silence after the speech is 20 dB under that speech RMS (nothing rings on).
///
/// The search runs 20–30 loops per room and variant (about 7 minutes for the five rooms in a
/// debug build on 2 cores): more than the suite's budget, so it runs when asked
/// (`LIVEMIC_ROOMS=1 swift test --filter FeedbackRoomTests`) and docs/feedback.md keeps its
/// figures. Issue 36's goal (+12 dB in every room) is not reached: see there.
@Suite(
  .enabled(
    if: ProcessInfo.processInfo.environment["LIVEMIC_ROOMS"] != nil,
    "the rooms' gain-before-feedback search: LIVEMIC_ROOMS=1 (docs/feedback.md)"))
struct FeedbackRoomTests {
  typealias T = TestSignals

  struct Resonance {
    var hz: Double
    var gainDecibels: Double
    var q: Double
  }

  struct Room: CustomStringConvertible {
    var name: String
    var delayMs: Double
    var resonances: [Resonance]
    /// The room after halfway through the speech (nil: the same throughout).
    var later: (delayMs: Double, resonances: [Resonance])?

    var description: String { name }

    static let all: [Room] = [
      Room(name: "short", delayMs: 5, resonances: [Resonance(hz: 1200, gainDecibels: 9, q: 6)]),
      Room(name: "issue", delayMs: 12, resonances: [Resonance(hz: 1500, gainDecibels: 9, q: 5)]),
      Room(name: "long", delayMs: 40, resonances: [Resonance(hz: 2500, gainDecibels: 9, q: 6)]),
      Room(
        name: "two", delayMs: 12,
        resonances: [Resonance(hz: 700, gainDecibels: 9, q: 6), Resonance(hz: 2900, gainDecibels: 8, q: 8)]),
      Room(
        name: "walk", delayMs: 12, resonances: [Resonance(hz: 1000, gainDecibels: 9, q: 6)],
        later: (18, [Resonance(hz: 1800, gainDecibels: 9, q: 6)])),
    ]
  }

  typealias Section = FeedbackLoopTests.Section

  static let fs = T.sampleRate
  static let block = 64

  static func sections(_ resonances: [Resonance]) -> [Section] {
    FeedbackLoopTests.loudspeakerBand()
      + resonances.map {
        Section(.peaking(frequencyHz: $0.hz, q: $0.q, gainDecibels: $0.gainDecibels, sampleRate: fs))
      }
  }

  /// The room's largest gain (dB at G = 0 dB), over both halves of a walk.
  static func peakDecibels(_ room: Room) -> Double {
    let sets = [room.resonances] + (room.later.map { [$0.resonances] } ?? [])
    var best = -1000.0
    for set in sets {
      let s = sections(set)
      for hz in stride(from: 50.0, through: 12_000, by: 2) {
        best = max(best, s.reduce(0) { $0 + $1.c.magnitudeDecibels(atHz: hz, sampleRate: fs) })
      }
    }
    return best
  }

  /// The `voice` preset's stages, `feedback` set as given (nil: bypassed).
  static func voiceStages(feedback: [String: Float]?, canceller: [String: Float]? = nil) throws
    -> [StageDescription]
  {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("presets/voice.json")
    let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
    let chain = json["chain"] as? [[String: Any]] ?? []
    return chain.map { entry in
      let type = entry["unit"] as? String ?? ""
      var values = (entry["params"] as? [String: Any] ?? [:]).compactMapValues {
        ($0 as? NSNumber)?.floatValue
      }
      var bypassed = entry["bypass"] as? Bool ?? false
      if type == "feedback" {
        if let feedback { values.merge(feedback) { _, new in new } } else { bypassed = true }
      }
      return StageDescription(id: type, type: type, values: values, bypassed: bypassed)
    }
    .flatMap { stage in
      // The echo canceller on LiveMic's own output, right after the input stage.
      guard stage.type == "input", let canceller else { return [stage] }
      return [stage, StageDescription(id: "aec", type: "aec", values: canceller, bypassed: false)]
    }
  }

  /// The chain's output with the loop closed through `room` at `gainDecibels` (nil: open).
  static func run(
    _ source: [Float], halfway: Int, room: Room, gainDecibels: Double?, stages: [StageDescription]
  )
    -> [Float]
  {
    let chain = T.chain(stages)
    var sections = sections(room.resonances)
    var delay = Int(room.delayMs * fs / 1000) + block
    let g = Float(gainDecibels.map { pow(10, $0 / 20) } ?? 0)
    let size = 1 << 13
    var ring = [Float](repeating: 0, count: size)
    var output = [Float](repeating: 0, count: source.count)
    var left = [Float](repeating: 0, count: block)
    var right = left
    var offset = 0
    while offset < source.count {
      if offset >= halfway, offset < halfway + block, let later = room.later {
        sections = Self.sections(later.resonances)
        delay = Int(later.delayMs * fs / 1000) + block
      }
      let frames = min(block, source.count - offset)
      for f in 0..<frames {
        let i = offset + f
        left[f] = source[i] + ring[i & (size - 1)]
        ring[i & (size - 1)] = 0
        right[f] = left[f]
      }
      chain.process(left: &left, right: &right, blockFrames: frames, frames: frames)
      for f in 0..<frames {
        let y = left[f].isFinite ? left[f] : 0
        output[offset + f] = y
        var z = y
        for s in sections.indices { z = sections[s].step(z) }
        ring[(offset + f + delay) & (size - 1)] += g * tanhf(z)
      }
      offset += frames
    }
    return output
  }

  static func decibels(_ x: ArraySlice<Float>) -> Double {
    10 * log10(x.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1)) + 1e-30)
  }

  struct Verdict {
    var stable: Bool
    /// The largest 100 ms window over the open loop's (floored), dB.
    var burstDecibels: Double
    var tailDecibels: Double
  }

  static func verdict(_ looped: [Float], open: [Float], speechFrames: Int) -> Verdict {
    let speech = decibels(open[0..<speechFrames])
    let window = 4800
    var burst = -100.0
    for start in stride(from: 0, to: looped.count - window, by: window / 2) {
      let reference = max(decibels(open[start..<(start + window)]), speech - 20)
      burst = max(burst, decibels(looped[start..<(start + window)]) - reference)
    }
    let tail = decibels(looped[(looped.count - 19_200)...]) - speech
    return Verdict(stable: burst <= 6 && tail <= -20, burstDecibels: burst, tailDecibels: tail)
  }

  /// The speech: about 6 s of espeak-ng at −20 dBFS RMS, then a second of silence.
  static func source() throws -> (samples: [Float], speechFrames: Int)? {
    guard
      var x = try Speech.synthesize(
        "Testing the feedback suppressor in a room: one, two, three, four, five. "
          + "The singer walks across the stage and keeps on singing, aaah, oooh.", wordsPerMinute: 170)
    else { return nil }
    let scale = Float(0.1 / pow(10, decibels(x[...]) / 20))
    for i in x.indices { x[i] *= scale }
    return (x + [Float](repeating: 0, count: 48_000), x.count)
  }

  /// The largest stable G, raised in 1 dB steps from `start` (nil when `start` is not stable).
  static func maximumStableGain(
    _ source: [Float], speechFrames: Int, room: Room, stages: [StageDescription], open: [Float],
    from start: Double,
    label: String
  ) -> Double? {
    var best: Double?
    var g = start
    while g < start + 30 {
      let v = verdict(
        run(source, halfway: speechFrames / 2, room: room, gainDecibels: g, stages: stages), open: open,
        speechFrames: speechFrames)
      print(
        "[room] \(room.name) \(label) G \(g) dB: \(v.stable ? "stable" : "unstable"), burst "
          + String(format: "%+.1f", v.burstDecibels) + " dB, tail " + String(format: "%+.1f", v.tailDecibels))
      if !v.stable { break }
      best = g
      g += 1
    }
    return best
  }

  @Test(
    "gain before feedback in each room: the voice chain's suppressor adds stable gain", arguments: Room.all)
  func addedGain(room: Room) throws {
    // LIVEMIC_ROOMS=short,issue runs those rooms only; LIVEMIC_ROOM_VARIANTS=aec+notches those
    // variants only.
    let rooms = ProcessInfo.processInfo.environment["LIVEMIC_ROOMS"]?.split(separator: ",") ?? []
    if rooms.contains(where: { $0 != "1" }), !rooms.contains(Substring(room.name)) { return }
    guard let (source, speechFrames) = try Self.source() else { return }
    let off = try Self.voiceStages(feedback: nil)
    let open = Self.run(source, halfway: speechFrames / 2, room: room, gainDecibels: nil, stages: off)
    let start = (-Self.peakDecibels(room)).rounded(.down) - 6
    let without = try #require(
      Self.maximumStableGain(
        source, speechFrames: speechFrames, room: room, stages: off, open: open, from: start, label: "off"))
    // The first two run by default; the others when LIVEMIC_ROOM_VARIANTS names them.
    let variants: [(String, [String: Float], [String: Float]?)] = [
      ("notches", [:], nil), ("notches+shift5", ["shift_hz": 5], nil), ("aec+notches", [:], [:]),
      ("aec+notches+shift5", ["shift_hz": 5], [:]), ("notches12", ["max_notches": 12], nil),
      ("notches12+deep", ["max_notches": 12, "depth_db": 40], nil),
      ("notches12+sensitive", ["max_notches": 12, "sensitivity": 0.9], nil),
      ("sensitive", ["sensitivity": 0.9], nil),
    ].enumerated().filter { index, variant in
      ProcessInfo.processInfo.environment["LIVEMIC_ROOM_VARIANTS"].map {
        $0.split(separator: ",").contains(Substring(variant.0))
      } ?? (index < 2)
    }.map(\.element)
    for (label, values, canceller) in variants {
      let stages = try Self.voiceStages(feedback: values, canceller: canceller)
      let openWith = Self.run(
        source, halfway: speechFrames / 2, room: room, gainDecibels: nil, stages: stages)
      let with =
        Self.maximumStableGain(
          source, speechFrames: speechFrames, room: room, stages: stages, open: openWith, from: without,
          label: label) ?? -.infinity
      T.measured(
        "feedback room \(room.name): \(label) adds \(with - without) dB (off \(without) dB, on \(with) dB)")
    }
  }
}
