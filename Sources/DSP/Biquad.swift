#if canImport(Glibc)
  import Glibc
#endif

/// Normalized biquad coefficients (a0 = 1), from the RBJ Audio EQ Cookbook.
///
/// Thread: any (value type).
public struct BiquadCoefficients: Sendable, Equatable {
  public var b0: Float = 1
  public var b1: Float = 0
  public var b2: Float = 0
  public var a1: Float = 0
  public var a2: Float = 0

  /// - Realtime: safe
  public init() {}

  /// - Realtime: safe
  init(b0: Double, b1: Double, b2: Double, a0: Double, a1: Double, a2: Double) {
    self.b0 = Float(b0 / a0)
    self.b1 = Float(b1 / a0)
    self.b2 = Float(b2 / a0)
    self.a1 = Float(a1 / a0)
    self.a2 = Float(a2 / a0)
  }

  /// RBJ high-pass.
  /// - Realtime: safe
  public static func highPass(frequencyHz: Double, q: Double, sampleRate: Double) -> Self {
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / (2 * q)
    let c = cos(w0)
    return Self(b0: (1 + c) / 2, b1: -(1 + c), b2: (1 + c) / 2, a0: 1 + alpha, a1: -2 * c, a2: 1 - alpha)
  }

  /// RBJ band-pass with a constant 0 dB peak gain at `frequencyHz`.
  /// - Realtime: safe
  public static func bandPass(frequencyHz: Double, q: Double, sampleRate: Double) -> Self {
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / (2 * q)
    let c = cos(w0)
    return Self(b0: alpha, b1: 0, b2: -alpha, a0: 1 + alpha, a1: -2 * c, a2: 1 - alpha)
  }

  /// RBJ peaking EQ.
  /// - Realtime: safe
  public static func peaking(frequencyHz: Double, q: Double, gainDecibels: Double, sampleRate: Double) -> Self
  {
    let a = pow(10, gainDecibels / 40)
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / (2 * q)
    let c = cos(w0)
    return Self(
      b0: 1 + alpha * a, b1: -2 * c, b2: 1 - alpha * a, a0: 1 + alpha / a, a1: -2 * c, a2: 1 - alpha / a)
  }

  /// RBJ low shelf with shelf slope `slope` (S; 1 is the steepest monotonic slope). Same
  /// formula as `sox bass gain frequency slope`s.
  /// - Realtime: safe
  public static func lowShelf(frequencyHz: Double, slope: Double, gainDecibels: Double, sampleRate: Double)
    -> Self
  {
    let (a, c, s) = shelf(
      frequencyHz: frequencyHz, slope: slope, gainDecibels: gainDecibels, sampleRate: sampleRate)
    return Self(
      b0: a * ((a + 1) - (a - 1) * c + s), b1: 2 * a * ((a - 1) - (a + 1) * c),
      b2: a * ((a + 1) - (a - 1) * c - s), a0: (a + 1) + (a - 1) * c + s,
      a1: -2 * ((a - 1) + (a + 1) * c), a2: (a + 1) + (a - 1) * c - s)
  }

  /// The RBJ shelf terms both shelves share: A (the square root of the gain), cos ω0 and
  /// 2·√A·α.
  /// - Realtime: safe
  private static func shelf(frequencyHz: Double, slope: Double, gainDecibels: Double, sampleRate: Double)
    -> (a: Double, cosine: Double, s: Double)
  {
    let a = pow(10, gainDecibels / 40)
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / 2 * sqrt((a + 1 / a) * (1 / slope - 1) + 2)
    return (a, cos(w0), 2 * sqrt(a) * alpha)
  }

  /// RBJ high shelf with shelf slope `slope`. Same formula as `sox treble`.
  /// - Realtime: safe
  public static func highShelf(frequencyHz: Double, slope: Double, gainDecibels: Double, sampleRate: Double)
    -> Self
  {
    let (a, c, s) = shelf(
      frequencyHz: frequencyHz, slope: slope, gainDecibels: gainDecibels, sampleRate: sampleRate)
    return Self(
      b0: a * ((a + 1) + (a - 1) * c + s), b1: -2 * a * ((a - 1) + (a + 1) * c),
      b2: a * ((a + 1) + (a - 1) * c - s), a0: (a + 1) - (a - 1) * c + s,
      a1: 2 * ((a - 1) - (a + 1) * c), a2: (a + 1) - (a - 1) * c - s)
  }

  /// The magnitude response in dB at `frequencyHz`, from the coefficients.
  public func magnitudeDecibels(atHz frequencyHz: Double, sampleRate: Double) -> Double {
    let w = 2 * Double.pi * frequencyHz / sampleRate
    let (c1, s1, c2, s2) = (cos(w), sin(w), cos(2 * w), sin(2 * w))
    let nr = Double(b0) + Double(b1) * c1 + Double(b2) * c2
    let ni = -(Double(b1) * s1 + Double(b2) * s2)
    let dr = 1 + Double(a1) * c1 + Double(a2) * c2
    let di = -(Double(a1) * s1 + Double(a2) * s2)
    return 10 * log10((nr * nr + ni * ni) / (dr * dr + di * di))
  }
}

