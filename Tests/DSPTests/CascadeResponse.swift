import DSP
import Foundation
import Testing

/// Compares a measured impulse response with the exact response of a cascade of biquads (the
/// same Float coefficients the unit uses, evaluated in Double).
///
/// Float round-off: each section rounds its output sum (values of order 1 for a unit impulse)
/// to 24 bits, and that error reaches the output through the section's all-pole part 1/A(z) and
/// the later sections. Below a low cutoff |1/A| is huge (≈ 1/ω0², about 10⁴ at 80 Hz), so the
/// output carries a complex error of about
///   E(f) = ε · Σ_k |1/A_k(f)| · Π_{j>k} |H_j(f)|,   ε = 2⁻²⁴,
/// whatever the filter's own level there. (The same recursion in Double, with the same Float
/// coefficients, matches the formula to 1e-9 dB; the measured errors are 0.2–0.4 × E.) Where the
/// response itself is that small — the deep stopband of a high-pass — E is more than 0.1 dB of
/// it. Each point must therefore be within 0.1 dB or, only where it deviates by more, within 4·E
/// as a complex error. Points that needed the allowance are marked so tests can bound them.
struct CascadeResponse {
  let sections: [BiquadCoefficients]

  struct Point {
    var hz: Double
    var referenceDecibels: Double
    var measuredDecibels: Double
    var deviationDecibels: Double { measuredDecibels - referenceDecibels }
    /// |measured − reference| as complex numbers, relative to the impulse.
    var complexError: Double
    /// 4·E(f), the round-off allowance.
    var roundOffAllowance: Double
    /// Whether 0.1 dB was not met and the point passed on the round-off allowance.
    var usedAllowance: Bool
  }

  static func response(_ c: BiquadCoefficients, atHz hz: Double) -> (b: (Double, Double), a: (Double, Double))
  {
    let w = 2 * Double.pi * hz / TestSignals.sampleRate
    let (b0, b1, b2, a1, a2) = (Double(c.b0), Double(c.b1), Double(c.b2), Double(c.a1), Double(c.a2))
    return (
      (b0 + b1 * cos(w) + b2 * cos(2 * w), -(b1 * sin(w) + b2 * sin(2 * w))),
      (1 + a1 * cos(w) + a2 * cos(2 * w), -(a1 * sin(w) + a2 * sin(2 * w)))
    )
  }

  /// The cascade's exact complex response and the round-off scale E(f).
  func reference(atHz hz: Double) -> (re: Double, im: Double, roundOff: Double) {
    var (re, im) = (1.0, 0.0)
    var e = 0.0
    let parts = sections.map { Self.response($0, atHz: hz) }
    for (k, p) in parts.enumerated() {
      let d = p.a.0 * p.a.0 + p.a.1 * p.a.1
      let h = ((p.b.0 * p.a.0 + p.b.1 * p.a.1) / d, (p.b.1 * p.a.0 - p.b.0 * p.a.1) / d)
      (re, im) = (re * h.0 - im * h.1, re * h.1 + im * h.0)
      var g = 1 / d.squareRoot()
      for q in parts[(k + 1)...] { g *= hypot(q.b.0, q.b.1) / hypot(q.a.0, q.a.1) }
      e += g
    }
    return (re, im, e * Double(Float.ulpOfOne) / 2)
  }

  /// Checks `h` (the response to an impulse of `amplitude`) at `frequencies`, recording an issue
  /// per failing point; returns every point.
  @discardableResult
  func check(
    _ h: [Float], amplitude: Double = 1, at frequencies: [Double], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> [Point] {
    frequencies.map { f in
      let r = reference(atHz: f)
      let m = TestSignals.dft(h, atHz: f)
      let (mr, mi) = (m.re / amplitude, m.im / amplitude)
      let reference = hypot(r.re, r.im)
      let error = hypot(mr - r.re, mi - r.im)
      let point = Point(
        hz: f, referenceDecibels: 20 * log10(reference), measuredDecibels: 20 * log10(hypot(mr, mi)),
        complexError: error, roundOffAllowance: 4 * r.roundOff,
        usedAllowance: abs(20 * log10(hypot(mr, mi)) - 20 * log10(reference)) > 0.1)
      #expect(
        !point.usedAllowance || error <= point.roundOffAllowance,
        "\(label) at \(f) Hz: measured \(point.measuredDecibels) dB, expected \(point.referenceDecibels) dB (complex error \(error), round-off allowance \(point.roundOffAllowance))",
        sourceLocation: sourceLocation)
      return point
    }
  }
}
