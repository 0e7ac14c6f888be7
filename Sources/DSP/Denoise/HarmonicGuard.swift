import Foundation

/// Tells a held voiced sound (a sung note, a held vowel, a played line) from steady noise, for
/// the denoiser: a stationary-noise suppressor learns any sound that lasts as noise, and a
/// singer's long note sinks by 10 dB within seconds.
///
/// Every 10 ms it runs a YIN pitch detector (the cumulative mean normalized difference
/// function, de Cheveigné and Kawahara 2002) over the last 32 ms, low-passed and decimated to
/// about 8 kHz, for periods of 70–1000 Hz. A sound is *held* once it has been periodic for
/// `heldMilliseconds` with no gap longer than `gapMilliseconds`. A held sound whose pitch stays
/// within `machineCents` for half a second is a machine (mains or fan hum): no voice or acoustic
/// instrument holds a pitch that still, so it stays noise. A periodic sound whose pitch glides
/// (speech's intonation) is not held either: its pitch must stay within `heldCents` over
/// `heldMilliseconds`, swing like a vibrato or move in steps like a run of notes. Broadband noise (pink, white, a fan's rumble) is
/// never periodic.
///
/// Thread: prepared off the audio thread; `feed` on the audio thread.
final class HarmonicGuard {
  /// How long a periodic sound lasts before it counts as held.
  static let heldMilliseconds = 250.0
  /// The longest unvoiced gap inside a held sound (a consonant, a breath between legato notes).
  static let gapMilliseconds = 60.0
  /// The pitch range (cents, over `steadyMilliseconds`) within which a held sound is a machine.
  static let machineCents: Float = 6
  static let steadyMilliseconds = 500.0
  /// The pitch range (cents, over `heldMilliseconds`) within which a periodic sound is held: a
  /// note with a moderate vibrato (±30 cents) or a held vowel's drift stays well inside it;
  /// speech's intonation glides further (170–390 cents over 250 ms in the test sentences).
  static let heldCents: Float = 150
  /// A wider pitch range is still held when it is a vibrato: at least `vibratoSwings` crossings
  /// of its mean (each past a third of the half range, and past `vibratoMarginCents`) over the
  /// voiced stretch's last `steadyMilliseconds`, moving at most `vibratoStepCents` between
  /// analyses (±130 cents at 6 Hz moves 49; speech's jumps and octave errors move more) and
  /// spanning at most `vibratoRangeCents`.
  static let vibratoSwings = 2
  static let vibratoMarginCents: Float = 10
  static let vibratoStepCents: Float = 60
  static let vibratoRangeCents: Float = 400
  /// A wider pitch range is also held when it moves in steps (a run of notes): see `stepwise`.
  static let plateauStepCents: Float = 8
  static let plateauShare: Float = 0.55
  /// YIN's threshold on the normalized difference: below it, a period is found.
  static let threshold: Float = 0.2
  /// Sounds below this mean square (about -60 dBFS) are not judged.
  static let floorMeanSquare: Float = 1e-6

  let decimation: Int
  let analysisRate: Double
  let window: Int
  let minLag: Int
  let maxLag: Int
  let hop: Int
  private let historyCount: Int
  private let history: UnsafeMutablePointer<Float>
  private let difference: UnsafeMutablePointer<Float>
  /// The recent periods' log2, one per voiced analysis, newest last.
  private let pitches: UnsafeMutablePointer<Float>
  private let pitchCapacity: Int
  /// How many of the newest pitches span `heldMilliseconds`.
  private let heldPitchCount: Int
  private var pitchCount = 0
  /// Two cascaded low-passes (anti-aliasing before decimation): coefficients and state.
  private let b0: Float, b1: Float, b2: Float, a1: Float, a2: Float
  private var s1 = SIMD4<Float>(repeating: 0)
  private var s2 = SIMD4<Float>(repeating: 0)
  private var phase = 0
  private var sinceAnalysis = 0
  private var voicedMilliseconds = 0.0
  private var gapMillisecondsSoFar = 0.0
  private let hopMilliseconds: Double

  /// True while a held voiced sound (not a machine's) goes on; updated every 10 ms.
  private(set) var held = false
  /// The latest periodicity decision and its pitch (Hz, 0 when none), for tests.
  private(set) var lastPitchHz: Float = 0

