import Foundation
import Testing

@testable import DSP

/// `BurstGuard` (issue 16, non-stationary noise): the denoiser's test for short broadband bursts
/// finds bursts of white noise under speech, and never takes steady noise, voices or a voice's
/// sibilants or percussion that dies away for one (a hiss centred at 10 kHz is still not a burst; one
/// at 11 kHz is).
@Suite struct BurstGuardTests {
  typealias T = TestSignals
  static let rate = 48_000.0
  static let frame = 240

  /// The guard's verdict on each 5 ms frame of `x`.
  static func verdicts(_ x: [Float]) -> [Bool] {
    let guardian = BurstGuard(frame: frame, sampleRate: rate)
    return stride(from: 0, to: x.count - frame + 1, by: frame).map { start in
      x[start..<(start + frame)].withUnsafeBufferPointer { b in
        b.baseAddress.map { guardian.isBurst($0, count: frame) } ?? false
      }
    }
  }

  /// `x` through one biquad section (direct form I).
  static func filtered(_ x: [Float], _ c: BiquadCoefficients) -> [Float] {
    var (x1, x2, y1, y2): (Float, Float, Float, Float) = (0, 0, 0, 0)
    return x.map { v in
      let y = c.b0 * v + c.b1 * x1 + c.b2 * x2 - c.a1 * y1 - c.a2 * y2
      (x2, x1, y2, y1) = (x1, v, y1, y)
      return y
    }
  }

  /// Hits of high-passed (6 kHz) white noise every `period` frames, dying away with time
  /// constant `decay` seconds, from `amplitude` peak: a hi-hat (40 ms) or a cymbal's crash (1 s).
  static func hits(frames: Int, period: Int, decay: Double, amplitude: Float) -> [Float] {
    let c = BiquadCoefficients.highPass(frequencyHz: 6_000, q: 0.5.squareRoot(), sampleRate: rate)
    return filtered(T.noise(frames: frames, amplitude: 1, seed: 77), c).enumerated().map { i, y in
      y * amplitude * Float(exp(-Double(i % period) / rate / decay))
    }
  }

  /// A hiss like a voice's /s/: white noise through two band-passes at `hz` (Q 1), in 150 ms
  /// pieces every 600 ms (10 ms ramps), at `amplitude` peak.
  static func sibilants(frames: Int, hz: Double, amplitude: Float) -> [Float] {
    let c = BiquadCoefficients.bandPass(frequencyHz: hz, q: 1, sampleRate: rate)
    let x = filtered(filtered(T.noise(frames: frames, amplitude: 1, seed: 31), c), c)
    let peak = max(T.peak(x), 1e-9)
    return x.enumerated().map { i, v in
      let phase = i % 28_800  // 150 ms every 600 ms, 10 ms ramps
      let ramp = min(Float(phase) / 480, Float(7_200 - phase) / 480, 1)
      return phase < 7_200 ? v * amplitude / peak * max(ramp, 0) : 0
    }
  }

