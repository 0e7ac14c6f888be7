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

  public init() {}

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

  /// RBJ peaking EQ.
  /// - Realtime: safe
  public static func peaking(frequencyHz: Double, q: Double, gainDecibels: Double, sampleRate: Double) -> Self {
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
  public static func lowShelf(frequencyHz: Double, slope: Double, gainDecibels: Double, sampleRate: Double) -> Self {
    let a = pow(10, gainDecibels / 40)
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / 2 * sqrt((a + 1 / a) * (1 / slope - 1) + 2)
    let c = cos(w0)
    let s = 2 * sqrt(a) * alpha
    return Self(
      b0: a * ((a + 1) - (a - 1) * c + s), b1: 2 * a * ((a - 1) - (a + 1) * c),
      b2: a * ((a + 1) - (a - 1) * c - s), a0: (a + 1) + (a - 1) * c + s,
      a1: -2 * ((a - 1) + (a + 1) * c), a2: (a + 1) + (a - 1) * c - s)
  }

  /// RBJ high shelf with shelf slope `slope`. Same formula as `sox treble`.
  /// - Realtime: safe
  public static func highShelf(frequencyHz: Double, slope: Double, gainDecibels: Double, sampleRate: Double) -> Self {
    let a = pow(10, gainDecibels / 40)
    let w0 = 2 * Double.pi * min(frequencyHz, sampleRate * 0.49) / sampleRate
    let alpha = sin(w0) / 2 * sqrt((a + 1 / a) * (1 / slope - 1) + 2)
    let c = cos(w0)
    let s = 2 * sqrt(a) * alpha
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

/// A stereo biquad (transposed direct form II) with denormal-flushed state.
///
/// Thread: the thread that owns it.
public struct StereoBiquad {
  public var coefficients = BiquadCoefficients()
  private var l1: Float = 0, l2: Float = 0, r1: Float = 0, r2: Float = 0

  public init() {}

  /// - Realtime: safe
  public mutating func reset() { (l1, l2, r1, r2) = (0, 0, 0, 0) }

  /// Filters one block in place.
  /// - Realtime: safe
  @inline(__always)
  public mutating func process(_ block: StereoBlock) {
    let c = coefficients
    var (z1, z2) = (l1, l2)
    for f in 0..<block.frames {
      let x = block.left[f]
      let y = c.b0 * x + z1
      z1 = c.b1 * x - c.a1 * y + z2
      z2 = c.b2 * x - c.a2 * y
      block.left[f] = y
    }
    l1 = DSPMath.flush(z1)
    l2 = DSPMath.flush(z2)
    (z1, z2) = (r1, r2)
    for f in 0..<block.frames {
      let x = block.right[f]
      let y = c.b0 * x + z1
      z1 = c.b1 * x - c.a1 * y + z2
      z2 = c.b2 * x - c.a2 * y
      block.right[f] = y
    }
    r1 = DSPMath.flush(z1)
    r2 = DSPMath.flush(z2)
  }
}
