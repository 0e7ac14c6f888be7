#if canImport(Glibc)
  import Glibc
#endif

/// Automatic gain control for speech: slowly brings the voice's RMS level to `target_db`.
///
/// Detectors (on the mean of both channels): a fast power envelope (50 ms) decides whether the
/// voice is present (above `gate_db`); only then does the slow level (RMS over ~400 ms) follow
/// the signal and the gain move, so pauses, breaths and room noise between phrases neither pull
/// the level estimate down nor get boosted: the gain is held. The gain moves towards
/// `target_db − level` (limited to −24 dB … `max_gain_db`) in dB with time constant `time_s`
/// when rising and a quarter of it when falling (a sudden loud voice comes down faster than a
/// quiet one comes up), updated once per sub-block and ramped linearly within it. No latency.
/// Its current gain is the read-only `gain_db`.
public struct Leveler: VoiceUnit {
  public static let typeName = "leveler"
  public static let summary =
    "Automatic gain control that slowly brings speech to a target level and holds in pauses."
  public static let parameters = [
    ParameterSpec("target_db", unit: "dBFS", range: -40...0, default: -20, "Speech level (RMS) to reach."),
    ParameterSpec("max_gain_db", unit: "dB", range: 0...30, default: 15, "Largest gain applied."),
    ParameterSpec(
      "gate_db", unit: "dBFS", range: -80 ... -20, default: -50,
      "Level below which the gain is held (silence and noise between phrases are not boosted)."),
    ParameterSpec(
      "time_s", unit: "s", range: 0.2...10, default: 1.5,
      "Time constant of rising gain (falling is 4× faster)."),
    ParameterSpec(
      "gain_db", unit: "dB", range: -24...30, default: 0, kind: .output, "The gain applied now (read-only)."),
  ]
  /// Lowest gain applied.
  public static let minimumGainDecibels: Float = -24

  private var sampleRate: Float = 48000
  private var fast: Float = 0
  private var slow: Float = 0
  private var fastCoefficient: Float = 0
  private var slowCoefficient: Float = 0
  /// The gain in dB and as a factor (at the end of the last sub-block).
  private var gainDecibels: Float = 0
  private var gain: Float = 1

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    fastCoefficient = DSPMath.onePoleCoefficient(milliseconds: 50, sampleRate: self.sampleRate)
    slowCoefficient = DSPMath.onePoleCoefficient(milliseconds: 400, sampleRate: self.sampleRate)
    reset()
  }

  /// - Realtime: safe
  public mutating func reset() {
    fast = 0
    slow = 0
    gainDecibels = 0
    gain = 1
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 4 ? gainDecibels : 0 }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let gate = DSPMath.gain(decibels: p.current(2))
    let gatePower = gate * gate
    let (fc, sc) = (fastCoefficient, slowCoefficient)
    var (fastPower, slowPower) = (fast, slow)
    var active = 0
    for f in 0..<block.frames {
      let m = 0.5 * (block.left[f] + block.right[f])
      let e = m * m
      fastPower += (e - fastPower) * fc
      if fastPower >= gatePower {
        slowPower += (e - slowPower) * sc
        active += 1
      }
    }
    (fast, slow) = (DSPMath.flush(fastPower), DSPMath.flush(slowPower))
    // The gain moves only by the share of the sub-block the voice was present.
    var next = gainDecibels
    if active > 0 && slowPower > 0 {
      let level = 10 * log10f(slowPower)
      let wanted = min(max(p.current(0) - level, Self.minimumGainDecibels), p.current(1))
      let seconds = p.current(3) * (wanted > gainDecibels ? 1 : 0.25)
      let alpha = 1 - expf(-Float(active) / (seconds * sampleRate))
      next += (wanted - next) * alpha
    }
    // Lowering max_gain_db applies at once (smoothed like any parameter).
    next = min(next, p.current(1))
    let from = gain
    let to = next == gainDecibels ? gain : DSPMath.gain(decibels: next)
    gainDecibels = next
    gain = to
    let step = (to - from) / Float(block.frames)
    for f in 0..<block.frames {
      let g = from + step * Float(f + 1)
      block.left[f] *= g
      block.right[f] *= g
    }
  }
}
