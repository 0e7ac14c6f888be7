import DSP
import Foundation
import Testing

/// The pure Swift voice units: `deesser` and `leveler`.
@Suite struct VoiceUnitTests {
  typealias T = TestSignals

  /// `x` through a 4th-order band-pass (two RBJ sections) at `hz`, Q `q`, mono.
  static func bandPassed(_ x: [Float], hz: Double, q: Double) -> [Float] {
    var (a, b) = (StereoBiquad(), StereoBiquad())
    a.coefficients = .bandPass(frequencyHz: hz, q: q, sampleRate: T.sampleRate)
    b.coefficients = a.coefficients
    var (l, r) = (x, x)
    l.withUnsafeMutableBufferPointer { lp in
      r.withUnsafeMutableBufferPointer { rp in
        guard let lp = lp.baseAddress, let rp = rp.baseAddress else { return }
        StereoBiquad.process(&a, &b, StereoBlock(left: lp, right: rp, frames: x.count))
      }
    }
    return l
  }

  static func decibels(_ energyRatio: Double) -> Double { 10 * log10(energyRatio) }

  /// Signal: 300 Hz and 1.5 kHz tones at 0.1 each (the voice part), plus bursts of noise
  /// band-passed to about 5–9 kHz (100 ms every 300 ms, −15 dBFS RMS). Measured: the 5–9 kHz
  /// energy (4th-order band-pass at 6.7 kHz, Q 1.7) of output and input during the bursts, and
  /// each tone's DFT magnitude over the whole signal.
  @Test("deesser turns down 5–9 kHz bursts and leaves 200 Hz–2 kHz within 1 dB")
  func deesser() {
    let frames = 3 * 48_000
    let rawNoise = Self.bandPassed(T.noise(frames: frames, amplitude: 1, seed: 3), hz: 6700, q: 1.7)
    let rms = (Speech.energy(rawNoise) / Double(frames)).squareRoot()
    let burstScale = Float(pow(10, -15.0 / 20) / rms)
    var x = [Float](repeating: 0, count: frames)
    var bursts: [Range<Int>] = []
    for start in stride(from: 4800, to: frames - 4800, by: 14_400) { bursts.append(start..<(start + 4800)) }
    for n in 0..<frames {
      let t = Double(n) / T.sampleRate
      x[n] = 0.1 * Float(sin(2 * .pi * 300 * t)) + 0.1 * Float(sin(2 * .pi * 1500 * t))
    }
    for b in bursts { for n in b { x[n] += burstScale * rawNoise[n] } }
    let y = T.processMono(T.chain("deesser"), x)
    let (bandIn, bandOut) = (Self.bandPassed(x, hz: 6700, q: 1.7), Self.bandPassed(y, hz: 6700, q: 1.7))
    var (eIn, eOut) = (0.0, 0.0)
    for b in bursts {
      eIn += Speech.energy(bandIn[b])
      eOut += Speech.energy(bandOut[b])
    }
    let reduction = Self.decibels(eIn / eOut)
    var worstTone = 0.0
    for hz in [300.0, 1500.0] {
      let change = T.magnitudeDecibels(y, atHz: hz) - T.magnitudeDecibels(x, atHz: hz)
      worstTone = max(worstTone, abs(change))
    }
    T.measured(
      "deesser defaults: 5–9 kHz bursts reduced \(String(format: "%.1f", reduction)) dB; 300 Hz / 1.5 kHz tones within \(String(format: "%.2f", worstTone)) dB"
    )
    #expect(reduction >= 6, "5–9 kHz reduced only \(reduction) dB")
    #expect(worstTone <= 1, "tones moved \(worstTone) dB")
    // The static split's worst case in 200 Hz–2 kHz at full depth (the band's gain at 2 kHz).
    let g = Double(DSPMath.gain(decibels: -12))
    let h = BiquadCoefficients.bandPass(frequencyHz: 7000, q: 0.8, sampleRate: T.sampleRate)
    for hz in [200.0, 500.0, 1000.0, 2000.0] {
      // y = x + (g − 1)·bp(x): the band-pass response scaled and added to 1.
      let w = 2 * Double.pi * hz / T.sampleRate
      let (c1, s1, c2, s2) = (cos(w), sin(w), cos(2 * w), sin(2 * w))
      let (nr, ni) = (
        Double(h.b0) + Double(h.b1) * c1 + Double(h.b2) * c2, -(Double(h.b1) * s1 + Double(h.b2) * s2)
      )
      let (dr, di) = (1 + Double(h.a1) * c1 + Double(h.a2) * c2, -(Double(h.a1) * s1 + Double(h.a2) * s2))
      let den = dr * dr + di * di
      let (hr, hi) = ((nr * dr + ni * di) / den, (ni * dr - nr * di) / den)
      let (re, im) = (1 + (g - 1) * hr, (g - 1) * hi)
      let db = 10 * log10(re * re + im * im)
      #expect(abs(db) < 1, "\(hz) Hz moves \(db) dB at full depth")
    }
  }

