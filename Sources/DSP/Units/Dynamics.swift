#if canImport(Glibc)
  import Glibc
#endif

/// Noise gate with hysteresis and hold: opens when the level (peak of both channels) rises above
/// the threshold, closes once it has stayed below threshold − hysteresis for the hold time.
public struct NoiseGate: VoiceUnit {
  public static let typeName = "gate"
  public static let summary = "Noise gate that mutes room noise between phrases."
  public static let parameters = [
    ParameterSpec("threshold_db", unit: "dBFS", range: -96...0, default: -60, "Level that opens the gate."),
    ParameterSpec("hysteresis_db", unit: "dB", range: 0...24, default: 6, "How far below the threshold the level must fall to close."),
    ParameterSpec("attack_ms", unit: "ms", range: 0.1...100, default: 1, "Opening time."),
    ParameterSpec("hold_ms", unit: "ms", range: 0...2000, default: 100, "Time the gate stays open after the level falls."),
    ParameterSpec("release_ms", unit: "ms", range: 5...4000, default: 200, "Closing time."),
    ParameterSpec("range_db", unit: "dB", range: -96...0, default: -60, "Attenuation when closed."),
  ]
  private var sampleRate: Float = 48000
  private var envelope: Float = 0
  private var gain: Float = 1
  private var open = true
  private var holdRemaining = 0

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
  }

  public mutating func reset() {
    envelope = 0
    gain = 1
    open = true
    holdRemaining = 0
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let openLevel = DSPMath.gain(decibels: p.current(0))
    let closeLevel = DSPMath.gain(decibels: p.current(0) - p.current(1))
    let attack = DSPMath.onePoleCoefficient(milliseconds: p.current(2), sampleRate: sampleRate)
    let holdFrames = Int(p.current(3) * 0.001 * sampleRate)
    let release = DSPMath.onePoleCoefficient(milliseconds: p.current(4), sampleRate: sampleRate)
    let floor = DSPMath.gain(decibels: p.current(5))
    let envelopeDecay = DSPMath.onePoleCoefficient(milliseconds: 10, sampleRate: sampleRate)
    var (env, g, isOpen, hold) = (envelope, gain, open, holdRemaining)
    for f in 0..<block.frames {
      // Both channels are read before either is written (left and right buffers may be 4 KiB
      // apart, and a store to one would stall the load of the other).
      let (l, r) = (block.left[f], block.right[f])
      let level = max(abs(l), abs(r))
      env = level > env ? level : env + (level - env) * envelopeDecay
      if env >= openLevel {
        isOpen = true
        hold = holdFrames
      } else if env < closeLevel {
        if hold > 0 { hold -= 1 } else { isOpen = false }
      }
      g += isOpen ? (1 - g) * attack : (floor - g) * release
      block.left[f] = l * g
      block.right[f] = r * g
    }
    (envelope, gain, open, holdRemaining) = (DSPMath.flush(env), DSPMath.flush(g), isOpen, hold)
  }
}

/// Feed-forward compressor with a soft knee, stereo-linked, in the log domain.
public struct Compressor: VoiceUnit {
  public static let typeName = "compressor"
  public static let summary = "Compressor that evens out the voice's level."
  public static let parameters = [
    ParameterSpec("threshold_db", unit: "dBFS", range: -60...0, default: -18, "Level above which gain is reduced."),
    ParameterSpec("ratio", unit: ":1", range: 1...20, default: 3, "Input dB over threshold per output dB."),
    ParameterSpec("knee_db", unit: "dB", range: 0...24, default: 6, "Width of the soft knee around the threshold."),
    ParameterSpec("attack_ms", unit: "ms", range: 0.1...200, default: 10, "Time to reduce gain."),
    ParameterSpec("release_ms", unit: "ms", range: 5...2000, default: 150, "Time to restore gain."),
    ParameterSpec("makeup_db", unit: "dB", range: 0...24, default: 0, "Gain added after compression."),
  ]
  private var sampleRate: Float = 48000
  private var reductionDecibels: Float = 0

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
  }

  public mutating func reset() { reductionDecibels = 0 }

  /// The static gain reduction (positive dB) for an input level, with a quadratic soft knee.
  /// - Realtime: safe
  @inline(__always)
  public static func reduction(levelDecibels x: Float, threshold t: Float, ratio r: Float, knee w: Float) -> Float {
    let over = x - t
    let slope = 1 - 1 / r
    if 2 * over <= -w { return 0 }
    if w > 0 && 2 * abs(over) < w {
      let k = over + w / 2
      return slope * k * k / (2 * w)
    }
    return slope * over
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let (threshold, ratio, knee) = (p.current(0), p.current(1), p.current(2))
    let attack = DSPMath.onePoleCoefficient(milliseconds: p.current(3), sampleRate: sampleRate)
    let release = DSPMath.onePoleCoefficient(milliseconds: p.current(4), sampleRate: sampleRate)
    let makeupFrom = p.previous(5)
    let makeupStep = (p.current(5) - makeupFrom) / Float(block.frames)
    // Below this level no reduction can apply: skip the logarithm.
    let quietLevel = DSPMath.gain(decibels: threshold - knee / 2 - 1)
    var reduction = reductionDecibels
    var makeup = makeupFrom
    for f in 0..<block.frames {
      // Both channels are read before either is written (left and right buffers may be 4 KiB
      // apart, and a store to one would stall the load of the other).
      let (l, r) = (block.left[f], block.right[f])
      let level = max(abs(l), abs(r))
      let wanted =
        level < quietLevel
        ? 0 : Self.reduction(levelDecibels: 20 * log10f(level), threshold: threshold, ratio: ratio, knee: knee)
      reduction += (wanted - reduction) * (wanted > reduction ? attack : release)
      makeup += makeupStep
      let g = expf((makeup - reduction) * 0.115_129_254_649_702_28)  // 10^(dB/20)
      block.left[f] = l * g
      block.right[f] = r * g
    }
    reductionDecibels = DSPMath.flush(reduction)
  }
}

/// Zero-latency peak limiter: instant attack (the output never exceeds the ceiling), smooth
/// release, stereo-linked.
public struct Limiter: VoiceUnit {
  public static let typeName = "limiter"
  public static let summary = "Brick-wall safety limiter: the output never exceeds the ceiling."
  public static let parameters = [
    ParameterSpec("ceiling_db", unit: "dBFS", range: -40...0, default: -1, "Highest output peak."),
    ParameterSpec("release_ms", unit: "ms", range: 1...1000, default: 60, "Time to restore gain after a peak."),
  ]
  private var sampleRate: Float = 48000
  private var gain: Float = 1

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
  }

  public mutating func reset() { gain = 1 }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let from = DSPMath.gain(decibels: p.previous(0))
    let to = DSPMath.gain(decibels: p.current(0))
    let step = (to - from) / Float(block.frames)
    let release = DSPMath.onePoleCoefficient(milliseconds: p.current(1), sampleRate: sampleRate)
    var g = gain
    var ceiling = from
    for f in 0..<block.frames {
      ceiling += step
      let l = block.left[f]
      let r = block.right[f]
      let peak = max(abs(l), abs(r))
      let wanted = peak > ceiling ? ceiling / peak : 1
      g = wanted < g ? wanted : g + (wanted - g) * release
      block.left[f] = min(max(l * g, -ceiling), ceiling)
      block.right[f] = min(max(r * g, -ceiling), ceiling)
    }
    gain = g
  }
}
