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
    ParameterSpec(
      "hysteresis_db", unit: "dB", range: 0...24, default: 6,
      "How far below the threshold the level must fall to close."),
    ParameterSpec("attack_ms", unit: "ms", range: 0.1...100, default: 1, "Opening time."),
    ParameterSpec(
      "hold_ms", unit: "ms", range: 0...2000, default: 100, "Time the gate stays open after the level falls."),
    ParameterSpec("release_ms", unit: "ms", range: 5...4000, default: 200, "Closing time."),
    ParameterSpec("range_db", unit: "dB", range: -96...0, default: -60, "Attenuation when closed."),
  ]
  private var sampleRate: Float = 48000
  private var envelope: Float = 0
  private var gain: Float = 1
  private var open = true
  private var holdRemaining = 0
  /// The level detector's per-frame decay (10 ms).
  private var envelopeDecay: Float = 0
  private var openLevel = Derived(), closeLevel = Derived(), floor = Derived()
  private var attack = Derived(), release = Derived()

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    envelopeDecay = DSPMath.onePoleCoefficient(milliseconds: 10, sampleRate: self.sampleRate)
    (openLevel, closeLevel, floor, attack, release) = (Derived(), Derived(), Derived(), Derived(), Derived())
  }

  /// - Realtime: safe
  public mutating func reset() {
    envelope = 0
    gain = 1
    open = true
    holdRemaining = 0
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let rate = sampleRate
    let openLevel = self.openLevel(p.current(0)) { DSPMath.gain(decibels: $0) }
    let closeLevel = self.closeLevel(p.current(0) - p.current(1)) { DSPMath.gain(decibels: $0) }
    let attack = self.attack(p.current(2)) { DSPMath.onePoleCoefficient(milliseconds: $0, sampleRate: rate) }
    let holdFrames = Int(p.current(3) * 0.001 * rate)
    let release = self.release(p.current(4)) {
      DSPMath.onePoleCoefficient(milliseconds: $0, sampleRate: rate)
    }
    let floor = self.floor(p.current(5)) { DSPMath.gain(decibels: $0) }
    let envelopeDecay = self.envelopeDecay
    // The recursions as x·k + c: one multiply and one add from one frame's value to the next.
    // The envelope follows a rise at once and otherwise decays: the larger of the level and the
    // decayed envelope.
    let envelopeKeep = 1 - envelopeDecay
    let (openKeep, openAdd) = (1 - attack, attack)
    let (closedKeep, closedAdd) = (1 - release, floor * release)
    var (env, g, isOpen, hold) = (envelope, gain, open, holdRemaining)
    for f in 0..<block.frames {
      // Both channels are read before either is written (left and right buffers may be 4 KiB
      // apart, and a store to one would stall the load of the other).
      let (l, r) = (block.left[f], block.right[f])
      let level = larger(abs(l), abs(r))
      let decayed = env * envelopeKeep + level * envelopeDecay
      env = larger(decayed, level)
      if env >= openLevel {
        isOpen = true
        hold = holdFrames
      } else if env < closeLevel {
        if hold > 0 { hold -= 1 } else { isOpen = false }
      }
      g = isOpen ? g * openKeep + openAdd : g * closedKeep + closedAdd
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
    ParameterSpec(
      "threshold_db", unit: "dBFS", range: -60...0, default: -18, "Level above which gain is reduced."),
    ParameterSpec("ratio", unit: ":1", range: 1...20, default: 3, "Input dB over threshold per output dB."),
    ParameterSpec(
      "knee_db", unit: "dB", range: 0...24, default: 6, "Width of the soft knee around the threshold."),
    ParameterSpec("attack_ms", unit: "ms", range: 0.1...200, default: 10, "Time to reduce gain."),
    ParameterSpec("release_ms", unit: "ms", range: 5...2000, default: 150, "Time to restore gain."),
    ParameterSpec("makeup_db", unit: "dB", range: 0...24, default: 0, "Gain added after compression."),
    ParameterSpec(
      "gain_reduction_db", unit: "dB", range: 0...96, default: 0, kind: .output,
      "Reported: the gain reduction now (read-only)."),
  ]
  private var sampleRate: Float = 48000
  private var reductionDecibels: Float = 0
  private var attack = Derived(), release = Derived(), quietLevel = Derived()

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    (attack, release, quietLevel) = (Derived(), Derived(), Derived())
  }

  /// - Realtime: safe
  public mutating func reset() { reductionDecibels = 0 }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 6 ? max(reductionDecibels, 0) : 0 }

  /// The static gain reduction (positive dB) for an input level, with a quadratic soft knee.
  /// - Realtime: safe
  @inline(__always)
  public static func reduction(levelDecibels x: Float, threshold t: Float, ratio r: Float, knee w: Float)
    -> Float
  {
    let over = x - t
    let slope = 1 - 1 / r
    if 2 * over <= -w { return 0 }
    if w > 0 && 2 * abs(over) < w {
      let k = over + w / 2
      return slope * k * k / (2 * w)
    }
    return slope * over
  }

  /// `reduction` for four levels at once: the same arithmetic, lane by lane.
  /// - Realtime: safe
  @inline(__always)
  static func reduction(
    levelDecibels x: SIMD4<Float>, threshold t: Float, ratio r: Float, knee w: Float
  ) -> SIMD4<Float> {
    let over = x - t
    let slope = 1 - 1 / r
    var y = slope * over
    if w > 0 {
      let k = over + w / 2
      let twice = 2 * over
      y = y.replacing(with: slope * k * k / (2 * w), where: (twice .< w) .& (twice .> -w))  // 2·|over| < w
    }
    // Below the knee (2·over ≤ −w) `y` is slope·over ≤ 0 and the curve is 0; everywhere else
    // it is ≥ 0: so the curve is max(y, 0) (a `maxps`, where a select on 2·over ≤ −w compiles
    // to branches).
    return y.replacing(with: 0, where: y .< 0)
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let rate = sampleRate
    let (threshold, ratio, knee) = (p.current(0), p.current(1), p.current(2))
    let attack = self.attack(p.current(3)) { DSPMath.onePoleCoefficient(milliseconds: $0, sampleRate: rate) }
    let release = self.release(p.current(4)) {
      DSPMath.onePoleCoefficient(milliseconds: $0, sampleRate: rate)
    }
    let makeupFrom = p.previous(5)
    let makeupStep = (p.current(5) - makeupFrom) / Float(block.frames)
    // Below this level no reduction can apply: four frames under it skip the logarithm.
    let quiet = SIMD4(repeating: quietLevel(threshold - knee / 2 - 1) { DSPMath.gain(decibels: $0) })
    var reduction = reductionDecibels
    /// The wanted reductions (dB) for four frames from `f`.
    /// - Realtime: safe
    @inline(__always)
    func wanted(_ f: Int) -> SIMD4<Float> {
      let (ml, mr) = (FastMath.magnitude(block.left.load4(f)), FastMath.magnitude(block.right.load4(f)))
      let level = ml.replacing(with: mr, where: mr .> ml)  // (a `maxps`)
      if all(level .< quiet) { return SIMD4() }
      return Self.reduction(
        levelDecibels: FastMath.decibelsPerOctave * FastMath.log2(level), threshold: threshold, ratio: ratio,
        knee: knee)
    }
    /// One frame of the attack/release smoothing: the one chain of dependent steps.
    /// - Realtime: safe
    @inline(__always)
    func smooth(_ wanted: Float) -> Float {
      // (`wanted > reduction`, not `difference > 0`: the choice then need not wait for the
      // subtraction.)
      reduction += (wanted - reduction) * (wanted > reduction ? attack : release)
      return reduction
    }
    /// The gains for four frames' smoothed reductions, from frame `f`.
    /// - Realtime: safe
    @inline(__always)
    func gains(_ reductions: SIMD4<Float>, from f: Int) -> SIMD4<Float> {
      let makeup = makeupFrom + makeupStep * (SIMD4.ramp + Float(f))
      return FastMath.exp2((makeup - reductions) * FastMath.octavesPerDecibel)
    }
    // Four frames at a time, the next four's wanted reductions computed a step ahead so that the
    // smoothing never waits for them.
    let full = block.frames & ~3
    var next = full > 0 ? wanted(0) : SIMD4()
    var f = 0
    while f < full {
      let w = next
      if f + 4 < full { next = wanted(f + 4) }
      let g = gains(SIMD4(smooth(w[0]), smooth(w[1]), smooth(w[2]), smooth(w[3])), from: f)
      let (l, r) = (block.left.load4(f), block.right.load4(f))
      block.left.store4(f, l * g)
      block.right.store4(f, r * g)
      f += 4
    }
    // A last frame or three, each as a vector of four copies.
    while f < block.frames {
      let (l, r) = (block.left[f], block.right[f])
      let (ml, mr) = (FastMath.magnitude(SIMD4(repeating: l)), FastMath.magnitude(SIMD4(repeating: r)))
      let w = Self.reduction(
        levelDecibels: FastMath.decibelsPerOctave * FastMath.log2(ml.replacing(with: mr, where: mr .> ml)),
        threshold: threshold, ratio: ratio, knee: knee)
      let g = gains(SIMD4(repeating: smooth(w[0])), from: f)
      block.left[f] = l * g[0]
      block.right[f] = r * g[0]
      f += 1
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
    ParameterSpec(
      "release_ms", unit: "ms", range: 1...1000, default: 60, "Time to restore gain after a peak."),
    ParameterSpec(
      "gain_reduction_db", unit: "dB", range: 0...96, default: 0, kind: .output,
      "Reported: the deepest gain reduction lately, falling back at 20 dB/s (read-only)."),
  ]
  private var sampleRate: Float = 48000
  private var gain: Float = 1
  /// The reported gain reduction (dB): the deepest of each block, falling back at 20 dB/s.
  private var shownReductionDecibels: Float = 0
  private var ceiling = Derived(), release = Derived()

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    (ceiling, release) = (Derived(), Derived())
  }

  /// - Realtime: safe
  public mutating func reset() {
    gain = 1
    shownReductionDecibels = 0
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 2 ? shownReductionDecibels : 0 }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let rate = sampleRate
    // The previous block's end is this one's start: only a changing ceiling costs a `powf`.
    let from = ceiling.cached(p.previous(0)) ?? DSPMath.gain(decibels: p.previous(0))
    let to = ceiling(p.current(0)) { DSPMath.gain(decibels: $0) }
    let step = (to - from) / Float(block.frames)
    let release = self.release(p.current(1)) {
      DSPMath.onePoleCoefficient(milliseconds: $0, sampleRate: rate)
    }
    let keep = 1 - release
    var g = gain
    var lowest: Float = 1
    for f in 0..<block.frames {
      let ceiling = from + step * Float(f + 1)
      let l = block.left[f]
      let r = block.right[f]
      let peak = larger(abs(l), abs(r))
      let wanted = peak > ceiling ? ceiling / peak : 1
      // Instant attack, smooth release: the lower of the wanted gain and the released one.
      let released = g * keep + wanted * release
      g = wanted < released ? wanted : released
      lowest = smaller(lowest, g)
      block.left[f] = smaller(larger(l * g, -ceiling), ceiling)
      block.right[f] = smaller(larger(r * g, -ceiling), ceiling)
    }
    gain = g
    let fallen = shownReductionDecibels - 20 * Float(block.frames) / rate
    shownReductionDecibels = max(lowest < 1 ? -DSPMath.decibels(gain: lowest) : 0, fallen, 0)
  }
}