/// A stereo biquad (direct form I) with denormal-flushed state.
///
/// Direct form I keeps the past inputs and outputs as its state, which do not depend on the
/// coefficients, so coefficient updates (every sub-block while a parameter is smoothed) join the
/// old and new filters without clicks. (Transposed direct form II keeps coefficient-weighted
/// sums, which each update left inconsistent with the new coefficients: a 0.25 sine at 100 Hz
/// through a +20 dB treble shelf smoothed down to -20 dB stepped by up to 0.11, 34 times the
/// sine's own largest step.)
///
/// Speed: both channels run together as one `SIMD2` (left, right), and the sum is ordered
/// `b0·x + (b1·x1 + b2·x2) − a2·y2 − a1·y1`: from one output to the next is one multiply and one
/// subtraction (the input terms still meet before the output terms, which keeps the round-off of a
/// low high-pass's deep stopband where the response tests expect it). Cascades of two or three
/// sections run in one loop, where their chains overlap.
///
/// Thread: the thread that owns it.
public struct StereoBiquad {
  public var coefficients = BiquadCoefficients()
  private var lx1: Float = 0, lx2: Float = 0, ly1: Float = 0, ly2: Float = 0
  private var rx1: Float = 0, rx2: Float = 0, ry1: Float = 0, ry2: Float = 0

  /// - Realtime: safe
  public init() {}

  /// - Realtime: safe
  public mutating func reset() {
    (lx1, lx2, ly1, ly2) = (0, 0, 0, 0)
    (rx1, rx2, ry1, ry2) = (0, 0, 0, 0)
  }

  /// Filters one block in place.
  /// - Realtime: safe
  @inline(__always)
  public mutating func process(_ block: StereoBlock) {
    var a = Section(self)
    for f in 0..<block.frames {
      // Both channels are read before either is written (see `applyRampedGain`).
      let y = a.step(SIMD2(block.left[f], block.right[f]))
      block.left[f] = y.x
      block.right[f] = y.y
    }
    a.store(into: &self)
  }

  /// Filters one block in place through `first`, then `second`.
  /// - Realtime: safe
  @inline(__always)
  public static func process(
    _ first: inout StereoBiquad, _ second: inout StereoBiquad, _ block: StereoBlock
  ) {
    var (a, b) = (Section(first), Section(second))
    for f in 0..<block.frames {
      let y = b.step(a.step(SIMD2(block.left[f], block.right[f])))
      block.left[f] = y.x
      block.right[f] = y.y
    }
    a.store(into: &first)
    b.store(into: &second)
  }

  /// Filters one block in place through `first`, `second`, then `third`.
  /// - Realtime: safe
  @inline(__always)
  public static func process(
    _ first: inout StereoBiquad, _ second: inout StereoBiquad, _ third: inout StereoBiquad,
    _ block: StereoBlock
  ) {
    var (a, b, c) = (Section(first), Section(second), Section(third))
    for f in 0..<block.frames {
      let y = c.step(b.step(a.step(SIMD2(block.left[f], block.right[f]))))
      block.left[f] = y.x
      block.right[f] = y.y
    }
    a.store(into: &first)
    b.store(into: &second)
    c.store(into: &third)
  }

  /// Runs `frames` frames of `left`/`right` through `first`, then `second`, leaving the signal
  /// unchanged, and returns the sum of the squared outputs over both channels and the input's
  /// sample peak (a weighted energy meter, such as loudness's K-weighting).
  /// - Realtime: safe
  @inline(__always)
  public static func measure(
    _ first: inout StereoBiquad, _ second: inout StereoBiquad, left: UnsafePointer<Float>,
    right: UnsafePointer<Float>, frames: Int
  ) -> (energy: Float, peak: Float) {
    var (a, b) = (Section(first), Section(second))
    var energy = SIMD2<Float>()
    var peak = SIMD2<Float>()
    for f in 0..<frames {
      let x = SIMD2(left[f], right[f])
      peak = pointwiseMax(peak, pointwiseMax(x, -x))
      let y = b.step(a.step(x))
      energy += y * y
    }
    a.store(into: &first)
    b.store(into: &second)
    return (energy.sum(), peak.max())
  }

  /// One section's coefficients and state as (left, right) vectors, for the length of a block.
  private struct Section {
    let b0, b1, b2, a1, a2: SIMD2<Float>
    var x1, x2, y1, y2: SIMD2<Float>

    /// - Realtime: safe
    @inline(__always)
    init(_ q: StereoBiquad) {
      let c = q.coefficients
      (b0, b1, b2) = (SIMD2(repeating: c.b0), SIMD2(repeating: c.b1), SIMD2(repeating: c.b2))
      (a1, a2) = (SIMD2(repeating: c.a1), SIMD2(repeating: c.a2))
      (x1, x2) = (SIMD2(q.lx1, q.rx1), SIMD2(q.lx2, q.rx2))
      (y1, y2) = (SIMD2(q.ly1, q.ry1), SIMD2(q.ly2, q.ry2))
    }

    /// - Realtime: safe
    @inline(__always)
    mutating func step(_ x: SIMD2<Float>) -> SIMD2<Float> {
      let y = b0 * x + (b1 * x1 + b2 * x2) - a2 * y2 - a1 * y1
      (x2, x1, y2, y1) = (x1, x, y1, y)
      return y
    }

    /// Writes the state back, flushed.
    /// - Realtime: safe
    @inline(__always)
    func store(into q: inout StereoBiquad) {
      (q.lx1, q.lx2) = (DSPMath.flush(x1.x), DSPMath.flush(x2.x))
      (q.ly1, q.ly2) = (DSPMath.flush(y1.x), DSPMath.flush(y2.x))
      (q.rx1, q.rx2) = (DSPMath.flush(x1.y), DSPMath.flush(x2.y))
      (q.ry1, q.ry2) = (DSPMath.flush(y1.y), DSPMath.flush(y2.y))
    }
  }
}
