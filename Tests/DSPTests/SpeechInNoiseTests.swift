import DSP
import Foundation
import Testing

/// `denoise` on speech in noise (issue 16): over stationary noise (white, pink, speech-shaped at
/// 0, 5 and 10 dB SNR) its mean SI-SDR gain stays at least 4.7 dB, and non-stationary noise
/// (other talkers, bursts of noise) is never made worse than the noisy input.
@Suite struct SpeechInNoiseTests {
  typealias T = TestSignals
  static let rate = T.sampleRate
  /// One second of noise alone before the sentence (the estimator learns it there).
  static let lead = 48_000

  /// Noise of `kind` for `frames` frames, at any level (`siSDR` scales it to the SNR). `speech` is the
  /// target sentence (for the speech-shaped noise).
  static func noise(_ kind: String, frames: Int, speech: [Float]) throws -> [Float] {
    switch kind {
    case "white":
      return T.noise(frames: frames, amplitude: 1, seed: 21)
    case "pink":
      return HeldNoteTests.pinkNoise(seconds: Double(frames) / rate, decibels: -20)
    case "speech-shaped":
      // 32 copies of the sentence at random offsets and signs: its long-term spectrum, steady.
      var x = [Float](repeating: 0, count: frames)
      var seed: UInt64 = 5
      for _ in 0..<32 {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let offset = Int((seed >> 33) % UInt64(speech.count))
        let sign: Float = (seed >> 20) & 1 == 0 ? 1 : -1
        for i in 0..<frames { x[i] += sign * speech[(i + offset) % speech.count] }
      }
      return x
    case "babble":
      // Two other talkers (other espeak-ng voices, other sentences), overlapping the target.
      var x = [Float](repeating: 0, count: frames)
      for (text, voice, start) in [
        ("Please keep your voice steady and clear while the music plays behind you.", "en-gb+f3", 0),
        ("We will meet again at seven o'clock, near the old bridge by the river.", "en-us+m3", 20_000),
      ] {
        guard let talker = try Speech.synthesize(text, voice: voice) else { return [] }
        for (i, v) in talker.enumerated() where start + i < frames { x[start + i] += v }
      }
      return x
    case "short bursts":  // white noise switched on for 100 ms every 400 ms (5 ms ramps)
      return T.noise(frames: frames, amplitude: 1, seed: 23).enumerated().map { i, v in
        let phase = i % 19_200
        let ramp = min(Float(phase) / 240, Float(4_800 - phase) / 240, 1)
        return phase < 4_800 ? v * max(ramp, 0) : 0
      }
    case "long bursts":  // pink noise switched on for 1 s every 2 s (5 ms ramps)
      let pink = HeldNoteTests.pinkNoise(seconds: Double(frames) / rate, decibels: -20)
      return pink.enumerated().map { i, v in
        let phase = i % 96_000
        let ramp = min(Float(phase) / 240, Float(48_000 - phase) / 240, 1)
        return phase < 48_000 ? v * max(ramp, 0) : 0
      }
    default:  // "bursts": pink noise switched on for 250 ms every 750 ms (5 ms ramps)
      let pink = HeldNoteTests.pinkNoise(seconds: Double(frames) / rate, decibels: -20)
      return pink.enumerated().map { i, v in
        let phase = i % 36_000
        let ramp = min(Float(phase) / 240, Float(12_000 - phase) / 240, 1)
        return phase < 12_000 ? v * max(ramp, 0) : 0
      }
    }
  }

  /// SI-SDR of the noisy input and of `denoise`'s output (moved back by its latency) against
  /// the clean sentence, over the sentence, with `kind` noise at `snr` dB.
  static func siSDR(_ kind: String, snr: Double, speech: [Float]) throws -> (before: Double, after: Double) {
    let clean = [Float](repeating: 0, count: lead) + speech
    let raw = try noise(kind, frames: clean.count, speech: speech)
    let gain = (Speech.energy(speech) / Speech.energy(raw[lead...])).squareRoot() / pow(10, snr / 20)
    let noisy = zip(clean, raw).map { $0 + $1 * Float(gain) }
    let (before, after, _) = Speech.denoised(T.chain("denoise"), noisy: noisy, clean: clean, lead: lead)
    T.measured(
      "denoise, \(kind) noise at \(Int(snr)) dB SNR: SI-SDR "
        + String(format: "%.2f → %.2f dB (%+.3f)", before, after, after - before))
    return (before, after)
  }

  @Test("Stationary noise (white, pink, speech-shaped at 0, 5, 10 dB SNR): mean SI-SDR gain at least 4.7 dB")
  func stationaryNoise() throws {
    let speech = try #require(Speech.samples, "espeak-ng and sox make the voice (scripts/setup --test)")
    var gains: [Double] = []
    for kind in ["white", "pink", "speech-shaped"] {
      for snr in [0.0, 5, 10] {
        let (before, after) = try Self.siSDR(kind, snr: snr, speech: speech)
        gains.append(after - before)
      }
    }
    let mean = gains.reduce(0, +) / Double(gains.count)
    T.measured("denoise, stationary noise: mean SI-SDR gain " + String(format: "%.2f dB", mean))
    #expect(mean >= 4.7, "mean SI-SDR gain \(mean) dB over \(gains)")
  }

  @Test(
    "Non-stationary noise (two other talkers, bursts of noise at 0, 5, 10 dB SNR) is never made worse",
    arguments: ["babble", "bursts", "short bursts", "long bursts"])
  func nonStationaryNoise(_ kind: String) throws {
    let speech = try #require(Speech.samples, "espeak-ng and sox make the voice (scripts/setup --test)")
    for snr in [0.0, 5, 10] {
      let (before, after) = try Self.siSDR(kind, snr: snr, speech: speech)
      // Short bursts (white, 100 ms in 400), 2026-12-05: -0.012 / -0.011 / -0.006 dB until
      // `BurstGuard` (speexdsp took next to nothing out of the bursts, and the speech after them
      // lost a little to its estimate); +0.07 / +0.19 / +0.26 dB with it (docs/voice.md).
      #expect(after >= before, "\(kind) at \(snr) dB SNR: SI-SDR \(before) → \(after) dB")
    }
  }
}
