import DSP
import Foundation
import Testing

private typealias T = TestSignals

/// Issue 16, "echo cancellation with the right reference": the music bed playing on the speakers
/// and leaking into the microphone, cancelled with the music as the reference (`aec.reference`
/// 0, the default). The room: the music delayed by 5 or 50 ms through a reverberant response (a
/// few early reflections and a decaying tail over 120 ms), 10 dB louder than the voice at the
/// microphone. The unit is fed as the engine feeds it: each 256-frame block processed, then
/// handed the chain's output (`.output`) and the music as mixed (`.music`).
///
/// 0–4 s the music alone (single talk), 4–7 s the voice over it (double talk), 7–10 s the voice
/// alone (the music stopped: its ports play silence). What the speakers play reaches the
/// microphone's input a JACK round trip (2 × 256 frames) plus the room's delay after the engine
/// mixed it.
@Suite struct EchoRoomTests {
  static let rate = 48_000

  /// A music bed: chords of harmonic tones (bass 55–110 Hz up to 1.7 kHz) changing every 0.5 s,
  /// drums (a 55 Hz kick, a noise snare, a hi-hat) and a little noise, −20 dBFS RMS.
  static func music(frames: Int) -> [Float] {
    let roots: [Double] = [110, 98, 87.3, 130.8, 73.4, 82.4, 123.5, 65.4]
    var x = [Float](repeating: 0, count: frames)
    let noise = T.noise(frames: frames, amplitude: 0.02, seed: 11)
    for n in 0..<frames {
      let root = roots[(n / (rate / 2)) % roots.count]
      let t = Double(n) / Double(rate)
      var s = 0.0
      for (ratio, level) in [
        (0.5, 0.8), (1.0, 1.0), (1.25, 0.6), (1.5, 0.6), (2, 0.4), (3, 0.25), (4, 0.15), (8, 0.08),
      ] {
        s += level * sin(2 * .pi * root * ratio * t)
      }
      // Drums: a kick every 0.5 s, a snare between, a hi-hat every 125 ms.
      let beat = n % (rate / 2)
      let kick =
        beat < 4800 ? 1.2 * exp(-Double(beat) / 1200) * sin(2 * .pi * 55 * Double(beat) / Double(rate)) : 0
      let off = (n + rate / 4) % (rate / 2)
      let snare = off < 4800 ? 8 * exp(-Double(off) / 900) : 0
      let hat = n % (rate / 8) < 1200 ? 3 * exp(-Double(n % (rate / 8)) / 200) : 0
      x[n] = Float(s + kick) + noise[n] * Float(1 + snare + hat)
    }
    let rms = (Speech.energy(x) / Double(frames)).squareRoot()
    return x.map { $0 * Float(0.1 / rms) }
  }

