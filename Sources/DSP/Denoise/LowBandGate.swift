import Foundation

/// The denoiser's low band. speexdsp's 5 ms frames give it 100 Hz bins, and below about 300 Hz
/// it leaves steady noise only 5–13 dB down where it takes the rest 18–25 dB down (pink noise at
/// −45 dBFS: 9.4 dB in all, most of what is left below 300 Hz; a fan's rumble and hum 9.2 dB).
///
/// This gate follows speexdsp's output. Two levels of the input frame it came from are tracked
/// against their own noise floors (minimum statistics over `floorSeconds` of a 50 ms envelope):
/// the band below `crossoverHz` and the band above it (4th-order Linkwitz–Riley filters). While
/// both stay near their floors (within 6 dB below, 2 dB above) — steady noise, nothing else — the
/// output's low band is taken down by up to `depthDecibels` more by two low-shelving sections at
/// `crossoverHz`; as soon as either rises (12 dB below, 4 dB above: a voice, however noisy its
/// low band; a bass note; a kick) it opens, and stays open `hangoverSeconds` after. Open, the shelves are the identity: speexdsp's
/// output passes bit for bit.
///
/// While a held sound goes on (the denoiser stands aside) the gate is open and the floors are not
/// learnt from it; for the first `floorSeconds` it is open (no floors yet), so a sound that
/// starts with the stream is not taken for one. Closing takes about 65 ms (1.5 dB per 5 ms
/// frame); an onset opens it within its first frame (judged on the frame's own energy, not the
/// envelope).
///
/// Thread: prepared off the audio thread; `process` on the audio thread.
final class LowBandGate {
  static let crossoverHz = 300.0
  /// Above its floor by this much a level is signal (open) ...
  static let openDecibels: Float = 12
  /// ... and within this much, steady noise (closed); between, the gain goes linearly in dB.
  static let closedDecibels: Float = 6
  static let floorSeconds = 1.5
  /// The band above the crossover's thresholds (the voice's band): a broadband level fluctuates
  /// less than the low band's, and speech at 0 dB SNR lifts it only a few dB.
  static let highClosedDecibels: Float = 2
  static let highOpenDecibels: Float = 4
  /// How long the gate stays open after a frame that opened it (300 ms): the gaps between a
  /// talker's words are shorter, so it closes in the pauses between phrases, not inside them.
  static let hangoverSeconds = 0.3
  /// How far the gain falls per frame while closing.
  static let closingDecibelsPerFrame: Float = 1.5

  /// The extra attenuation of steady noise in the band (dB, 0: off).
  var depthDecibels: Float = 15
  private let frame: Int
  private let sampleRate: Double
  /// The shelving sections' coefficients for the gain now (the identity at 0 dB).
  private var shelf = BiquadCoefficients()
  /// The measuring low-pass's coefficients (one section, run twice: Linkwitz–Riley).
  private let b0: Float, b1: Float, b2: Float, a1: Float, a2: Float
  /// The shelving sections' state (x1, x2, y1, y2 each).
  private var s1 = SIMD4<Float>(repeating: 0)
  private var s2 = SIMD4<Float>(repeating: 0)
  /// The measuring low-pass's state (on the input), and the high-pass's (the same poles).
  private var measured = SIMD8<Float>(repeating: 0)
  private var measuredHigh = SIMD8<Float>(repeating: 0)
  private let hb0: Float, hb1: Float
  private let hangoverFrames: Int
  private var hangoverLeft = 0
  private let lowFloor: FloorTracker
  private let highFloor: FloorTracker
  /// The gain applied at the end of the last frame, in dB (0: open).
  private(set) var gainDecibels: Float = 0

  init(frame: Int, sampleRate: Double) {
    self.frame = frame
    self.sampleRate = sampleRate
    let w = 2 * Double.pi * Self.crossoverHz / sampleRate
    let alpha = sin(w) / (2 * 0.5.squareRoot())
    let a0 = 1 + alpha
    b0 = Float((1 - cos(w)) / 2 / a0)
    b1 = Float((1 - cos(w)) / a0)
    b2 = b0
    a1 = Float(-2 * cos(w) / a0)
    a2 = Float((1 - alpha) / a0)
    hb0 = Float((1 + cos(w)) / 2 / a0)
    hb1 = Float(-(1 + cos(w)) / a0)
    let frameSeconds = Double(frame) / sampleRate
    hangoverFrames = max(Int((Self.hangoverSeconds / frameSeconds).rounded()), 1)
    lowFloor = FloorTracker(frameSeconds: frameSeconds, floorSeconds: Self.floorSeconds)
    highFloor = FloorTracker(frameSeconds: frameSeconds, floorSeconds: Self.floorSeconds)
  }

