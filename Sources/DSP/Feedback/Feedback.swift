#if canImport(Glibc)
  import Glibc
#endif

/// Feedback (howl) suppressor: finds sustained narrow-band peaks that grow or persist like
/// acoustic feedback (`HowlDetector`, FFTW analysis of the input every ~11 ms) and places narrow
/// notch filters on them, released slowly once they have been held. Zero latency: the notches
/// are minimum-phase biquads on the signal path; the analysis only steers them.
public struct FeedbackSuppressor: VoiceUnit {
  public static let typeName = "feedback"
  public static let summary =
    "Feedback suppressor: detects howling tones and places narrow notch filters on them."
  public static let parameters = [
    ParameterSpec(
      "max_notches", unit: "", range: 1...12, default: 8, kind: .integer,
      "Most notch filters in use at once."),
    ParameterSpec("depth_db", unit: "dB", range: 6...40, default: 24, "Attenuation at a notch's centre."),
    ParameterSpec(
      "sensitivity", unit: "", range: 0...1, default: 0.5,
      "How readily a peak counts as feedback (higher: less prominent, slower-growing, shorter peaks)."),
    ParameterSpec(
      "release_s", unit: "s", range: 1...60, default: 10,
      "Time a notch is held after its last detection; it then fades out over the same time."),
    ParameterSpec(
      "shift_hz", unit: "Hz", range: 0...20, default: 0,
      "Frequency shift of the output (0: off): a ringing tone moves on by this much every trip round the loop, so it cannot build up; 5 Hz detunes a sung A4 by 20 cents (keep it off for music)."
    ),
    ParameterSpec(
      "active_notches", unit: "", range: 0...12, default: 0, kind: .output,
      "Number of notches in use (read-only)."),
    ParameterSpec(
      "strongest_hz", unit: "Hz", range: 0...24000, default: 0, kind: .output,
      "Centre frequency of the deepest notch, 0 when none (read-only)."),
  ]

  private var detector: HowlDetector?
  private var bank: NotchBank?
  private var criteria = HowlDetector.Criteria()
  private var criteriaSensitivity = Float.nan
  private var sampleRate: Float = 48000
  /// The output's frequency shift (`shift_hz`).
  private var shifter = ShiftStage()

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    let detector = HowlDetector(sampleRate: sampleRate)
    let bank = NotchBank(sampleRate: sampleRate)
    // One analysis and one notch off the audio thread, so that first-run costs are paid here
    // (the chain's warm-up block is shorter than a hop).
    _ = detector.analyze(criteria)
    bank.place(hz: 1000, limit: 1, holdFrames: 0)
    bank.advance(frames: 1, depth: 1, limit: 1, releaseFrames: 1)
    detector.reset()
    bank.reset()
    (self.detector, self.bank) = (detector, bank)
    criteriaSensitivity = .nan
  }

  /// - Realtime: safe
  public mutating func reset() {
    detector?.reset()
    bank?.reset()
    shifter.reset()
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float {
    guard let bank else { return 0 }
    return index == 5 ? Float(bank.activeCount) : bank.strongestHz
  }

  /// The detection criteria for a sensitivity s in [0, 1]: prominence 24 − 12·s dB over the
  /// neighbourhood; growth 6 − 4·s dB in 60 ms (1.5 times that over 16 hops); or persistence
  /// for 0.7 − 0.4·s s.
  /// - Realtime: safe
  static func criteria(sensitivity s: Float, hopSeconds: Float) -> HowlDetector.Criteria {
    var c = HowlDetector.Criteria()
    c.prominence = powf(10, (24 - 12 * s) / 10)
    c.growthDecibels = 6 - 4 * s
    c.fastHops = max(Int((0.06 / hopSeconds).rounded()), 3)
    c.steadyHops = max(Int(((0.7 - 0.4 * s) / hopSeconds).rounded()), c.fastHops)
    return c
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    guard let detector, let bank else { return }
    let sensitivity = p.current(2)
    if sensitivity != criteriaSensitivity {
      criteriaSensitivity = sensitivity
      criteria = Self.criteria(sensitivity: sensitivity, hopSeconds: Float(detector.hop) / sampleRate)
    }
    let limit = Int(p.current(0))
    let holdFrames = Int(p.current(3) * sampleRate)
    // The analysis sees the input (before the notches), so a notch does not hide its own howl's
    // return when it is too shallow.
    if detector.push(block, criteria: criteria) {
      for i in 0..<detector.detectionCount {
        bank.place(hz: detector.detections[i], limit: limit, holdFrames: holdFrames)
      }
    }
    bank.advance(frames: block.frames, depth: p.current(1), limit: limit, releaseFrames: holdFrames)
    bank.process(block)
    shifter.process(block, hz: p.current(4), sampleRate: sampleRate)
  }
}

/// The suppressor's notch filters: RBJ peaking biquads with negative gain, 1/10 octave wide
/// (Q 14.4), each with its own depth ramp.
///
/// Thread: made off the audio thread; used on it.
final class NotchBank {
  struct Notch {
    var hz: Float = 0
    /// cos ω0 and sin ω0 / (2Q) of the notch's centre.
    var cosine: Double = 0
    var alpha: Double = 0
    /// Share of the full depth applied now (0 = off, 1 = full), ramped.
    var fraction: Float = 0
    /// Depth added on top of `depth_db` because the howl came back through the notch.
    var extraDecibels: Float = 0
    /// The depth (dB) the coefficients were computed for.
    var applied: Float = 0
    /// Frames left before the release starts.
    var hold = 0
    /// When it was placed (for choosing the one to replace).
    var serial = 0
    var active = false
  }