  /// The room's response: `delay` frames, early reflections, then a tail decaying 60 dB over
  /// 120 ms (sparse taps, so the convolution stays fast in a debug build).
  static func response(delay: Int) -> [(Int, Float)] {
    var taps: [(Int, Float)] = [(delay, 1), (delay + 173, -0.5), (delay + 391, 0.35), (delay + 647, -0.25)]
    var seed: UInt64 = 0x5DEE_CE66
    var k = delay + 700
    while k < delay + 5760 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let sign: Float = (seed >> 33) & 1 == 0 ? 1 : -1
      let decay = Float(pow(10, -3 * Double(k - delay) / 5760))
      taps.append((k, 0.3 * sign * decay))
      k += 17 + Int((seed >> 40) % 23)
    }
    return taps
  }

  static func convolve(_ x: [Float], _ taps: [(Int, Float)]) -> [Float] {
    var y = [Float](repeating: 0, count: x.count)
    x.withUnsafeBufferPointer { xp in
      y.withUnsafeMutableBufferPointer { yp in
        for (k, g) in taps where k < xp.count {
          for n in k..<xp.count { yp[n] += g * xp[n - k] }
        }
      }
    }
    return y
  }

  /// Energy below about 300 Hz: through two RBJ low-pass sections at 300 Hz (24 dB/octave).
  static func bass(_ x: ArraySlice<Float>) -> Double {
    let w = 2 * Double.pi * 300 / Double(rate)
    let alpha = sin(w) / (2 * 0.7071)
    let (b0, b1, a0, a1, a2) = ((1 - cos(w)) / 2, 1 - cos(w), 1 + alpha, -2 * cos(w), 1 - alpha)
    var signal = x.map(Double.init)
    for _ in 0..<2 {
      var (x1, x2, y1, y2) = (0.0, 0.0, 0.0, 0.0)
      for i in signal.indices {
        let y = (b0 * signal[i] + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2) / a0
        (x2, x1, y2, y1) = (x1, signal[i], y1, y)
        signal[i] = y
      }
    }
    return signal.reduce(0) { $0 + $1 * $1 }
  }

  /// Runs the room through `U`; returns the microphone's parts and the unit's output.
  static func run<U: VoiceUnit>(
    _ type: U.Type, delay: Int, reference: Float = 0, residual: Float = 0, withEcho: Bool = true
  ) -> (
    echo: [Float], voice: [Float], output: [Float], latency: Int
  ) {
    let frames = 10 * rate
    var music = Self.music(frames: frames)
    for n in (7 * rate)..<frames { music[n] = 0 }  // the music stops at 7 s
    // What the speakers play reaches the microphone's input a JACK round trip (one playback and
    // one capture period, 2 × 256 frames) after the engine mixed it, plus the room's delay.
    var echo = convolve(music, response(delay: 2 * 256 + delay))
    let speech = Speech.samples ?? []
    var voice = [Float](repeating: 0, count: frames)
    var at = 4 * rate
    while !speech.isEmpty && at < frames {  // the sentence again and again from 4 s
      for (i, s) in speech.enumerated() where at + i < frames { voice[at + i] = s }
      at += speech.count + rate / 4
    }
    // The music's echo 10 dB louder than the voice at the microphone.
    let voiceRMS = (Speech.energy(voice[(4 * rate)...]) / Double(6 * rate)).squareRoot()
    let echoRMS = (Speech.energy(echo[..<(7 * rate)]) / Double(7 * rate)).squareRoot()
    let scale = withEcho ? Float(voiceRMS * pow(10, 10.0 / 20) / echoRMS) : 0
    echo = echo.map { $0 * scale }
    var harness = UnitHarness<U>(["reference": reference, "residual_db": residual])
    var output = [Float]()
    output.reserveCapacity(frames)
    var offset = 0
    while offset < frames {
      let n = min(256, frames - offset)
      var l = (0..<n).map { echo[offset + $0] + voice[offset + $0] }
      var r = l
      harness.process(left: &l, right: &r)
      output += l
      Self.hand(&harness, &l, &r, from: .output)
      var (ml, mr) = (Array(music[offset..<(offset + n)]), Array(music[offset..<(offset + n)]))
      Self.hand(&harness, &ml, &mr, from: .music)
      offset += n
    }
    return (echo, voice, output, harness.unit.latencyFrames)
  }

  /// Hands a block to the unit as a reference from `source`.
  static func hand<U: VoiceUnit>(
    _ harness: inout UnitHarness<U>, _ left: inout [Float], _ right: inout [Float],
    from source: ReferenceSource
  ) {
    let n = left.count
    left.withUnsafeMutableBufferPointer { lp in
      right.withUnsafeMutableBufferPointer { rp in
        guard let lp = lp.baseAddress, let rp = rp.baseAddress else { return }
        harness.unit.receiveReference(StereoBlock(left: lp, right: rp, frames: n), from: source)
      }
    }
  }

  static func decibels(_ a: Double, _ b: Double) -> Double { 10 * log10(a / b) }

  /// The figures of one engine in the room: ERLE over 2–4 s (single talk, after 2 s of
  /// convergence); the output's level in double talk (5–7 s) against the same unit's output
  /// with no echo at all; the voice's energy below 300 Hz after the music stopped (7.5–10 s)
  /// against the voice as it came in.
  static func figures<U: VoiceUnit>(_ type: U.Type, delay: Int) -> (
    erle: Double, doubleTalk: Double, bass: Double
  ) {
    let (echo, voice, output, latency) = run(type, delay: delay)
    let quiet = run(type, delay: delay, withEcho: false).output
    let r = rate
    func out(_ x: [Float], _ range: Range<Int>) -> ArraySlice<Float> {
      x[(range.lowerBound + latency)..<(range.upperBound + latency)]
    }
    let erle = decibels(Speech.energy(echo[(2 * r)..<(4 * r)]), Speech.energy(out(output, (2 * r)..<(4 * r))))
    let doubleTalk = decibels(
      Speech.energy(out(output, (5 * r)..<(7 * r))), Speech.energy(out(quiet, (5 * r)..<(7 * r))))
    let alone = (7 * r + r / 2)..<(10 * r - latency)
    let bass = decibels(Self.bass(out(output, alone)), Self.bass(voice[alone]))
    T.measured(
      "\(U.typeName), music bed reference, room delay \(delay * 1000 / r) ms: ERLE "
        + String(format: "%.1f dB, double talk %+.1f dB, voice below 300 Hz %+.2f dB", erle, doubleTalk, bass)
    )
    return (erle, doubleTalk, bass)
  }

  @Test(
    "webrtc-aec with the music bed as reference: ERLE ≥ 25 dB after 2 s, double talk within 3 dB of no echo, the voice's bass within 1 dB",
    arguments: [240, 2400])
  func webrtcRoom(delay: Int) throws {
    try #require(Speech.samples != nil, "espeak-ng and sox make the voice (scripts/setup --test)")
    let (erle, doubleTalk, bass) = Self.figures(WebRTCEchoCanceller.self, delay: delay)
    #expect(erle >= 25, "ERLE \(erle) dB")
    // WebRTC alone (its residual suppressor at its lowest level) dipped the voice 3.1 / 3.3 dB
    // here; after speexdsp's linear filter (`WebRTCEchoCanceller`) 2.5 / 2.0 dB.
    #expect(abs(doubleTalk) <= 3, "double talk: \(doubleTalk) dB from the no-echo case")
    #expect(abs(bass) <= 1, "the voice's bass changed by \(bass) dB")
  }

  /// speexdsp's canceller converges slowly on music (tonal, coloured): it leaves the voice alone
  /// (double talk, bass) but does not reach 25 dB in 2 s — which is why `aec`'s automatic mode
  /// runs WebRTC's (ProcessingModes.automaticEngine).
  @Test(
    "built-in aec in the same room: the voice kept in double talk and in the bass; its ERLE recorded",
    arguments: [240, 2400])
  func builtinRoom(delay: Int) throws {
    try #require(Speech.samples != nil, "espeak-ng and sox make the voice (scripts/setup --test)")
    let (erle, doubleTalk, bass) = Self.figures(EchoCanceller.self, delay: delay)
    #expect(abs(doubleTalk) <= 3, "double talk: \(doubleTalk) dB from the no-echo case")
    #expect(abs(bass) <= 1, "the voice's bass changed by \(bass) dB")
    withKnownIssue("speexdsp's MDF filter reaches 12–19 dB on a music bed in 2 s, not 25") {
      #expect(erle >= 25, "ERLE \(erle) dB")
    }
  }

  @Test(
    "the reference: one block a cycle, the music while it plays (not the output's block of a cycle with music), else the output; with reference 1 always the output"
  )
  func referenceChoice() {
    var choice = ReferenceChoice()
    var taken: [Bool] = [choice.accepts(.output), choice.accepts(.output)]  // no music bed: the output
    // A cycle hands the output's block first, then the music's. The canceller pairs its near
    // end with its reference by position, so the reference stream must get exactly one block a
    // cycle: two in the first cycle with music (the output, then the music) would put the
    // reference a period ahead of the microphone for good, and at a period longer than the
    // room's delay the echo would come before its reference (live at 1024 frames: 0-2 dB ERLE).
    for _ in 0..<3 {
      taken.append(choice.accepts(.output))
      taken.append(choice.accepts(.music))
    }
    // The music stops (its ports gone): that cycle has no reference block (the output's came
    // before it was known), then the output again.
    taken.append(choice.accepts(.output))
    taken.append(choice.accepts(.output))
    #expect(taken == [true, true, true, false, false, true, false, true, false, true], "\(taken)")
    choice.outputOnly = true
    let only = [choice.accepts(.output), choice.accepts(.music), choice.accepts(.output)]
    #expect(only == [true, false, true], "\(only)")
  }
}
