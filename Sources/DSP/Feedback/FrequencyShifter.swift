#if canImport(Glibc)
  import Glibc
#endif

/// A single-sideband frequency shifter with no added latency: a Hilbert pair of allpass
/// cascades (Olli Niemitalo's 2 × 4 second-order sections, 90° ± 0.7° apart from about 20 Hz
/// to 0.45 fs), then the analytic signal rotated by a phasor at `shiftHz`. Every component moves
/// up by `shiftHz` (a 5 Hz shift moves a sung A4 by 20 cents, A5 by 10 cents, a 100 Hz voice
/// fundamental by 85 cents; harmonics stop being exact multiples of the fundamental by that
/// much). In a feedback loop the shift moves a ringing tone on by `shiftHz` every round trip,
/// so no frequency builds up pass after pass: the basis of the shift's added stable gain.
///
/// The allpass phase response is not linear: the output is the same spectrum shifted, with the
/// phase of each component turned by the network (inaudible on speech). Per channel.
///
/// Thread: the audio thread after `init`.
struct FrequencyShifter {
  /// One path: four sections (y = a²·(x + y₋₂) − x₋₂), their state as SIMD4 over the sections.
  struct Path {
    let coefficients: SIMD4<Float>
    var x1 = SIMD4<Float>(), x2 = SIMD4<Float>(), y1 = SIMD4<Float>(), y2 = SIMD4<Float>()

    init(_ a: SIMD4<Float>) { coefficients = a * a }

    /// - Realtime: safe
    @inline(__always)
    mutating func step(_ x: Float) -> Float {
      var v = x
      for s in 0..<4 {
        let y = coefficients[s] * (v + y2[s]) - x2[s]
        x2[s] = x1[s]
        x1[s] = v
        y2[s] = y1[s]
        y1[s] = y
        v = y
      }
      return v
    }

    /// - Realtime: safe
    mutating func reset() { (x1, x2, y1, y2) = (.zero, .zero, .zero, .zero) }
  }

  /// The first path (its output taken one sample late) and the second.
  private var a = Path(SIMD4(0.692_387_8, 0.936_065_432_295_9, 0.988_229_522_686_0, 0.998_748_845_273_7))
  private var b = Path(
    SIMD4(0.402_192_116_242_6, 0.856_171_088_242_0, 0.972_290_954_565_1, 0.995_288_479_127_8))
  /// The first path's previous output (its one-sample delay).
  private var aDelayed: Float = 0

  /// - Realtime: safe
  mutating func reset() {
    a.reset()
    b.reset()
    aDelayed = 0
  }

  /// The analytic pair of `x`: (in-phase, quadrature), the quadrature a quarter period behind, so
  /// i·cos φ + q·sin φ shifts up by φ's rate.
  /// - Realtime: safe
  @inline(__always)
  mutating func analytic(_ x: Float) -> (Float, Float) {
    let i = aDelayed
    aDelayed = a.step(x)
    return (i, b.step(x))
  }
}

/// The phasor of a frequency shift: cos and sin of the running phase, advanced per frame by a
/// rotation and renormalized once a block (no drift, no transcendental per frame).
///
/// Thread: the audio thread after `init`.
struct ShiftPhasor {
  private(set) var cosine: Float = 1
  private(set) var sine: Float = 0

  /// - Realtime: safe
  mutating func reset() { (cosine, sine) = (1, 0) }

  /// - Realtime: safe
  @inline(__always)
  mutating func advance(cos dc: Float, sin ds: Float) {
    (cosine, sine) = (cosine * dc - sine * ds, sine * dc + cosine * ds)
  }

  /// - Realtime: safe
  mutating func renormalize() {
    let m = (cosine * cosine + sine * sine).squareRoot()
    if m.isFinite && m > 0.5 {
      (cosine, sine) = (cosine / m, sine / m)
    } else {
      reset()
    }
  }
}

/// A stereo frequency shift that fades in and out: `hz` 0 turns it off, crossfading to the
/// unshifted signal over `fadeSeconds` (the allpass network turns every component's phase, so a
/// hard switch would click), then costs nothing.
///
/// Thread: the audio thread.
struct ShiftStage {
  static let fadeSeconds: Float = 0.02
  private var left = FrequencyShifter()
  private var right = FrequencyShifter()
  private var phasor = ShiftPhasor()
  /// How much of the shifted signal is heard (0 to 1).
  private(set) var mix: Float = 0

  /// - Realtime: safe
  mutating func reset() {
    left.reset()
    right.reset()
    phasor.reset()
    mix = 0
  }

  /// Shifts the block up by `hz` in place.
  /// - Realtime: safe
  mutating func process(_ block: StereoBlock, hz: Float, sampleRate: Float) {
    let on = hz > 0
    if !on && mix == 0 { return }
    let step = 1 / (Self.fadeSeconds * sampleRate)
    let w = 2 * Float.pi * hz / sampleRate
    let (dc, ds) = (cosf(w), sinf(w))
    var m = mix
    for f in 0..<block.frames {
      m = on ? min(m + step, 1) : max(m - step, 0)
      let (x, y) = (block.left[f], block.right[f])
      let (li, lq) = left.analytic(x)
      let (ri, rq) = right.analytic(y)
      let (c, sn) = (phasor.cosine, phasor.sine)
      block.left[f] = x + m * (li * c + lq * sn - x)
      block.right[f] = y + m * (ri * c + rq * sn - y)
      phasor.advance(cos: dc, sin: ds)
    }
    phasor.renormalize()
    mix = m
    if m == 0 { reset() }
  }
}
