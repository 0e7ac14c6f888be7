import DSP
import Foundation
import Testing

/// The RBJ coefficient formulas (by their defining properties, independent of how they are
/// written) and the stereo biquad filter itself.
///
/// The properties hold to within `tolerance`: the coefficients are Float, and near DC a low
/// filter's denominator sum 1 + a1 + a2 is only ~ω0² (4e-4 at 150 Hz), so rounding each
/// coefficient (~1e-7) moves the DC gain by up to ~0.005 dB.
@Suite struct BiquadTests {
  typealias T = TestSignals
  static let fs = T.sampleRate
  static let nyquist = fs / 2
  static let tolerance = 0.01

  static func db(_ c: BiquadCoefficients, _ hz: Double) -> Double {
    c.magnitudeDecibels(atHz: hz, sampleRate: fs)
  }

  @Test(
    "High-pass: zero at DC, unity at Nyquist, |H(f0)| = Q", arguments: [50.0, 80, 1000, 10_000],
    [0.5, 0.7071, 2])
  func highPass(f0: Double, q: Double) {
    let c = BiquadCoefficients.highPass(frequencyHz: f0, q: q, sampleRate: Self.fs)
    #expect(c.b0 + c.b1 + c.b2 == 0, "an exact double zero at DC")
    #expect(abs(Self.db(c, Self.nyquist)) < Self.tolerance)
    #expect(abs(Self.db(c, f0) - 20 * log10(q)) < Self.tolerance)
  }

  @Test(
    "Peaking: full gain at f0, unity at DC and Nyquist", arguments: [-12.0, -3, 6, 20], [200.0, 1000, 8000])
  func peaking(gain: Double, f0: Double) {
    let c = BiquadCoefficients.peaking(frequencyHz: f0, q: 1.5, gainDecibels: gain, sampleRate: Self.fs)
    #expect(abs(Self.db(c, f0) - gain) < Self.tolerance)
    #expect(abs(Self.db(c, 0)) < Self.tolerance)
    #expect(abs(Self.db(c, Self.nyquist)) < Self.tolerance)
    // Zero gain is the identity.
    let flat = BiquadCoefficients.peaking(frequencyHz: f0, q: 1.5, gainDecibels: 0, sampleRate: Self.fs)
    #expect(abs(Self.db(flat, f0 * 1.3)) < 1e-5)
  }

  @Test(
    "Shelves: full gain at their end, half (in dB) at f0, unity at the other end", arguments: [-12.0, 6, 15],
    [0.3, 0.5, 1.0])
  func shelves(gain: Double, slope: Double) {
    let low = BiquadCoefficients.lowShelf(
      frequencyHz: 150, slope: slope, gainDecibels: gain, sampleRate: Self.fs)
    #expect(abs(Self.db(low, 0) - gain) < Self.tolerance)
    #expect(abs(Self.db(low, 150) - gain / 2) < Self.tolerance)
    #expect(abs(Self.db(low, Self.nyquist)) < Self.tolerance)
    let high = BiquadCoefficients.highShelf(
      frequencyHz: 4000, slope: slope, gainDecibels: gain, sampleRate: Self.fs)
    #expect(abs(Self.db(high, Self.nyquist) - gain) < Self.tolerance)
    #expect(abs(Self.db(high, 4000) - gain / 2) < Self.tolerance)
    #expect(abs(Self.db(high, 0)) < Self.tolerance)
    // S ≤ 1 shelves are monotonic.
    let f = T.logFrequencies(60, from: 10, to: 23_000)
    let lows = f.map { Self.db(low, $0) }
    #expect(zip(lows, lows.dropFirst()).allSatisfy { gain > 0 ? $0 >= $1 - 1e-6 : $0 <= $1 + 1e-6 })
  }