  /// Clears the filters and opens the gate; the floors stay (like speexdsp's noise estimate).
  /// - Realtime: safe
  func reset() {
    (s1, s2, measured, measuredHigh) = (
      SIMD4(repeating: 0), SIMD4(repeating: 0), SIMD8(repeating: 0), SIMD8(repeating: 0)
    )
    gainDecibels = 0
    shelf = BiquadCoefficients()
  }

  /// Gates the low band of one output frame in place, judged on the input frame it came from
  /// (`input`: steady noise is steady there, where speexdsp's output of it flickers); `open`
  /// while a held sound goes on.
  /// - Realtime: safe
  func process(_ x: UnsafeMutablePointer<Float>, input: UnsafeMutablePointer<Float>, open: Bool) {
    var (low, whole): (Float, Float) = (0, 0)
    // The low-pass and the high-pass side by side in two lanes (low, high), each of their two
    // sections as one two-lane section: the same arithmetic per lane as one section at a time,
    // in half the dependent steps.
    let (m0, h0) = (measured, measuredHigh)
    var (x1a, x2a, y1a, y2a) = (
      SIMD2(m0[0], h0[0]), SIMD2(m0[1], h0[1]), SIMD2(m0[2], h0[2]), SIMD2(m0[3], h0[3])
    )
    var (x1b, x2b, y1b, y2b) = (
      SIMD2(m0[4], h0[4]), SIMD2(m0[5], h0[5]), SIMD2(m0[6], h0[6]), SIMD2(m0[7], h0[7])
    )
    let (c0, c1, c2) = (SIMD2(b0, hb0), SIMD2(b1, hb1), SIMD2(b2, hb0))
    let (d1, d2) = (SIMD2(repeating: a1), SIMD2(repeating: a2))
    for i in 0..<frame {
      let v = SIMD2(repeating: input[i])
      let ya = c0 * v + c1 * x1a + c2 * x2a - d1 * y1a - d2 * y2a
      (x2a, x1a, y2a, y1a) = (x1a, v, y1a, ya)
      let yb = c0 * ya + c1 * x1b + c2 * x2b - d1 * y1b - d2 * y2b
      (x2b, x1b, y2b, y1b) = (x1b, ya, y1b, yb)
      low += yb.x * yb.x
      whole += yb.y * yb.y
    }
    let m = SIMD8(x1a.x, x2a.x, y1a.x, y2a.x, x1b.x, x2b.x, y1b.x, y2b.x)
    let h = SIMD8(x1a.y, x2a.y, y1a.y, y2a.y, x1b.y, x2b.y, y1b.y, y2b.y)
    guard low.isFinite, whole.isFinite else {  // a non-finite frame: start again
      (s1, s2, measured, measuredHigh) = (
        SIMD4(repeating: 0), SIMD4(repeating: 0), SIMD8(repeating: 0), SIMD8(repeating: 0)
      )
      return
    }
    // Filter memories flushed once a frame: they never go subnormal in a long silence.
    (measured, measuredHigh) = (
      SIMD8(lowHalf: m.lowHalf.flushed(), highHalf: m.highHalf.flushed()),
      SIMD8(lowHalf: h.lowHalf.flushed(), highHalf: h.highHalf.flushed())
    )
    let n = Float(frame)
    // Both trackers learn on every frame but a held sound's.
    let lowAbove = lowFloor.above(meanSquare: low / n, learn: !open, onsets: false)
    let highAbove = highFloor.above(meanSquare: whole / n, learn: !open, onsets: false)
    var target: Float = 0
    if !open && depthDecibels > 0, let lowAbove, let highAbove {
      // How open each level asks the gate to be (0 closed … 1 open); the more open one wins.
      let openness = max(
        Self.openness(lowAbove, closed: Self.closedDecibels, open: Self.openDecibels),
        Self.openness(highAbove, closed: Self.highClosedDecibels, open: Self.highOpenDecibels))
      if openness >= 0.5 { hangoverLeft = hangoverFrames }
      if hangoverLeft > 0 {
        hangoverLeft -= 1
      } else {
        target = -depthDecibels * (1 - openness)
      }
    }
    let from = gainDecibels
    let to = target >= from ? target : max(target, from - Self.closingDecibelsPerFrame)
    gainDecibels = to
    if to != from {
      // Two shelving sections of half the depth each: the band below the crossover comes down
      // by the gain, the voice's range above it is left (a subtraction of the low-passed band
      // would not do: its phase lags). At 0 dB both are the identity, exactly.
      shelf = BiquadCoefficients.lowShelf(
        frequencyHz: Self.crossoverHz, slope: 1, gainDecibels: Double(to / 2), sampleRate: sampleRate)
    }
    var (p, q) = (s1, s2)
    let c = shelf
    for i in 0..<frame {
      let y1 = Self.lowPass(x[i], &p, c.b0, c.b1, c.b2, c.a1, c.a2)
      x[i] = Self.lowPass(y1, &q, c.b0, c.b1, c.b2, c.a1, c.a2)
    }
    (s1, s2) =
      p[2].isFinite && q[2].isFinite ? (p.flushed(), q.flushed()) : (SIMD4(repeating: 0), SIMD4(repeating: 0))
  }

