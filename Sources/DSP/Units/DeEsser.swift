#if canImport(Glibc)
  import Glibc
#endif

/// Split-band de-esser: turns down only the sibilance band, and only while it is loud.
///
/// Side chain: the mean of both channels through a 4th-order high-pass at 0.65 × `freq_hz`
/// (two RBJ sections, Q 0.707), then a power envelope (1 ms attack, 60 ms release) in dB. The
/// reduction is how far that level is above `threshold_db`, at most `depth_db`, smoothed
/// (1 ms attack, 80 ms release). Split: a band-pass (RBJ, 0 dB peak at `freq_hz`, Q 0.8) of each
/// channel is scaled by the reduction's gain g and the rest passes untouched:
/// y = x + (g − 1)·bandpass(x). With the defaults and full depth the band's centre drops 12 dB,
/// 5 kHz ~5.5 dB, while 2 kHz moves by less than 0.6 dB and 200 Hz by less than 0.01 dB. No
/// latency.
public struct DeEsser: VoiceUnit {
  public static let typeName = "deesser"
  public static let summary = "De-esser that turns down the 5–9 kHz band while sibilants are loud."
  public static let parameters = [
    ParameterSpec(
      "threshold_db", unit: "dBFS", range: -60...0, default: -30,
      "Level of the sibilance band (RMS) above which it is turned down."),
    ParameterSpec("depth_db", unit: "dB", range: 0...24, default: 12, "Largest reduction of the band."),
    ParameterSpec("freq_hz", unit: "Hz", range: 3000...12000, default: 7000, "Centre of the reduced band."),
  ]
  /// Both channels' band-pass state (left, right), the side chain's two high-pass sections.
  private var band = Section()
  private var side1 = Section(), side2 = Section()
  private var sampleRate: Float = 48000
  private var power: Float = 0
  /// The smoothed reduction, in dB (≥ 0).
  private var reduction: Float = 0
  private var powerAttack: Float = 0, powerRelease: Float = 0
  private var attack: Float = 0, release: Float = 0
  private var frequency = Float.nan

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    powerAttack = DSPMath.onePoleCoefficient(milliseconds: 1, sampleRate: self.sampleRate)
    powerRelease = DSPMath.onePoleCoefficient(milliseconds: 60, sampleRate: self.sampleRate)
    attack = DSPMath.onePoleCoefficient(milliseconds: 1, sampleRate: self.sampleRate)
    release = DSPMath.onePoleCoefficient(milliseconds: 80, sampleRate: self.sampleRate)
    frequency = .nan
    reset()
  }

  /// - Realtime: safe
  public mutating func reset() {
    band.clear()
    side1.clear()
    side2.clear()
    power = 0
    reduction = 0
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let freq = p.current(2)
    if freq != frequency {
      frequency = freq
      let rate = Double(sampleRate)
      band.set(.bandPass(frequencyHz: Double(freq), q: 0.8, sampleRate: rate))
      let hp = BiquadCoefficients.highPass(frequencyHz: 0.65 * Double(freq), q: 0.707, sampleRate: rate)
      side1.set(hp)
      side2.set(hp)
    }
    let threshold = p.current(0)
    let depth = p.current(1)
    var (pw, red) = (power, reduction)
    let (pa, pr, a, r) = (powerAttack, powerRelease, attack, release)
    var (b, s1, s2) = (band, side1, side2)
    for f in 0..<block.frames {
      let x = SIMD2(block.left[f], block.right[f])
      let mono = 0.5 * (x.x + x.y)
      let s = s2.step(s1.step(SIMD2(repeating: mono))).x
      let e = s * s
      pw += (e - pw) * (e > pw ? pa : pr)
      // 10·log10 of the power; above the threshold by `over` dB.
      let over = 10 * log10f(pw + 1e-20) - threshold
      let wanted = smaller(larger(over, 0), depth)
      red += (wanted - red) * (wanted > red ? a : r)
      let bp = b.step(x)
      let y = red > 1e-4 ? x + (powf(10, -red / 20) - 1) * bp : x
      block.left[f] = y.x
      block.right[f] = y.y
    }
    (power, reduction) = (DSPMath.flush(pw), DSPMath.flush(red))
    b.flush()
    s1.flush()
    s2.flush()
    (band, side1, side2) = (b, s1, s2)
  }

  /// One biquad section (direct form I) on (left, right).
  struct Section {
    var b0: Float = 1, b1: Float = 0, b2: Float = 0, a1: Float = 0, a2: Float = 0
    var x1 = SIMD2<Float>(), x2 = SIMD2<Float>(), y1 = SIMD2<Float>(), y2 = SIMD2<Float>()

    /// - Realtime: safe
    mutating func set(_ c: BiquadCoefficients) { (b0, b1, b2, a1, a2) = (c.b0, c.b1, c.b2, c.a1, c.a2) }
    /// - Realtime: safe
    mutating func clear() { (x1, x2, y1, y2) = (.zero, .zero, .zero, .zero) }

    /// - Realtime: safe
    @inline(__always)
    mutating func step(_ x: SIMD2<Float>) -> SIMD2<Float> {
      let y = b0 * x + (b1 * x1 + b2 * x2) - a2 * y2 - a1 * y1
      (x2, x1, y2, y1) = (x1, x, y1, y)
      return y
    }

    /// - Realtime: safe
    mutating func flush() {
      (x1, x2, y1, y2) = (x1.flushed(), x2.flushed(), y1.flushed(), y2.flushed())
    }
  }
}
