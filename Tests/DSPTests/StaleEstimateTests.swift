import Foundation
import Testing

@testable import DSP

/// `StaleEstimate` (issue 16, non-stationary noise): the denoiser trusts speexdsp's estimate in
/// steady noise, white to a fan's rumble, and stops trusting it once noise that ended leaves the
/// input quieter than the estimate allows.
@Suite struct StaleEstimateTests {
  static let rate = 48_000.0
  static let frame = 240

  /// The trust after each 5 ms frame of `x` through a denoiser's engine, and its output (moved
  /// back by the frame it lags).
  static func run(_ x: [Float]) -> (trusts: [Float], output: [Float]) {
    let engine = Denoise.Engine(frame: frame, sampleRate: Int32(rate))
    engine.setSuppression(decibels: 25)
    var (trusts, output): ([Float], [Float]) = ([], [])
    for start in stride(from: 0, to: x.count - frame + 1, by: frame) {
      for i in 0..<frame { engine.buffers.pending[i] = x[start + i] }
      engine.step(held: false)
      trusts.append(engine.staleness.trust)
      if start > 0 { output += (0..<frame).map { engine.buffers.ready[$0] } }
    }
    return (trusts, output)
  }

  static func trusts(_ x: [Float]) -> [Float] { run(x).trusts }

  static func rmsDecibels(_ x: ArraySlice<Float>) -> Double {
    10 * log10(x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1)))
  }

  static func seconds(_ s: Double) -> Int { Int(s * rate) / frame }

  @Test("Steady noise keeps the estimate trusted", arguments: ["white", "pink", "fan"])
  func steadyNoise(_ kind: String) {
    let x =
      switch kind {
      case "white": TestSignals.noise(frames: 3 * 48_000, amplitude: 0.02, seed: 3)
      case "pink": HeldNoteTests.pinkNoise(seconds: 3, decibels: -45)
      default: HeldNoteTests.fan(seconds: 3, decibels: -45)
      }
    let t = Self.trusts(x)
    let settled = t[Self.seconds(1)...]
    TestSignals.measured("\(kind) noise: least trust after 1 s \(settled.min() ?? -1)")
    #expect(settled.allSatisfy { $0 == 1 }, "\(kind): \(settled.filter { $0 < 1 }.count) frames below 1")
  }

  @Test("Noise that stops under a sound with gaps is no longer trusted within 0.3 s, and the sound passes")
  func noiseThatStops() {
    // Pink noise at -30 dBFS for 1.5 s, then only a 1 kHz tone at -20 dBFS in 150 ms notes with
    // 60 ms gaps (a talker's syllables), over a faint floor at -80 dBFS throughout.
    let n = 4 * 48_000
    let pink = HeldNoteTests.pinkNoise(seconds: 4, decibels: -30)
    let floor = TestSignals.noise(frames: n, amplitude: 0.000_17, seed: 8)
    let x = (0..<n).map { i -> Float in
      let t = Double(i) / Self.rate
      let noise = t < 1.5 ? pink[i] : 0
      let note = t >= 1.5 && (i % 10_080) < 7_200 ? Float(0.14 * sin(2 * Double.pi * 1000 * t)) : 0
      return noise + note + floor[i]
    }
    // The notes' level after the noise, through the denoiser against the input (2-3.9 s);
    // speexdsp alone takes them 0.023 dB lower.
    Self.expectDistrusted(x, "noise that stops", after: 1.8..<4, sound: 2..<3.9, bound: 0.01)
  }

  /// Runs `x` (noise until 1.5 s, then none): trust 1 in the noise's last 0.5 s, below 0.3 over
  /// `after` (seconds), and the sound over `sound` (seconds) less than `bound` dB lower than in
  /// the input.
  static func expectDistrusted(
    _ x: [Float], _ label: String, after: Range<Double>, sound: Range<Double>, bound: Double
  ) {
    let (t, y) = run(x)
    let during = t[seconds(1)..<seconds(1.5)]
    let later = t[seconds(after.lowerBound)..<min(seconds(after.upperBound), t.count)]
    let window = Int(sound.lowerBound * rate)..<Int(sound.upperBound * rate)
    let loss = rmsDecibels(x[window]) - rmsDecibels(y[window])
    TestSignals.measured(
      "\(label): least trust in the noise \(during.min() ?? -1), most trust over \(after) s "
        + "\(later.max() ?? -1); the sound over \(sound) s " + String(format: "%.4f dB lower", loss))
    #expect(during.allSatisfy { $0 == 1 })
    #expect(later.allSatisfy { $0 < 0.3 })
    #expect(abs(loss) < bound, "\(label): \(loss) dB")
  }

  @Test("Noise that stops under a sound without gaps is distrusted within 0.1 s: the empty bins show it")
  func noiseThatStopsUnderASteadySound() {
    // Pink noise at -30 dBFS for 1.5 s, then only four tones (300 Hz to 2.3 kHz, -43 dBFS each,
    // about as loud as the noise's estimate in their bins): no quiet frame tells the noise ended
    // within the floor test's 0.5 s, but the bins around and above the tones hold nothing of it.
    let n = 3 * 48_000
    let pink = HeldNoteTests.pinkNoise(seconds: 3, decibels: -30)
    let x = (0..<n).map { i -> Float in
      let t = Double(i) / Self.rate
      guard t >= 1.5 else { return pink[i] }
      return [300.0, 700, 1100, 2300].reduce(Float(0)) { $0 + Float(0.01 * sin(2 * Double.pi * $1 * t)) }
    }
    // The tones in their first 0.35 s, before speexdsp would learn them as noise. The floor test
    // alone (the empty-bin test switched off): trust 1 throughout, the tones 12.9 dB lower.
    Self.expectDistrusted(
      x, "noise that stops under steady tones", after: 1.6..<1.9, sound: 1.55..<1.9, bound: 0.1)
  }

  @Test("Noise too quiet to judge (white at -60 dBFS, a preset's pauses) leaves speexdsp trusted")
  func quietNoise() {
    let t = Self.trusts(TestSignals.noise(frames: 2 * 48_000, amplitude: 0.001_7, seed: 4))
    #expect(t.allSatisfy { $0 == 1 })
    #expect(Self.trusts([Float](repeating: 0, count: 48_000)).allSatisfy { $0 == 1 })
  }

  @Test("The threshold follows the gamma quantile: white noise's many bins near 1.3, a few bins far higher")
  func thresholds() {
    // k / x where P(k, x) = 0.01 / 100 (scipy.stats.gamma.ppf: 1.29 at k = 240, 17.26 at k = 4).
    let p = 0.01 / 100
    #expect(abs(240 / StaleEstimate.gammaQuantile(degrees: 240, probability: p) - 1.29) < 0.01)
    #expect(abs(4 / StaleEstimate.gammaQuantile(degrees: 4, probability: p) - 17.26) < 0.05)
  }
}