  init(sampleRate: Double) {
    decimation = max(Int((sampleRate / 8000).rounded()), 1)
    analysisRate = sampleRate / Double(decimation)
    window = Int(0.032 * analysisRate)
    minLag = max(Int(analysisRate / 1000), 2)
    maxLag = Int(analysisRate / 70)
    hop = max(Int(0.010 * analysisRate), 1)
    hopMilliseconds = Double(hop) * 1000 / analysisRate
    historyCount = window + maxLag + 2
    history = .allocate(capacity: historyCount)
    history.initialize(repeating: 0, count: historyCount)
    difference = .allocate(capacity: maxLag + 2)
    difference.initialize(repeating: 0, count: maxLag + 2)
    pitchCapacity = max(Int(Self.steadyMilliseconds / hopMilliseconds), 1)
    heldPitchCount = min(max(Int(Self.heldMilliseconds / hopMilliseconds), 1), pitchCapacity)
    pitches = .allocate(capacity: pitchCapacity)
    pitches.initialize(repeating: 0, count: pitchCapacity)
    // RBJ low-pass at 0.4 of the analysis rate, Q 0.707 (two in cascade: 24 dB/octave).
    let w0 = 2 * Double.pi * 0.4 * analysisRate / sampleRate
    let alpha = sin(w0) / (2 * 0.7071)
    let c = cos(w0)
    let a0 = 1 + alpha
    b0 = Float((1 - c) / 2 / a0)
    b1 = Float((1 - c) / a0)
    b2 = Float((1 - c) / 2 / a0)
    a1 = Float(-2 * c / a0)
    a2 = Float((1 - alpha) / a0)
  }

  deinit {
    history.deallocate()
    difference.deallocate()
    pitches.deallocate()
  }

  /// Forgets the sound so far.
  /// - Realtime: safe
  func reset() {
    history.update(repeating: 0, count: historyCount)
    (s1, s2) = (.zero, .zero)
    (phase, sinceAnalysis, pitchCount) = (0, 0, 0)
    (voicedMilliseconds, gapMillisecondsSoFar, held, lastPitchHz) = (0, 0, false, 0)
  }

  /// Takes `count` input samples; returns `held`.
  /// - Realtime: safe
  func feed(_ samples: UnsafePointer<Float>, count: Int) -> Bool {
    for i in 0..<count {
      let x = samples[i]
      // Direct form I, the two sections' states side by side: (x1, x2, y1, y2).
      let y1 = b0 * x + b1 * s1[0] + b2 * s1[1] - a1 * s1[2] - a2 * s1[3]
      s1 = SIMD4(x, s1[0], y1, s1[2])
      let y2 = b0 * y1 + b1 * s2[0] + b2 * s2[1] - a1 * s2[2] - a2 * s2[3]
      s2 = SIMD4(y1, s2[0], y2.isFinite && abs(y2) > 1e-20 ? y2 : 0, s2[2])
      phase += 1
      guard phase == decimation else { continue }
      phase = 0
      // The newest hop fills the end of the history; the analysis then moves it on by a hop.
      history[historyCount - hop + sinceAnalysis] = s2[2]
      sinceAnalysis += 1
      if sinceAnalysis == hop {
        sinceAnalysis = 0
        analyse()
        history.update(from: history + hop, count: historyCount - hop)
      }
    }
    return held
  }

  /// One YIN analysis of the last window, and the held/machine decision.
  /// - Realtime: safe
  private func analyse() {
    let x = history + (historyCount - window - maxLag - 1)
    let energy = BlockMath.peakAndEnergy(x, window).energy
    let periodHz = energy / Float(window) > Self.floorMeanSquare ? period() : 0
    lastPitchHz = periodHz
    if periodHz > 0 {
      voicedMilliseconds += hopMilliseconds
      gapMillisecondsSoFar = 0
      if pitchCount == pitchCapacity {
        pitches.update(from: pitches + 1, count: pitchCapacity - 1)
        pitchCount -= 1
      }
      pitches[pitchCount] = log2(periodHz)
      pitchCount += 1
    } else {
      gapMillisecondsSoFar += hopMilliseconds
      if gapMillisecondsSoFar > Self.gapMilliseconds {
        voicedMilliseconds = 0
        pitchCount = 0
      }
    }
    held = voicedMilliseconds >= Self.heldMilliseconds && !machineSteady() && melodic()
  }

