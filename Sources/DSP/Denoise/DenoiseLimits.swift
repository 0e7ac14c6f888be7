import CSpeexDSP
import Foundation

/// Keeps speexdsp from taking out more than the noise a frame can hold. speexdsp's noise
/// estimate falls slowly (3% a 5 ms frame), so after a burst of noise it goes on taking the
/// speech down with noise that is gone. This tracks the input's floor instead, the quietest
/// frame of the last 200 ms (noise never goes below its floor; speech has gaps), and
/// when what speexdsp removed from a frame holds more than `allowance` times that floor's
/// energy, gives back the excess: the removed part is scaled down to that energy (the gain
/// moving linearly over the frame). In steady noise the floor is the noise's own quiet end and
/// nothing changes; between bursts the floor is the quiet, and speech passes. A `trust` below 1
/// (`StaleEstimate`) scales the removed part down further; at 0 the input passes exactly.
/// Thread: created off the audio thread; used on it.
final class RemovalLimit {
  let frame: Int
  /// Frame energies of the input over the last 200 ms.
  private var energies: WindowMinimum
  /// The share of the removed part kept at the end of the previous frame (1: all of it).
  private var kept: Float = 1
  /// How many times the floor's energy a frame may lose.
  static let allowance: Float = 8

  init(frame: Int, sampleRate: Double) {
    self.frame = frame
    energies = WindowMinimum(count: Int(0.2 * sampleRate / Double(frame)))
  }

  /// - Realtime: safe
  func reset() {
    energies.reset()
    kept = 1
  }

  /// Notes the newest input frame's energy, then limits what `output` lost against `input`
  /// (the frame it came from), and keeps at most `trust` (0...1) of what it lost.
  /// - Realtime: safe
  func limit(
    _ output: UnsafeMutablePointer<Float>, input: UnsafeMutablePointer<Float>, newest: UnsafePointer<Float>,
    trust: Float
  ) {
    var e: Float = 0
    for i in 0..<frame { e += newest[i] * newest[i] }
    energies.push(e)
    let floor = energies.minimum
    var removed: Float = 0
    for i in 0..<frame {
      let d = input[i] - output[i]
      removed += d * d
    }
    let allowed = Self.allowance * floor
    let share: Float = removed > allowed && removed > 0 ? (allowed / removed).squareRoot() : 1
    let target = min(share, trust)
    let start = kept
    let step = (target - start) / Float(frame)
    for i in 0..<frame {
      let k = start + step * Float(i + 1)
      output[i] = input[i] - k * (input[i] - output[i])
    }
    kept = target
  }
}

