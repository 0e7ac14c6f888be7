import DSP
import Foundation
import Testing

/// The compressor's static curve and the gate's open/close behaviour, measured through chains.
/// (The limiter has its own suite.)
@Suite struct DynamicsTests {
  typealias T = TestSignals

  static func decibels(_ x: Float) -> Double { 20 * log10(Double(abs(x))) }

  /// The documented soft-knee curve, written out independently: no reduction below
  /// T − W/2, (1 − 1/R)·(L − T + W/2)²/(2W) inside the knee, (1 − 1/R)·(L − T) above it.
  static func expectedReduction(level l: Double, threshold t: Double, ratio r: Double, knee w: Double)
    -> Double
  {
    let slope = 1 - 1 / r
    if l <= t - w / 2 { return 0 }
    if l < t + w / 2 { return slope * (l - t + w / 2) * (l - t + w / 2) / (2 * w) }
    return slope * (l - t)
  }

  /// A DC level held for 1 s (the 10 ms attack has long settled): the output level is the
  /// input level minus the curve's reduction plus makeup, within 0.01 dB.
  @Test("Compressor static curve", arguments: [-40.0, -24, -21, -18, -16, -15, -10, -3, 0])
  func compressorCurve(level: Double) {
    let (t, r, w, makeup) = (-18.0, 3.0, 6.0, 4.0)
    let chain = T.chain(
      "compressor",
      ["threshold_db": Float(t), "ratio": Float(r), "knee_db": Float(w), "makeup_db": Float(makeup)])
    let x = Float(pow(10, level / 20))
    let y = T.processMono(chain, [Float](repeating: x, count: 48_000))
    let expected = level - Self.expectedReduction(level: level, threshold: t, ratio: r, knee: w) + makeup
    #expect(
      abs(Self.decibels(y.last!) - expected) < 0.01,
      "level \(level): output \(Self.decibels(y.last!)) dB, expected \(expected) dB")
    // The unit's public curve is the same function.
    let published = Double(
      Compressor.reduction(levelDecibels: Float(level), threshold: Float(t), ratio: Float(r), knee: Float(w)))
    #expect(abs(published - Self.expectedReduction(level: level, threshold: t, ratio: r, knee: w)) < 1e-4)
  }

  @Test("Compressor: ratio 1 and makeup 0 leave the signal unchanged")
  func compressorNeutral() {
    let chain = T.chain("compressor", ["ratio": 1, "threshold_db": -60])
    let x = T.noise(frames: 4800, amplitude: 0.9)
    let y = T.processMono(chain, x)
    #expect(zip(x, y).allSatisfy { abs($0 - $1) <= 1e-6 * max(abs($0), 1e-3) })
  }

  /// A 1 kHz tone at 0.25 opens the gate; a -80 dBFS hiss below the close level lets it close
  /// after the hold time, falling to the range with its release; the tone reopens it within a
  /// few attack time constants.
  @Test("Gate closes to its range after hold, reopens with its attack")
  func gate() {
    let chain = T.chain(
      "gate",
      [
        "threshold_db": -40, "hysteresis_db": 6, "attack_ms": 1, "hold_ms": 100, "release_ms": 50,
        "range_db": -40,
      ])
    let tone = T.sine(hz: 1000, amplitude: 0.25, frames: 24_000)
    let hiss = T.noise(frames: 48_000, amplitude: 1e-4)
    let a = T.processMono(chain, tone)
    #expect(abs(T.peak(a[12_000...]) - 0.25) < 1e-3, "open: unity gain")
    let b = T.processMono(chain, hiss)
    // Still open through the hold (100 ms, plus the 10 ms level detector's decay to -46 dB).
    let held = b[0..<4800].enumerated().map { abs($0.element / hiss[$0.offset]) }
    #expect(held.filter { $0.isFinite && $0 > 0.99 }.count > 4000)
    // After hold + 10 release time constants: at the range, -40 dB.
    let closedGain = b[40_000...].enumerated().map {
      Double(abs($0.element)) / Double(abs(hiss[40_000 + $0.offset]))
    }
    let g = closedGain.filter { $0.isFinite }.reduce(0, +) / Double(closedGain.count)
    #expect(abs(20 * log10(g) + 40) < 0.1, "closed gain \(20 * log10(g)) dB")
    // Reopen: within 5 ms (5 attack time constants) the tone is back within 0.1 dB.
    let c = T.processMono(chain, tone)
    #expect(abs(Self.decibels(T.peak(c[240..<1200])) - Self.decibels(0.25)) < 0.1)
    #expect(T.peak(c[0..<24]) < 0.25 * 0.7, "not instant: it ramps with the attack")
  }
}