  @Test("Frequencies above 0.49·fs are clamped to finite coefficients")
  func clamped() {
    let cs = [
      BiquadCoefficients.highPass(frequencyHz: 30_000, q: 0.7, sampleRate: Self.fs),
      .peaking(frequencyHz: 40_000, q: 1, gainDecibels: 6, sampleRate: Self.fs),
      .lowShelf(frequencyHz: 24_000, slope: 1, gainDecibels: 6, sampleRate: Self.fs),
      .highShelf(frequencyHz: 1e6, slope: 0.1, gainDecibels: -20, sampleRate: Self.fs),
    ]
    for c in cs { #expect([c.b0, c.b1, c.b2, c.a1, c.a2].allSatisfy { $0.isFinite }) }
  }

  /// The filter computes y[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2] − a1·y[n−1] − a2·y[n−2]:
  /// compared with that recursion in Double on noise, the Float result stays within 1e-5.
  @Test("StereoBiquad computes the difference equation")
  func differenceEquation() {
    var f = StereoBiquad()
    f.coefficients = .peaking(frequencyHz: 700, q: 3, gainDecibels: 9, sampleRate: Self.fs)
    let x = T.noise(frames: 4096, amplitude: 0.5)
    var left = x
    var right = [Float](repeating: 0, count: x.count)
    Self.run(&f, &left, &right, block: 32)
    let c = f.coefficients
    let (b0, b1, b2, a1, a2) = (Double(c.b0), Double(c.b1), Double(c.b2), Double(c.a1), Double(c.a2))
    var (x1, x2, y1, y2) = (0.0, 0.0, 0.0, 0.0)
    var worst = 0.0
    for n in 0..<x.count {
      let y = b0 * Double(x[n]) + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
      (x2, x1, y2, y1) = (x1, Double(x[n]), y1, y)
      worst = max(worst, abs(y - Double(left[n])))
    }
    #expect(worst < 1e-5)
    #expect(right.allSatisfy { $0 == 0 }, "channels are independent")
  }

  @Test("Block size does not change the result; reset clears the state")
  func blocksAndReset() {
    var reference = StereoBiquad()
    reference.coefficients = .highPass(frequencyHz: 120, q: 1.3, sampleRate: Self.fs)
    let x = T.noise(frames: 3000, amplitude: 0.8)
    var l0 = x, r0 = x.reversed() as [Float]
    var f0 = reference
    Self.run(&f0, &l0, &r0, block: 32)
    for block in [1, 5, 17, 32] {
      var f = reference
      var l = x, r = x.reversed() as [Float]
      Self.run(&f, &l, &r, block: block)
      #expect(l == l0 && r == r0, "block \(block)")
    }
    // After reset, an impulse gives exactly the fresh filter's impulse response.
    var used = f0
    used.reset()
    var a = T.impulse(frames: 512), b = T.impulse(frames: 512)
    Self.run(&used, &a, &b, block: 32)
    var fresh = reference
    var c = T.impulse(frames: 512), d = T.impulse(frames: 512)
    Self.run(&fresh, &c, &d, block: 32)
    #expect(a == c && b == d)
  }

  /// Regression: the state must not depend on the coefficients, or coefficient updates (every
  /// sub-block while an EQ gain is smoothed) click. A 0.25 sine at 100 Hz (where a 3 kHz shelf
  /// is flat) through a +20 dB treble shelf smoothed to -20 dB, one update per 32 frames as
  /// `UnitStage` does: with transposed direct form II the output stepped by up to 0.11, 34× the
  /// sine's own largest step; now within 10 % of it.
  @Test(
    "Coefficient updates do not step the output", arguments: [(Float(20), Float(-20)), (-20, 20), (9, -3)])
  func coefficientUpdates(from: Float, to: Float) {
    let alpha = 1 - expf(-1 / 30)  // UnitStage's smoothing per sub-block at 48 kHz
    var f = StereoBiquad()
    var gain = from
    f.coefficients = .highShelf(
      frequencyHz: 3000, slope: 0.5, gainDecibels: Double(gain), sampleRate: Self.fs)
    var left = T.sine(hz: 100, amplitude: 0.25, frames: 19_200)
    var right = left
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        for b in 0..<600 {
          if b >= 300 {
            gain += (to - gain) * alpha
            f.coefficients = .highShelf(
              frequencyHz: 3000, slope: 0.5, gainDecibels: Double(gain), sampleRate: Self.fs)
          }
          f.process(StereoBlock(left: l.baseAddress! + 32 * b, right: r.baseAddress! + 32 * b, frames: 32))
        }
      }
    }
    let steady = T.maxJump(left, in: 2400..<9600)
    let jump = T.maxJump(left, in: 9600..<19_200)
    #expect(jump <= 1.1 * steady, "step \(jump) while the coefficients change, steady \(steady)")
  }

  static func run(_ f: inout StereoBiquad, _ left: inout [Float], _ right: inout [Float], block: Int) {
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        guard let lb = l.baseAddress, let rb = r.baseAddress else { return }
        var offset = 0
        while offset < l.count {
          let n = min(block, l.count - offset)
          f.process(StereoBlock(left: lb + offset, right: rb + offset, frames: n))
          offset += n
        }
      }
    }
  }
}
