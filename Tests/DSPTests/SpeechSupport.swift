import DSP
import Foundation
import TestSupport
import Testing

/// A real spoken sentence for the voice tests: espeak-ng speaks it to a WAV, sox resamples it to
/// 48 kHz float (both installed by `scripts/setup --test`). Made once per test run.
enum Speech {
  static let sentence = "The quick brown fox jumps over the lazy dog, and then it sleeps in the sun."

  /// The sentence at 48 kHz, peak-normalized to 0.5; nil (with a recorded issue) when espeak-ng
  /// or sox is missing.
  static let samples: [Float]? = {
    do {
      guard let x = try synthesize(sentence) else { return nil }
      let peak = TestSignals.peak(x)
      return x.map { $0 * 0.5 / peak }
    } catch {
      Issue.record("speech synthesis failed: \(error)")
      return nil
    }
  }()

  /// `text` spoken by espeak-ng (at `wordsPerMinute`, or its default rate; in `voice`, an
  /// espeak-ng voice name such as `en-gb+f3`, or its default) and resampled by sox
  /// to 48 kHz float, as espeak-ng made it (not normalized); nil (with a recorded issue) when
  /// either tool is missing or fails.
  static func synthesize(_ text: String, wordsPerMinute: Int? = nil, voice: String? = nil) throws -> [Float]?
  {
    let espeak = ["/usr/bin/espeak-ng", "/usr/local/bin/espeak-ng"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
    guard let espeak, Sox.path != nil else {
      Issue.record("espeak-ng and sox are needed (scripts/setup --test installs them)")
      return nil
    }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
      "dsptests-speech-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let raw = dir.appendingPathComponent("raw.wav")
    let spoken = try Programs.run(
      espeak,
      (wordsPerMinute.map { ["-s", String($0)] } ?? []) + (voice.map { ["-v", $0] } ?? []) + [
        "-w", raw.path, text,
      ])
    guard spoken.status == 0 else {
      Issue.record("espeak-ng failed (\(spoken.status)): \(spoken.err)")
      return nil
    }
    let resampled = dir.appendingPathComponent("speech.wav")
    let result = try Sox.run([raw.path, "-e", "floating-point", "-b", "32", "-r", "48000", resampled.path])
    guard result.status == 0 else {
      Issue.record("sox could not resample the speech (\(result.status)): \(result.stderr)")
      return nil
    }
    return try FloatWAV.read(resampled)
  }

  /// Energy (sum of squares) in Double.
  static func energy(_ x: some Collection<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } }

  /// Scale-invariant SNR (Le Roux et al. 2019) of `estimate` against `reference`, in dB: the
  /// estimate's projection on the reference is the signal, the rest is noise.
  static func siSNR(_ estimate: ArraySlice<Float>, reference: ArraySlice<Float>) -> Double {
    precondition(estimate.count == reference.count)
    var (dot, rr) = (0.0, 0.0)
    for (e, r) in zip(estimate, reference) {
      dot += Double(e) * Double(r)
      rr += Double(r) * Double(r)
    }
    let a = dot / rr
    var (signal, noise) = (0.0, 0.0)
    for (e, r) in zip(estimate, reference) {
      let t = a * Double(r)
      signal += t * t
      noise += (Double(e) - t) * (Double(e) - t)
    }
    return 10 * log10(signal / noise)
  }
}

extension Speech {
  /// `noisy` (the sentence after `lead` frames of noise alone; `clean`, the same without the
  /// noise) through `chain`, mono: the SI-SNR of the input and of the output, moved back by the
  /// chain's latency, against `clean` over the sentence; and the output (`latency` longer).
  static func denoised(_ chain: VoiceChain, noisy: [Float], clean: [Float], lead: Int) -> (
    before: Double, after: Double, output: [Float]
  ) {
    let latency = chain.latencyFrames
    let y = TestSignals.processMono(chain, noisy + [Float](repeating: 0, count: latency))
    let range = lead..<clean.count
    let before = siSNR(noisy[range], reference: clean[range])
    let after = siSNR(y[(range.lowerBound + latency)..<(range.upperBound + latency)], reference: clean[range])
    return (before, after, y)
  }
}