/// Tells when speexdsp's noise estimate is stale: louder than any noise the input has room for.
///
/// speexdsp learns noise fast at its start and unlearns it slowly, and it cannot tell a burst
/// that ended from noise that goes on; after a burst it goes on taking the speech down with noise
/// that is gone (bursts of noise cost up to 0.12 dB of SI-SDR). Noise never falls below its own
/// floor, and speech has gaps: so if, within the last `windowSeconds`, a frame of the input held
/// less power than the estimate could produce by chance, the estimate is stale. The test is
/// minimum statistics: under the estimate, a frame's power (the sum of speexdsp's power spectrum)
/// is a sum of exponentially distributed bins, about a gamma variable of k = (Σn)²/Σn² degrees of
/// freedom; the estimate is trusted while the quietest frame of the window stays above the
/// quantile that `windowFrames` such frames reach with probability `falseAlarm` (1.3 times below
/// the estimate for white noise, whose 240 bins make k large; 17 times below for a fan's rumble,
/// k ≈ 4). Above that ratio trust falls, reaching 0 at `span` times it; it moves towards its goal
/// by `fall` a frame when falling and `rise` when rising (25 ms and 500 ms), so the speech's gain
/// does not flicker with every gap and noise that lasts is trusted again. speexdsp hands out its
/// spectra as whole numbers; an estimate of quiet noise (white below about −42 dBFS) is too
/// coarse to judge, and trust returns to 1 (speexdsp as before).
///
/// A second test looks at each frame's bins, for noise that ends while a sound goes on without a
/// gap (another talker falling silent under the voice: no quiet frame shows it within the
/// window). Under the estimate, a bin's power is exponential: a tenth of the estimate or less
/// in about one bin in ten, and a sound on top only makes that rarer. When more than 40% of the
/// bins are that empty, the estimate is stale in this frame, whatever the window holds (two
/// other talkers at 0 dB SNR went from 0.018 dB worse to 0.012 dB better in the benchmark;
/// steady noise never trips it, `StaleEstimateTests`).
///
/// The window is a trade: a longer one catches more of the gaps that show a burst has ended, but
/// after a gap it keeps distrusting noise that has come back (1 s made bursts of 250 ms never
/// worse, but lost all of speexdsp's gain on bursts of 1 s, +1.1 dB); 0.5 s keeps +0.4 to +0.6 dB
/// of that and leaves short bursts within 0.02 dB of the input (docs/voice.md). Steady noise,
/// white to a fan's hum, keeps trust at 1: the stationary figures and noise floors are unchanged.
/// Thread: created off the audio thread; `smoothedTrust` on the audio thread.
final class StaleEstimate {
  /// The chance that steady noise trips the test in one window.
  static let falseAlarm = 0.01
  /// How far back the floor is looked for.
  static let windowSeconds = 0.5
  /// Trust is 0 at this many times the threshold ratio (linear in the log between).
  static let span: Float = 2
  /// Per frame, the share of the way trust moves towards its goal, falling and rising.
  static let fall: Float = 0.2
  static let rise: Float = 0.01
  /// speexdsp hands its spectra out as whole numbers: below this many units a bin, summed over
  /// the bins (white noise below about −42 dBFS), truncation blurs the test, and trust returns to
  /// 1 (speexdsp as before).
  static let unitsPerBin: Float = 16
  /// The threshold table: entry j is for k = 2^(j / perOctave), k from 1 to 1024.
  static let perOctave = 4
  static let entries = 10 * perOctave + 1
  /// The second test, per bin and per frame: a bin is `empty` when it holds less than
  /// `emptyShare` of the estimate's power there (steady noise leaves about 10% of its bins so,
  /// 1 − e^−0.1; speech only adds power), and the frame shows the estimate stale when more than
  /// `emptyFraction` of the bins the estimate can be read in are empty.
  static let emptyShare: Float = 0.1
  static let emptyFraction: Float = 0.4
  /// Fewer bins than this loud enough to read (`emptyShare` × estimate ≥ 1 unit): no verdict.
  static let readableBins = 16

  private let state: OpaquePointer
  private let bins: Int
  private let noise: UnsafeMutablePointer<Int32>
  private let power: UnsafeMutablePointer<Int32>
  /// Frame powers over the last `windowFrames` (`.greatestFiniteMagnitude`: no evidence).
  private var floors: WindowMinimum
  let windowFrames: Int
  private var framesSeen = 0
  /// The estimate-to-floor ratio at which trust starts to fall, by log2(k).
  private let thresholds: UnsafeMutablePointer<Float>
  /// The share of speexdsp's removal kept, as `smoothedTrust` last returned it.
  private(set) var trust: Float = 1

  /// Reads `state`'s spectra (the preprocessor outlives this).
  init(state: OpaquePointer, frame: Int, sampleRate: Double) {
    self.state = state
    var size: Int32 = 0
    speex_preprocess_ctl(state, SPEEX_PREPROCESS_GET_NOISE_PSD_SIZE, &size)
    bins = max(Int(size), 2)
    noise = .allocate(capacity: bins)
    noise.initialize(repeating: 0, count: bins)
    power = .allocate(capacity: bins)
    power.initialize(repeating: 0, count: bins)
    windowFrames = max(Int(Self.windowSeconds * sampleRate / Double(frame)), 1)
    floors = WindowMinimum(count: windowFrames)
    thresholds = .allocate(capacity: Self.entries)
    let p = Self.falseAlarm / Double(windowFrames)
    for j in 0..<Self.entries {
      let k = pow(2, Double(j) / Double(Self.perOctave))
      thresholds[j] = Float(k / Self.gammaQuantile(degrees: k, probability: p))
    }
  }

