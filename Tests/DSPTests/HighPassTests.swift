import DSP
import Foundation
import Testing

/// The high-pass stage's magnitude response, measured from the impulse response of a chain that
/// holds only a `highpass` stage, against (a) the RBJ sections' own magnitude formula and (b) the
/// analytic bilinear-transformed Butterworth response.
@Suite struct HighPassTests {
  typealias T = TestSignals

  /// The analytic magnitude (dB) of an order-`order` Butterworth high-pass after the bilinear
  /// transform (frequency pre-warped so the -3 dB point is exactly `cutoff`).
  static func butterworthDecibels(atHz f: Double, cutoff: Double, order: Int) -> Double {
    let ratio = tan(Double.pi * cutoff / T.sampleRate) / tan(Double.pi * f / T.sampleRate)
    return -10 * log10(1 + pow(ratio, Double(2 * order)))
  }

  static func sections(cutoff: Double, slope: Float) -> [BiquadCoefficients] {
    let qs = HighPass.sectionQs(slopeDecibels: slope)
    return (slope >= 24 ? [qs.0, qs.1] : [qs.0]).map {
      BiquadCoefficients.highPass(frequencyHz: cutoff, q: $0, sampleRate: T.sampleRate)
    }
  }

  @Test("Butterworth section Qs are 1/(2 cos θk)")
  func sectionQs() {
    let (q, unused) = HighPass.sectionQs(slopeDecibels: 12)
    #expect(abs(q - 1 / 2.0.squareRoot()) < 1e-12)
    #expect(unused == 0)
    let (q1, q2) = HighPass.sectionQs(slopeDecibels: 24)
    #expect(abs(q1 - 1 / (2 * cos(Double.pi / 8))) < 1e-12)
    #expect(abs(q2 - 1 / (2 * cos(3 * Double.pi / 8))) < 1e-12)
  }

  /// The sections (Float coefficients) realise the analytic Butterworth magnitude within 0.1 dB
  /// at every test frequency, and put -3.01 dB exactly at the cutoff.
  @Test("Sections match the Butterworth formula", arguments: [20.0, 80.0, 200.0, 1000.0], [Float(12), 24])
  func sectionsAreButterworth(cutoff: Double, slope: Float) {
    let c = CascadeResponse(sections: Self.sections(cutoff: cutoff, slope: slope))
    for f in T.logFrequencies() {
      let r = c.reference(atHz: f)
      let db = 20 * log10(hypot(r.re, r.im))
      let analytic = Self.butterworthDecibels(atHz: f, cutoff: cutoff, order: slope >= 24 ? 4 : 2)
      #expect(abs(db - analytic) <= 0.1, "\(f) Hz: sections \(db) dB, Butterworth \(analytic) dB")
    }
    let r = c.reference(atHz: cutoff)
    #expect(abs(20 * log10(hypot(r.re, r.im)) + 10 * log10(2.0)) < 0.01)
  }

  /// The chain's measured response: within 0.1 dB of the sections at 30 log-spaced frequencies
  /// from 20 Hz to 20 kHz and at the cutoff. Only deep-stopband points (reference below -30 dB),
  /// where Float round-off of the recursion is more than 0.1 dB of the tiny response, may use the
  /// round-off allowance (see `CascadeResponse`).
  @Test("Measured response matches within 0.1 dB", arguments: [20.0, 80.0, 200.0, 1000.0], [Float(12), 24])
  func magnitudeResponse(cutoff: Double, slope: Float) {
    let chain = T.chain("highpass", ["freq_hz": Float(cutoff), "slope_db": slope])
    let h = T.processMono(chain, T.impulse(frames: T.responseLength))
    let points = CascadeResponse(sections: Self.sections(cutoff: cutoff, slope: slope))
      .check(h, at: T.logFrequencies() + [cutoff], "highpass \(cutoff) Hz \(slope) dB/oct")
    for p in points where p.usedAllowance {
      #expect(p.referenceDecibels < -30, "0.1 dB missed at \(p.hz) Hz, \(p.referenceDecibels) dB")
    }
    let strict = points.filter { !$0.usedAllowance }.map { abs($0.deviationDecibels) }.max() ?? 0
    let loose = points.filter(\.usedAllowance).map {
      "\(Int($0.hz)) Hz \(String(format: "%.1f", $0.referenceDecibels)) dB off \(String(format: "%.2f", $0.deviationDecibels)) dB (error/allowance \(String(format: "%.2f", $0.complexError / $0.roundOffAllowance)))"
    }
    T.measured(
      "highpass \(cutoff) Hz \(slope) dB/oct: worst deviation \(String(format: "%.4f", strict)) dB; round-off points: \(loose)"
    )
  }

  @Test("Both channels are filtered identically")
  func stereoIdentical() {
    let chain = T.chain("highpass", ["freq_hz": 120, "slope_db": 24])
    var left = T.noise(frames: 4096, amplitude: 0.5)
    var right = left
    T.process(chain, left: &left, right: &right, blockSize: 100)
    #expect(left == right)
  }
}