  @Test("Bursts of white noise under speech count where they stand out; nothing between them does")
  func whiteBursts() throws {
    let speech = try #require(Speech.samples, "espeak-ng and sox make the voice (scripts/setup --test)")
    for snr in [0.0, 10] {
      let lead = SpeechInNoiseTests.lead
      let clean = [Float](repeating: 0, count: lead) + speech
      let raw = try SpeechInNoiseTests.noise("short bursts", frames: clean.count, speech: speech)
      let gain = (Speech.energy(speech) / Speech.energy(raw[lead...])).squareRoot() / pow(10, snr / 20)
      let x = zip(clean, raw).map { $0 + $1 * Float(gain) }
      let v = Self.verdicts(x)
      // Bursts: 100 ms in every 400 (5 ms ramps). The first has no floor to stand out from yet.
      var (inside, found, outside, wrong) = (0, 0, 0, 0)
      for (k, burst) in v.enumerated() {
        let phase = (k * Self.frame) % 19_200
        // From the burst's sixth frame (its first is its 5 ms ramp; four settle) to its end.
        if k * Self.frame >= 19_200, phase >= 1_200, phase + Self.frame <= 4_560 {
          inside += 1
          if burst { found += 1 }
        } else if phase >= 4_800 + Self.frame, phase + Self.frame <= 19_200 {
          outside += 1
          if burst { wrong += 1 }
        }
      }
      T.measured(
        "bursts at \(Int(snr)) dB SNR: \(found) of \(inside) frames inside found, \(wrong) of \(outside) between"
      )
      // Under a loud vowel a burst's upper band holds under a fifth of the frame's power: at 10 dB
      // SNR about a quarter of its frames go unfound (measured 2026-12-05: 176 and 130 of 182).
      #expect(
        Double(found) >= (snr == 0 ? 0.9 : 0.6) * Double(inside), "\(snr) dB SNR: \(found) of \(inside)")
      #expect(wrong == 0, "\(snr) dB SNR: \(wrong) of \(outside)")
    }
  }

  @Test(
    "Steady noise of any colour, voices and a voice's sibilants never count",
    arguments: [
      "white", "pink", "fan", "speech in white", "speech in pink", "babble", "sibilants", "sibilants in pink",
      "hi-hat",
    ])
  func neverABurst(_ kind: String) throws {
    let n = 6 * 48_000
    let speech = try #require(Speech.samples, "espeak-ng and sox make the voice (scripts/setup --test)")
    let voice = (0..<n).map { i in i >= 48_000 && i - 48_000 < speech.count ? speech[i - 48_000] : 0 }
    func sum(_ a: [Float], _ b: [Float]) -> [Float] { zip(a, b).map { $0 + $1 } }
    let x: [Float] =
      switch kind {
      case "white": T.noise(frames: n, amplitude: 0.1, seed: 3)
      case "pink": HeldNoteTests.pinkNoise(seconds: 6, decibels: -20)
      case "fan": HeldNoteTests.fan(seconds: 6, decibels: -20)
      // The voice 20 dB above the noise: its sibilants stand out most.
      case "speech in white": sum(voice, T.noise(frames: n, amplitude: 0.003, seed: 3))
      case "speech in pink": sum(voice, HeldNoteTests.pinkNoise(seconds: 6, decibels: -50))
      case "babble": try SpeechInNoiseTests.noise("babble", frames: n, speech: speech)
      case "sibilants": sum(voice, Self.sibilants(frames: n, hz: 9_000, amplitude: 0.5))
      // Hits every 250 ms dying away over 40 ms, at -20 dBFS peak over pink noise at -45 dBFS.
      case "hi-hat":
        sum(
          Self.hits(frames: n, period: 12_000, decay: 0.04, amplitude: 0.1),
          HeldNoteTests.pinkNoise(seconds: 6, decibels: -45))
      default:
        sum(
          Self.sibilants(frames: n, hz: 7_000, amplitude: 0.5),
          HeldNoteTests.pinkNoise(seconds: 6, decibels: -50))
      }
    let v = Self.verdicts(x)
    T.measured("\(kind): \(v.filter { $0 }.count) of \(v.count) frames a burst \(v.indices.filter { v[$0] })")
    #expect(!v.contains(true), "\(kind): \(v.filter { $0 }.count) frames")
  }

  @Test("Noise that starts counts from its fifth frame to 0.15 s (speexdsp learns the rest)")
  func noiseThatLasts() {
    let n = 3 * 48_000
    let hiss = T.noise(frames: n, amplitude: 0.1, seed: 4)
    let x = (0..<n).map { i in i >= 48_000 ? hiss[i] : 0 }
    let v = Self.verdicts(x)
    let start = 48_000 / Self.frame
    let counted = v.indices.filter { v[$0] }
    T.measured("white noise from 1 s: frames \(counted.first ?? -1)...\(counted.last ?? -1) a burst")
    #expect(counted == Array((start + 4)..<(start + 30)), "\(counted)")
  }

  @Test(
    "Percussion through denoise keeps its level: hi-hat hits within 0.5 dB, a crash's first half second within 1 dB",
    arguments: [(12_000, 0.04, 0.5), (96_000, 1.0, 1.0)])
  func percussionKeepsItsLevel(_ period: Int, _ decay: Double, _ allowedDecibels: Double) {
    // Hits at -20 dBFS peak from 2 s over pink noise at -45 dBFS; compared over each hit's first
    // 60 ms (hi-hat) or 500 ms (crash).
    let n = 6 * 48_000
    let floor = HeldNoteTests.pinkNoise(seconds: 6, decibels: -45)
    let hits = Self.hits(frames: n, period: period, decay: decay, amplitude: 0.1).enumerated().map { i, v in
      i >= 96_000 ? v : 0
    }
    let chain = T.chain("denoise")
    let latency = chain.latencyFrames
    let y = T.processMono(chain, zip(floor, hits).map { $0 + $1 } + [Float](repeating: 0, count: latency))
    let window = period == 12_000 ? 2_880 : 24_000
    var (input, output) = (0.0, 0.0)
    for i in 96_000..<(n - 12_000) where i % period < window {
      input += Double(hits[i] * hits[i])
      output += Double(y[i + latency] * y[i + latency])
    }
    let change = 10 * log10(output / input)
    T.measured("denoise, percussion (hits dying away over \(decay) s): " + String(format: "%+.2f dB", change))
    #expect(abs(change) <= allowedDecibels, "\(change) dB")
  }
}