  static let capacity = 12
  /// 1/10 octave: Q = √2^b / (2^b − 1) for a bandwidth of b octaves.
  static let q = 14.42
  /// Attack of a new notch.
  static let attackSeconds: Float = 0.01
  /// Two detections within this many octaves are the same notch.
  static let sameOctaves: Float = 1.0 / 40

  let notches: UnsafeMutablePointer<Notch>
  let filters: UnsafeMutablePointer<StereoBiquad>
  private let sampleRate: Double
  private var serial = 0
  private(set) var activeCount = 0
  private(set) var strongestHz: Float = 0

  init(sampleRate: Double) {
    self.sampleRate = sampleRate
    notches = .allocate(capacity: Self.capacity)
    notches.initialize(repeating: Notch(), count: Self.capacity)
    filters = .allocate(capacity: Self.capacity)
    filters.initialize(repeating: StereoBiquad(), count: Self.capacity)
  }

  deinit {
    notches.deallocate()
    filters.deallocate()
  }

  /// - Realtime: safe
  func reset() {
    notches.update(repeating: Notch(), count: Self.capacity)
    for i in 0..<Self.capacity { filters[i] = StereoBiquad() }
    (activeCount, strongestHz) = (0, 0)
  }

  /// Puts a notch on `hz`: deepens the notch already there (the howl came through it), or takes
  /// a free slot, or replaces the shallowest (then oldest) of the first `limit` notches.
  /// - Realtime: safe
  func place(hz: Float, limit: Int, holdFrames: Int) {
    serial += 1
    for i in 0..<limit where notches[i].active {
      if abs(log2f(hz / notches[i].hz)) < Self.sameOctaves {
        if notches[i].fraction >= 1 { notches[i].extraDecibels = min(notches[i].extraDecibels + 6, 18) }
        notches[i].hold = holdFrames
        return
      }
    }
    var slot = -1
    for i in 0..<limit {
      if !notches[i].active {
        slot = i
        break
      }
      if slot < 0 || notches[i].fraction < notches[slot].fraction
        || (notches[i].fraction == notches[slot].fraction && notches[i].serial < notches[slot].serial)
      {
        slot = i
      }
    }
    let w0 = 2 * Double.pi * min(Double(hz), sampleRate * 0.49) / sampleRate
    let wasActive = notches[slot].active
    notches[slot] = Notch(
      hz: hz, cosine: cos(w0), alpha: sin(w0) / (2 * Self.q), fraction: 0, extraDecibels: 0, applied: 0,
      hold: holdFrames, serial: serial, active: true)
    if !wasActive { filters[slot].reset() }
    filters[slot].coefficients = BiquadCoefficients()
  }

  /// Moves every notch's depth one sub-block of `frames` on (attack, hold, release) and updates
  /// the coefficients of those whose depth changed. Notches beyond `limit` are released.
  /// - Realtime: safe
  func advance(frames: Int, depth: Float, limit: Int, releaseFrames: Int) {
    let attackStep = Float(frames) / (Self.attackSeconds * Float(sampleRate))
    let releaseStep = Float(frames) / Float(max(releaseFrames, 1))
    var count = 0
    var deepest: Float = 0
    var deepestHz: Float = 0
    for i in 0..<Self.capacity where notches[i].active {
      var n = notches[i]
      if i >= limit { n.hold = 0 }
      if n.hold > 0 {
        n.hold -= frames
        n.fraction = min(n.fraction + attackStep, 1)
      } else {
        n.fraction = max(n.fraction - releaseStep, 0)
      }
      let decibels = n.fraction * (depth + n.extraDecibels)
      if n.fraction == 0 {
        n.active = false
        filters[i].reset()
        filters[i].coefficients = BiquadCoefficients()
      } else {
        count += 1
        if decibels > deepest { (deepest, deepestHz) = (decibels, n.hz) }
        if decibels != n.applied {
          n.applied = decibels
          filters[i].coefficients = Self.notch(cosine: n.cosine, alpha: n.alpha, decibels: decibels)
        }
      }
      notches[i] = n
    }
    (activeCount, strongestHz) = (count, deepestHz)
  }

  /// An RBJ peaking section cutting `decibels` at the centre.
  /// - Realtime: safe
  @inline(__always)
  static func notch(cosine c: Double, alpha: Double, decibels: Float) -> BiquadCoefficients {
    let a = pow(10, -Double(decibels) / 40)
    return BiquadCoefficients(
      b0: 1 + alpha * a, b1: -2 * c, b2: 1 - alpha * a, a0: 1 + alpha / a, a1: -2 * c, a2: 1 - alpha / a)
  }

  /// Runs the active notches over the block, three at a time as one cascade.
  /// - Realtime: safe
  func process(_ block: StereoBlock) {
    var first = -1
    var second = -1
    for i in 0..<Self.capacity where notches[i].active {
      if first < 0 {
        first = i
      } else if second < 0 {
        second = i
      } else {
        StereoBiquad.process(&filters[first], &filters[second], &filters[i], block)
        (first, second) = (-1, -1)
      }
    }
    if second >= 0 {
      StereoBiquad.process(&filters[first], &filters[second], block)
    } else if first >= 0 {
      filters[first].process(block)
    }
  }
}
