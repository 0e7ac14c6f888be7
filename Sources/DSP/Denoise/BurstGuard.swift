/// Tells a short burst of broadband sound (a click, a clap, a hiss of noise) in the frame the
/// denoiser is about to give speexdsp.
///
/// speexdsp learns what lasts, and a burst of 100 ms is over before it has learnt it: it took
/// next to nothing out of such bursts, while the speech after them lost a little to its estimate
/// all the same, so short bursts of white noise left speech up to 0.012 dB of SI-SDR worse than
/// the noisy input (docs/voice.md). The denoiser gives a frame this guard calls a burst to
/// speexdsp `Denoise.burstScale` (26 dB) down and raises speexdsp's output by as much: speexdsp
/// weighs the burst against its steady-noise estimate raised 26 dB, takes out the part of it that
/// estimate's shape covers, and learns a four-hundredth of its power at most.
///
/// A burst is broadband and sudden: the frame's power above `crossoverHz` (a 4th-order
/// Butterworth high-pass) is at least `share` of the frame's whole power (white noise holds half
/// of its power there, pink noise a tenth, a voice's sibilants less), and `ratio` times that
/// band's floor (its quietest frame of the last `floorSeconds`). It holds: a frame counts from
/// the fifth such frame in a row (`settleFrames`), while the band keeps `keep` of its power of
/// three frames before, so percussion that dies away (a hi-hat, a clap) never counts. And it is
/// short: only while such frames have followed each other for at most `maxSeconds`; noise that
/// lasts longer is speexdsp's to learn. Steady noise of any colour never passes (its upper band
/// stays at its floor), nor do voices and the band of their sibilants (under the share); below
/// `minimumPower` in the band (−60 dBFS) nothing counts, since raising speexdsp's output 26 dB
/// raises its 16-bit rounding as much (to about −69 dBFS). What does count besides a hiss: a
/// cymbal's crash, whose first 150 ms speexdsp then takes down like a burst (its first half second
/// 0.41 dB down in all, 0.11 dB before; `BurstGuardTests`).
///
/// Thread: created off the audio thread; `isBurst` on the audio thread.
final class BurstGuard {
  static let crossoverHz = 12_000.0
  static let share: Float = 0.2
  static let ratio: Float = 30
  static let floorSeconds = 1.0
  static let maxSeconds = 0.15
  static let minimumPower: Float = 1e-6
  /// A burst counts from its fifth frame on, while the band's power in this frame and the one
  /// before holds `keep` of its power three frames before those (two frames each, so that one
  /// frame's chance does not decide): a hit that dies away (a drum, a hi-hat, a clap) never does.
  static let settleFrames = 4
  static let keep: Float = 0.7

  private let c: BiquadCoefficients
  /// The high-pass's two sections' states: x1, x2, y1, y2 of the first, then of the second.
  private var state = SIMD8<Float>(repeating: 0)
  /// The band's mean power per frame over the last `floorSeconds`.
  private var powers: WindowMinimum
  let maxFrames: Int
  /// How many frames in a row have passed the band test.
  private var loudFrames = 0
  /// The band's power in the last frames (newest first).
  private var recent = SIMD4<Float>(repeating: 0)

  init(frame: Int, sampleRate: Double) {
    c = .highPass(frequencyHz: Self.crossoverHz, q: 0.5.squareRoot(), sampleRate: sampleRate)
    powers = WindowMinimum(count: Int(Self.floorSeconds * sampleRate / Double(frame)))
    maxFrames = max(Int(Self.maxSeconds * sampleRate / Double(frame)), 1)
  }

  /// Forgets the floor and the filter's state.
  /// - Realtime: safe
  func reset() {
    powers.reset()
    (loudFrames, state, recent) = (0, SIMD8(repeating: 0), SIMD4(repeating: 0))
  }

  /// Whether the frame of `count` samples is part of a short broadband burst; call once a frame,
  /// in order.
  /// - Realtime: safe
  func isBurst(_ samples: UnsafePointer<Float>, count: Int) -> Bool {
    var s = state
    var (band, whole): (Float, Float) = (0, 0)
    for i in 0..<count {
      let x = samples[i]
      let y1 = c.b0 * x + c.b1 * s[0] + c.b2 * s[1] - c.a1 * s[2] - c.a2 * s[3]
      let y2 = c.b0 * y1 + c.b1 * s[4] + c.b2 * s[5] - c.a1 * s[6] - c.a2 * s[7]
      // As `HarmonicGuard`: denormals (and anything not finite) end in the state here.
      s = SIMD8(x, s[0], y1, s[2], y1, s[4], y2.isFinite && abs(y2) > 1e-20 ? y2 : 0, s[6])
      band += y2 * y2
      whole += x * x
    }
    state = s
    let power = band / Float(max(count, 1))
    // The floor with this frame in it: were it the quietest, it could not stand 30 times above it
    // either way.
    powers.push(power)
    let floor = powers.minimum
    // The band alone says how long a burst has lasted; a loud vowel over it (the share) only
    // keeps that frame from counting.
    let loud = power > Self.minimumPower && power > Self.ratio * floor
    loudFrames = loud ? min(loudFrames + 1, maxFrames + 1) : 0
    let holds = power + recent[0] >= Self.keep * (recent[2] + recent[3])
    recent = SIMD4(power, recent[0], recent[1], recent[2])
    return loud && band >= Self.share * whole && loudFrames > Self.settleFrames && holds
      && loudFrames <= maxFrames
  }
}