  /// A speech-like signal: harmonics of 140 Hz under a 4 Hz syllable envelope, phrases of 2 s
  /// with 0.5 s pauses, scaled to `rmsDecibels` (RMS over the phrases).
  static func speechLike(seconds: Double, rmsDecibels: Double) -> (signal: [Float], active: [Bool]) {
    let frames = Int(seconds * T.sampleRate)
    var x = [Float](repeating: 0, count: frames)
    var active = [Bool](repeating: false, count: frames)
    var energy = 0.0
    var count = 0
    for n in 0..<frames {
      let t = Double(n) / T.sampleRate
      guard t.truncatingRemainder(dividingBy: 2.5) < 2 else { continue }
      let envelope = 0.3 + 0.7 * abs(sin(2 * .pi * 2 * t))
      var s = 0.0
      for k in 1...8 { s += sin(2 * .pi * 140 * Double(k) * t + Double(k)) / Double(k) }
      x[n] = Float(envelope * s)
      active[n] = true
      energy += Double(x[n]) * Double(x[n])
      count += 1
    }
    let scale = Float(pow(10, rmsDecibels / 20) / (energy / Double(count)).squareRoot())
    return (x.map { $0 * scale }, active)
  }

  static func rmsDecibels(_ x: [Float], _ active: [Bool], in range: Range<Int>) -> Double {
    var (e, n) = (0.0, 0)
    for i in range where active[i] {
      e += Double(x[i]) * Double(x[i])
      n += 1
    }
    return 10 * log10(e / Double(n))
  }

  /// Runs `x` through a leveler chain in 256-frame blocks; returns the output and the
  /// `leveler.gain_db` reading after each block.
  static func level(_ x: [Float], _ values: [String: Float] = [:]) -> ([Float], [Float]) {
    let chain = T.chain("leveler", values)
    var y = x
    var gains: [Float] = []
    var offset = 0
    while offset < x.count {
      let n = min(256, x.count - offset)
      var (l, r) = (Array(y[offset..<(offset + n)]), Array(y[offset..<(offset + n)]))
      T.process(chain, left: &l, right: &r, blockSize: n)
      y.replaceSubrange(offset..<(offset + n), with: l)
      gains.append(chain.targets.value(T.index(chain, "leveler.gain_db")))
      offset += n
    }
    return (y, gains)
  }

  @Test("leveler brings quiet and loud speech to the target within 6 s", arguments: [-34.0, -6.0])
  func levelerConverges(inputDecibels: Double) {
    let (x, active) = Self.speechLike(seconds: 10, rmsDecibels: inputDecibels)
    let (y, gains) = Self.level(x)
    let settled = Int(6 * T.sampleRate)..<x.count
    let out = Self.rmsDecibels(y, active, in: settled)
    T.measured(
      "leveler: input \(inputDecibels) dBFS RMS → \(String(format: "%.2f", out)) dBFS over 6–10 s (target -20), final gain \(gains.last!) dB"
    )
    #expect(abs(out - -20) <= 2, "output \(out) dBFS")
    #expect(gains.allSatisfy { $0 <= 15 })
  }

  @Test("leveler never exceeds max_gain_db")
  func levelerMaxGain() {
    let (x, _) = Self.speechLike(seconds: 8, rmsDecibels: -44)
    let (_, gains) = Self.level(x, ["max_gain_db": 9])
    T.measured("leveler: -44 dBFS input with max_gain_db 9: largest gain \(gains.max()!) dB")
    #expect(gains.max()! <= 9)
    #expect(gains.max()! > 8.5, "the gain reaches its limit")
  }

  @Test("leveler holds its gain through silence and faint noise")
  func levelerHoldsInSilence() {
    let (speech, _) = Self.speechLike(seconds: 8, rmsDecibels: -30)
    let pause = T.noise(frames: 5 * 48_000, amplitude: 0.0005, seed: 9)  // about −70 dBFS RMS
    let (_, gains) = Self.level(speech + pause)
    let blocksPerSecond = 48_000 / 256
    let before = gains[8 * blocksPerSecond - 1]
    let during = gains[(8 * blocksPerSecond)...]
    let drift = during.map { abs($0 - before) }.max()!
    T.measured(
      "leveler: gain \(before) dB at the end of speech; moves at most \(drift) dB in 5 s of −70 dBFS noise")
    #expect(before > 5, "the quiet speech was boosted")
    #expect(drift <= 0.5)
  }
}