  /// 0 at or below `closed` dB above the floor, 1 at or above `open`, linear between.
  /// - Realtime: safe
  @inline(__always)
  private static func openness(_ above: Float, closed: Float, open: Float) -> Float {
    min(max((above - closed) / (open - closed), 0), 1)
  }

  /// One sample through a biquad section whose state is (x1, x2, y1, y2).
  /// - Realtime: safe
  @inline(__always)
  private static func lowPass(
    _ v: Float, _ s: inout SIMD4<Float>, _ b0: Float, _ b1: Float, _ b2: Float, _ a1: Float, _ a2: Float
  ) -> Float {
    let y = b0 * v + b1 * s[0] + b2 * s[1] - a1 * s[2] - a2 * s[3]
    s = SIMD4(v, s[0], y, s[2])
    return y
  }
}

/// A level's noise floor by minimum statistics: the lowest value of its 50 ms envelope over the
/// last `floorSeconds` (ten segments' minima).
///
/// Thread: one thread at a time (the audio thread, for `LowBandGate`).
final class FloorTracker {
  private var envelope: Float = 0
  private let envelopeAlpha: Float
  /// Frames measured so far, up to `warmFrames` (the floor's length): no floor before.
  private var framesSeen = 0
  private let warmFrames: Int
  private let minima: UnsafeMutablePointer<Float>
  private let segmentCount = 10
  private let segmentFrames: Int
  private var segmentMinimum = Float.greatestFiniteMagnitude
  private var framesInSegment = 0
  private var segmentIndex = 0

  init(frameSeconds: Double, floorSeconds: Double) {
    envelopeAlpha = Float(1 - exp(-frameSeconds / 0.05))
    warmFrames = max(Int((floorSeconds / frameSeconds).rounded()), 1)
    segmentFrames = max(Int((floorSeconds / 10 / frameSeconds).rounded()), 1)
    minima = .allocate(capacity: segmentCount)
    minima.initialize(repeating: .greatestFiniteMagnitude, count: segmentCount)
  }

  deinit { minima.deallocate() }

  /// How far (dB) the level (the envelope, or with `onsets` this frame's `meanSquare` when
  /// higher) is above the floor; nil while there is no floor yet or the floor is silence. With `learn`, the frame
  /// moves the envelope and the floor.
  /// - Realtime: safe
  func above(meanSquare: Float, learn: Bool, onsets: Bool = true) -> Float? {
    if learn {
      // The first frame starts the envelope (rising from zero it would set a floor of nothing).
      envelope = DSPMath.flush(
        framesSeen > 0 ? envelope + envelopeAlpha * (meanSquare - envelope) : meanSquare)
      framesSeen = min(framesSeen + 1, warmFrames)
      segmentMinimum = min(segmentMinimum, envelope)
      framesInSegment += 1
      if framesInSegment >= segmentFrames {
        minima[segmentIndex] = segmentMinimum
        segmentIndex = (segmentIndex + 1) % segmentCount
        (segmentMinimum, framesInSegment) = (.greatestFiniteMagnitude, 0)
      }
    }
    var floor = segmentMinimum
    for i in 0..<segmentCount { floor = min(floor, minima[i]) }
    guard framesSeen >= warmFrames, floor > 1e-14, envelope > 0 else { return nil }
    // With `onsets`, an onset counts at once (its frame's own energy); a fall waits for the
    // envelope. Without, the envelope alone (a broadband level's 5 ms frames flicker by a dB).
    return 10 * log10f((onsets ? max(envelope, meanSquare) : envelope) / floor)
  }
}