  /// The pitch (Hz) of the window when it is periodic, else 0.
  /// - Realtime: safe
  private func period() -> Float {
    let x = history + (historyCount - window - maxLag - 1)
    // d(τ) = Σ (x[n] − x[n+τ])², then d'(τ) = d(τ) · τ / Σ_{j≤τ} d(j).
    var running: Float = 0
    var found = -1
    for tau in 1...maxLag {
      let d = BlockMath.squaredDistance(x, x + tau, window)
      running += d
      let normalized = running > 0 ? d * Float(tau) / running : 1
      difference[tau] = normalized
      if found < 0 && tau >= minLag && normalized < Self.threshold { found = tau }
      // The local minimum after the first value below the threshold.
      if found >= 0 && tau > found && normalized >= difference[tau - 1] {
        found = tau - 1
        break
      }
    }
    guard found >= minLag, found < maxLag else { return 0 }
    // Parabolic interpolation around the minimum.
    let (a, b, c) = (difference[found - 1], difference[found], difference[found + 1])
    let denominator = a - 2 * b + c
    let shift = denominator > 0 ? 0.5 * (a - c) / denominator : 0
    let lag = Float(found) + max(-0.5, min(0.5, shift))
    return Float(analysisRate) / lag
  }

  /// True when the pitch of the last `heldMilliseconds` stayed within `heldCents` (a note, a held
  /// vowel), swings like a vibrato or moves in steps (a run of notes): not speech's gliding
  /// intonation, which a stationary-noise suppressor should go on cleaning (holding it cost
  /// `scripts/bench-quality`'s mean SI-SDR gain over stationary noise 5.66 → 5.22 dB).
  /// - Realtime: safe
  private func melodic() -> Bool {
    let count = min(heldPitchCount, pitchCount)
    guard count > 0 else { return false }
    if rangeCents(ofNewest: count) <= Self.heldCents { return true }
    return vibrato() || stepwise(count)
  }

  /// The range (cents) of the newest `count` pitches (1 ≤ `count` ≤ `pitchCount`).
  /// - Realtime: safe
  private func rangeCents(ofNewest count: Int) -> Float {
    var (low, high) = (pitches[pitchCount - 1], pitches[pitchCount - 1])
    for i in (pitchCount - count)..<pitchCount {
      low = min(low, pitches[i])
      high = max(high, pitches[i])
    }
    return (high - low) * 1200
  }

  /// True when the newest `count` pitches move in steps, like a run of notes: most of them
  /// (`plateauShare`) within `plateauStepCents` of the one before, the rest a note's change;
  /// speech's intonation glides (10–59% of its steps that small in the test sentences, a run of
  /// 125–200 ms notes 60–90%; without this a run of 200 ms notes sank by 4.5 dB).
  /// - Realtime: safe
  private func stepwise(_ count: Int) -> Bool {
    guard count > 1 else { return false }
    var steady = 0
    let step = Self.plateauStepCents / 1200
    for i in (pitchCount - count + 1)..<pitchCount where abs(pitches[i] - pitches[i - 1]) < step {
      steady += 1
    }
    return Float(steady) >= Self.plateauShare * Float(count - 1)
  }

  /// True when the voiced stretch's pitch (its last `steadyMilliseconds`, at least
  /// `heldMilliseconds` of it) swings like a vibrato (see `vibratoSwings`).
  /// - Realtime: safe
  private func vibrato() -> Bool {
    guard pitchCount >= heldPitchCount else { return false }
    let range = rangeCents(ofNewest: pitchCount)
    guard range <= Self.vibratoRangeCents else { return false }
    var mean: Float = 0
    for i in 0..<pitchCount { mean += pitches[i] }
    mean /= Float(pitchCount)
    // A crossing counts once the pitch is past the margin on the other side (jitter is not).
    let margin = max(Self.vibratoMarginCents, range / 6) / 1200
    let step = Self.vibratoStepCents / 1200
    var (side, crossings) = (0, 0)
    for i in 0..<pitchCount {
      if i > 0 && abs(pitches[i] - pitches[i - 1]) > step { return false }
      let d = pitches[i] - mean
      let now = d > margin ? 1 : d < -margin ? -1 : side
      if now != side && side != 0 { crossings += 1 }
      side = now
    }
    return crossings >= Self.vibratoSwings
  }

  /// True when the last `steadyMilliseconds` of pitch stayed within `machineCents`.
  /// - Realtime: safe
  private func machineSteady() -> Bool {
    guard pitchCount == pitchCapacity else { return false }
    return rangeCents(ofNewest: pitchCount) < Self.machineCents
  }
}
