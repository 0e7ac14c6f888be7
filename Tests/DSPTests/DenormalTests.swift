import DSP
import Foundation
import Testing

/// After loud signal and then a long exact silence, no unit produces subnormal output or keeps
/// subnormal state (subnormal arithmetic is ~100× slower on x86 and would blow the real-time
/// budget in exactly the quiet moments nobody profiles).
///
/// Signal: 1 s of uniform noise at 0.5 on the left and a 200 Hz sine at 0.5 on the right, then
/// 10 s of exact zeros, then a few more blocks of zeros that are inspected.
@Suite struct DenormalTests {
  typealias T = TestSignals

  struct Setting: Sendable, CustomTestStringConvertible {
    var type: String
    var values: [String: Float] = [:]
    var testDescription: String {
      values.isEmpty
        ? "\(type) defaults"
        : "\(type) \(values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
    }
  }

  /// Settings that decay slowest (low cutoffs, long tails, high Q) or fastest into the subnormal
  /// range. A small undamped reverb room is the fastest: its combs lose ~5 decades a second, so
  /// 10 s takes the tail from 1e-2 through 1e-38 (this found the combs' unflushed delay lines).
  static let extremes: [Setting] = [
    Setting(type: "input", values: ["gain_db": 40]),
    Setting(type: "highpass", values: ["freq_hz": 20, "slope_db": 24]),
    Setting(type: "eq", values: ["bass_db": 12, "bass_hz": 20, "mid_db": -12, "mid_q": 10, "treble_db": 12]),
    Setting(type: "compressor", values: ["threshold_db": -60, "ratio": 20, "makeup_db": 24]),
    Setting(type: "gate", values: ["range_db": -96, "release_ms": 4000]),
    Setting(type: "echo", values: ["feedback": 0.95, "time_ms": 20]),
    Setting(type: "reverb", values: ["room_size": 0, "damping": 0]),
  ]

  /// Every unit at its defaults, plus the extremes. (The reverb, by far the slowest unit in a
  /// debug build, runs alone only at its extreme; at its defaults it runs in the default chain.)
  static let settings: [Setting] =
    BuiltinUnits.typeNames.filter { $0 != "reverb" }.map { Setting(type: $0) } + extremes

  static let loudFrames = 48_000
  static let silentFrames = 480_000

  static func loud() -> (left: [Float], right: [Float]) {
    (T.noise(frames: loudFrames, amplitude: 0.5), T.sine(hz: 200, amplitude: 0.5, frames: loudFrames))
  }

  static func isZeroOrNormal(_ x: Float) -> Bool { x == 0 || x.isNormal }

  static func subnormalCount(_ x: [Float]) -> Int {
    var n = 0
    for v in x where v.isSubnormal { n += 1 }
    return n
  }

  /// Through a chain: every output sample during the silence and after it is 0 or normal. (Each
  /// unit is also run alone, directly, below; the chain adds the stages' own bookkeeping.)
  @Test("The default chain's output never goes subnormal")
  func defaultChain() {
    Self.checkChain(T.chain(BuiltinUnits.defaultChain), "default chain")
  }

  @Test("A chain of every unit but the reverb at its extreme setting never goes subnormal")
  func extremeChain() {
    var stages = Self.extremesChain
    stages.append(StageDescription(id: "limiter", type: "limiter"))
    stages.append(StageDescription(id: "output", type: "output", values: ["volume": 1]))
    Self.checkChain(T.chain(stages), "extreme chain")
  }

  static var extremesChain: [StageDescription] {
    extremes.filter { $0.type != "reverb" }.map {
      StageDescription(id: $0.type, type: $0.type, values: $0.values)
    }
  }

  static func checkChain(_ chain: VoiceChain, _ label: String) {
    var (left, right) = loud()
    T.process(chain, left: &left, right: &right, blockSize: 1024)
    var bad = 0
    var silence = [Float](repeating: 0, count: 4800)
    for _ in 0..<(silentFrames / 4800 + 1) {
      var l = silence
      var r = silence
      T.process(chain, left: &l, right: &r, blockSize: 1024)
      bad += subnormalCount(l) + subnormalCount(r)
    }
    silence = [Float](repeating: 0, count: 96)
    var l = silence
    var r = silence
    T.process(chain, left: &l, right: &r, blockSize: 32)
    #expect(bad == 0, "\(label): \(bad) subnormal samples during the silence")
    #expect(
      l.allSatisfy(isZeroOrNormal) && r.allSatisfy(isZeroOrNormal),
      "\(label): subnormal output after the silence")
  }

  /// Directly on the unit value: `Mirror` sees every stored Float (scalars, `[Float]` delay lines,
  /// nested `StereoBiquad`s and reverb lines), none of which may be subnormal.
  @Test("Unit state never goes subnormal", arguments: settings)
  func unitState(_ s: Setting) {
    let type = BuiltinUnits.type(named: s.type)!
    let (count, subnormal, output) = Self.run(type, s.values)
    #expect(count > 0 || ["input", "output"].contains(s.type), "\(s.testDescription): Mirror found no state")
    // The delay lines must be visible too (state moved behind a pointer would hide them).
    #expect(
      count > 10_000 || !["echo", "reverb"].contains(s.type),
      "\(s.testDescription): Mirror sees only \(count) Floats")
    #expect(subnormal == 0, "\(s.testDescription): \(subnormal) subnormal values in the unit's state")
    #expect(output == 0, "\(s.testDescription): \(output) subnormal output samples")
  }

  /// Runs loud signal then silence through a bare unit; returns the number of stored Floats, the
  /// number of subnormal ones, and the number of subnormal output samples during the silence.
  static func run<U: VoiceUnit>(_ type: U.Type, _ values: [String: Float]) -> (Int, Int, Int) {
    var harness = UnitHarness<U>(values)
    var (left, right) = loud()
    harness.process(left: &left, right: &right)
    var bad = 0
    for _ in 0..<(silentFrames / 4800 + 1) {
      var l = [Float](repeating: 0, count: 4800)
      var r = l
      harness.process(left: &l, right: &r)
      bad += subnormalCount(l) + subnormalCount(r)
    }
    return (T.storedFloatCount(in: harness.unit), T.subnormalStateCount(in: harness.unit), bad)
  }
}
