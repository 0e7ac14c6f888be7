import DSP
import Foundation
import Testing

/// A real spoken sentence for the voice tests: espeak-ng speaks it to a WAV, sox resamples it to
/// 48 kHz float (both installed by `scripts/setup --test`). Made once per test run.
enum Speech {
  static let sentence = "The quick brown fox jumps over the lazy dog, and then it sleeps in the sun."

  /// The sentence at 48 kHz, peak-normalized to 0.5; nil (with a recorded issue) when espeak-ng
  /// or sox is missing.
  static let samples: [Float]? = {
    let espeak = ["/usr/bin/espeak-ng", "/usr/local/bin/espeak-ng"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
    guard let espeak, Sox.path != nil else {
      Issue.record("espeak-ng and sox are needed (scripts/setup --test installs them)")
      return nil
    }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
      "dsptests-speech-\(UUID().uuidString)")
    do {
      try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
      defer { try? FileManager.default.removeItem(at: dir) }
      let raw = dir.appendingPathComponent("raw.wav")
      let p = Process()
      p.executableURL = URL(fileURLWithPath: espeak)
      p.arguments = ["-w", raw.path, sentence]
      p.standardOutput = FileHandle.nullDevice
      p.standardError = FileHandle.nullDevice
      try p.run()
      p.waitUntilExit()
      guard p.terminationStatus == 0 else {
        Issue.record("espeak-ng failed (\(p.terminationStatus))")
        return nil
      }
      let out = dir.appendingPathComponent("speech.wav")
      let r = try Sox.run([raw.path, "-e", "floating-point", "-b", "32", out.path, "rate", "48000"])
      guard r.status == 0 else {
        Issue.record("sox failed: \(r.stderr)")
        return nil
      }
      let x = try FloatWAV.read(out)
      let peak = TestSignals.peak(x)
      return x.map { $0 * 0.5 / peak }
    } catch {
      Issue.record("speech synthesis failed: \(error)")
      return nil
    }
  }()

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
