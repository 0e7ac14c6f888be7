import DSP
import Foundation
import Testing

/// The speexdsp units: `denoise` on real speech in noise, `aec` against a simulated echo path.
@Suite struct SpeexUnitTests {
  typealias T = TestSignals

  @Test("denoise and aec declare 10 ms of latency, and the signal arrives exactly then")
  func latency() {
    for type in ["denoise", "aec"] {
      let chain = T.chain(type, type == "denoise" ? ["suppression_db": 0] : [:])
      #expect(chain.latencyFrames == 480, "\(type)")
      // A 1 kHz tone burst: the output's onset is the input's, 480 frames later.
      var x = [Float](repeating: 0, count: 9600)
      for i in 4000..<9600 { x[i] = 0.25 * Float(sin(2 * Double.pi * 1000 * Double(i) / T.sampleRate)) }
      let y = T.processMono(chain, x, blockSize: 100)
      let onset = T.firstIndex(of: y, above: 0.01)
      #expect(onset.map { abs($0 - 4480) <= 2 } ?? false, "\(type): onset at \(String(describing: onset))")
      T.measured(
        "\(type): latency \(chain.latencyFrames) frames, tone onset at \(onset ?? -1) for input onset 4000")
    }
  }

  /// White noise (the full 24 kHz band) is added to the sentence at 5 dB SNR, after 1 s of noise
  /// alone for the estimator to learn it. Method: scale-invariant SNR against the clean
  /// sentence, of the input and of the output moved back by the declared latency, over the
  /// sentence (not the first second).
  @Test("denoise improves the SNR of speech in white noise")
  func denoiseImprovesSNR() throws {
    guard let speech = Speech.samples else { return }
    let lead = 48_000
    let clean = [Float](repeating: 0, count: lead) + speech
    let cleanRMS = (Speech.energy(speech) / Double(speech.count)).squareRoot()
    let noiseRMS = cleanRMS / pow(10, 5.0 / 20)
    // Uniform noise of amplitude a has RMS a/√3.
    let noise = T.noise(frames: clean.count, amplitude: Float(noiseRMS * 3.0.squareRoot()), seed: 42)
    let noisy = zip(clean, noise).map { $0 + $1 }
    let chain = T.chain("denoise")
    let latency = chain.latencyFrames
    let (before, after, y) = Speech.denoised(chain, noisy: noisy, clean: clean, lead: lead)
    // Noise alone (the lead, after the estimator's first half second): attenuation.
    let quiet = 24_000..<lead
    let attenuation =
      10
      * log10(
        Speech.energy(noisy[quiet])
          / Speech.energy(y[(quiet.lowerBound + latency)..<(quiet.upperBound + latency)]))
    T.measured(
      "denoise (suppression 25 dB): SI-SNR \(String(format: "%.1f", before)) → \(String(format: "%.1f", after)) dB (+\(String(format: "%.1f", after - before))); noise alone attenuated \(String(format: "%.1f", attenuation)) dB"
    )
    #expect(after - before >= 8, "SNR improvement \(after - before) dB")
    #expect(attenuation >= 17, "noise alone attenuated \(attenuation) dB")
  }

  /// Echo return loss enhancement (dB) over `window` of the microphone's echo: its energy over
  /// that of the unit's output, moved back by the unit's `latency`.
  static func erle(_ echo: [Float], _ output: [Float], latency: Int, over window: Range<Int>) -> Double {
    let residual = Speech.energy(output[(window.lowerBound + latency)..<(window.upperBound + latency)])
    return 10 * log10(Speech.energy(echo[window]) / max(residual, 1e-20))
  }

  /// Single talk: a far-end signal (uniform noise, −20 dBFS RMS) is handed to the unit as the
  /// chain's output (`receiveReference`) after each 256-frame block, and reaches the microphone
  /// 600 frames later through a room (−6 dB and a decaying 5 ms FIR). The near end is silent.
  /// ERLE = echo energy at the microphone / energy of the unit's output (moved back by its
  /// latency), over the last 2 s of 6 s.
  @Test("aec cancels a simulated echo path (ERLE after convergence)")
  func aecERLE() {
    let frames = 6 * 48_000
    let (echo, output, latency) = Self.singleTalk(EchoCanceller.self, frames: frames)
    let erle = Self.erle(echo, output, latency: latency, over: (frames - 2 * 48_000)..<(frames - latency))
    let first = Self.erle(echo, output, latency: latency, over: 48_000..<96_000)
    T.measured(
      "aec: ERLE \(String(format: "%.1f", erle)) dB over the last 2 s (\(String(format: "%.1f", first)) dB in the second second)"
    )
    #expect(erle >= 15, "ERLE \(erle) dB")
  }

  /// Single talk through a `U` (an echo canceller): the far end handed over as the reference
  /// after each 256-frame block, its echo through `room` at the microphone; the echo, the unit's
  /// output and its latency.
  static func singleTalk<U: VoiceUnit>(_ type: U.Type, frames: Int) -> (
    echo: [Float], output: [Float], latency: Int
  ) {
    let block = 256
    let far = T.noise(frames: frames, amplitude: Float(0.1 * 3.0.squareRoot()), seed: 7)
    let echo = room(far, delay: 600)
    var harness = UnitHarness<U>()
    var output = [Float]()
    var offset = 0
    while offset < frames {
      let n = min(block, frames - offset)
      var l = Array(echo[offset..<(offset + n)])
      var r = l
      harness.process(left: &l, right: &r)
      output += l
      var fl = Array(far[offset..<(offset + n)])
      var fr = fl
      fl.withUnsafeMutableBufferPointer { lp in
        fr.withUnsafeMutableBufferPointer { rp in
          guard let lp = lp.baseAddress, let rp = rp.baseAddress else { return }
          harness.unit.receiveReference(StereoBlock(left: lp, right: rp, frames: n), from: .output)
        }
      }
      offset += n
    }
    return (echo, output, harness.unit.latencyFrames)
  }

  /// The room: `x` delayed by `delay`, at −6 dB, through a decaying 5 ms FIR (fixed taps).
  static func room(_ x: [Float], delay: Int) -> [Float] {
    let taps: [Float] = (0..<240).map { k in
      let sign: Float = k % 3 == 0 ? 1 : -0.5
      return 0.5 * Float(exp(-Double(k) / 40)) * sign
    }
    let norm = (taps.reduce(0) { $0 + $1 * $1 }).squareRoot() / 0.5
    var y = [Float](repeating: 0, count: x.count)
    for n in delay..<x.count {
      var s: Float = 0
      for k in 0..<min(taps.count, n - delay + 1) { s += taps[k] * x[n - delay - k] }
      y[n] = s / norm
    }
    return y
  }
}