  deinit {
    noise.deallocate()
    power.deallocate()
    thresholds.deallocate()
  }

  /// Forgets the floor (the estimate's trust stays).
  /// - Realtime: safe
  func reset() {
    floors.reset()
    framesSeen = 0
  }

  /// How much of what speexdsp removed from the frame it just ran to keep (0...1); call once a
  /// frame, after `speex_preprocess_run`.
  /// - Realtime: safe
  func smoothedTrust() -> Float {
    let goal = goal() ?? 1
    trust += (goal - trust) * (goal > trust ? Self.rise : Self.fall)
    if trust < 0.001 { trust = 0 } else if trust > 0.999 { trust = 1 }
    return trust
  }

  /// This frame's verdict: 1 while the estimate is plausible, 0 when stale; nil when the
  /// estimate is too quiet to judge.
  /// - Realtime: safe
  private func goal() -> Float? {
    speex_preprocess_ctl(state, SPEEX_PREPROCESS_GET_NOISE_PSD, noise)
    speex_preprocess_ctl(state, SPEEX_PREPROCESS_GET_PSD, power)
    var (n, n2, p): (Float, Float, Float) = (0, 0, 0)
    var (readable, empty) = (0, 0)
    for i in 1..<bins {  // bin 0 (DC) is not used by speexdsp
      let v = Float(noise[i])
      let q = Float(power[i])
      n += v
      n2 += v * v
      p += q
      // Whole units: a bin is empty only if its power is surely under the share (q + 1).
      let share = Self.emptyShare * v
      if share >= 1 {
        readable += 1
        if q + 1 <= share { empty += 1 }
      }
    }
    // speexdsp's first analysis window is half zeros: no evidence of the input's floor.
    let evidence = framesSeen >= 2
    floors.push(evidence ? p : .greatestFiniteMagnitude)
    framesSeen = min(framesSeen + 1, 2)
    if evidence, readable >= Self.readableBins, Float(empty) > Self.emptyFraction * Float(readable) {
      return 0
    }
    guard n >= Self.unitsPerBin * Float(bins - 1) else { return nil }
    let ratio = n / max(floors.minimum, 1)
    let degrees = max(n * n / max(n2, 1), 1)
    let position = min(log2f(degrees) * Float(Self.perOctave), Float(Self.entries - 1))
    let j = Int(position)
    let upper = min(j + 1, Self.entries - 1)
    let threshold = thresholds[j] + (thresholds[upper] - thresholds[j]) * (position - Float(j))
    if ratio <= threshold { return 1 }
    if ratio >= threshold * Self.span { return 0 }
    return 1 - logf(ratio / threshold) / logf(Self.span)
  }

  /// x with P(k, x) = `probability`, P the regularized lower incomplete gamma function (the
  /// gamma distribution of `degrees` = k and scale 1), by bisection on its power series.
  static func gammaQuantile(degrees k: Double, probability: Double) -> Double {
    func lowerP(_ x: Double) -> Double {
      var term = 1 / k
      var sum = term
      var n = 1.0
      while n < 5000 {
        term *= x / (k + n)
        sum += term
        if term < sum * 1e-12 { break }
        n += 1
      }
      return exp(k * log(x) - x - lgamma(k)) * sum
    }
    var (low, high) = (0.0, k)
    for _ in 0..<100 {
      let middle = (low + high) / 2
      if lowerP(middle) < probability { low = middle } else { high = middle }
    }
    return max(low, 1e-12)
  }
}
