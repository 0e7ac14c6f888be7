import DSP
import Foundation
import TestSupport
import Testing

@testable import LiveMicControl
@testable import LiveMicOffline
@testable import LiveMicPresets

/// `--loudness-target` through whole presets, rendered offline (`livemic render`'s code) and
/// measured with libebur128.
@Suite("Loudness target (render)")
struct LoudnessTargetRenderTests {
  /// 48 s of espeak-ng speech at 48 kHz, peak-normalized to `peakDecibels`, in a WAV file.
  static func speech(peakDecibels: Double) throws -> String {
    let unique = UUID().uuidString.prefix(6)
    let raw = LoudnessTests.temporary("target-speech-raw-\(unique).wav")
    let path = LoudnessTests.temporary("target-speech-\(unique).wav")
    defer { try? FileManager.default.removeItem(atPath: raw) }
    let spoken = try Programs.run(
      tool: "espeak-ng",
      [
        "-w", raw,
        "Good evening and welcome to the stream. Tonight we talk about loudness, and how a voice "
          + "should sit over the music without ever getting too loud or too quiet. Let us begin.",
      ])
    try #require(spoken?.status == 0, "espeak-ng is needed (scripts/setup --test installs it)")
    let (stereo, rate) = try LoudnessTests.readStereo(raw)
    let mono = stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
    let peak = mono.reduce(0) { max($0, abs($1)) }
    let scale = Float(pow(10, peakDecibels / 20)) / peak
    // Resampled to 48 kHz by linear interpolation (espeak-ng speaks at 22,050 Hz).
    let step = Double(rate) / 48000
    let one = (0..<Int(Double(mono.count) / step) - 1).map { i -> Float in
      let x = Double(i) * step
      let (j, t) = (Int(x), Float(x - Double(Int(x))))
      return (mono[j] * (1 - t) + mono[j + 1] * t) * scale
    }
    let frames = 48 * 48000
    try LoudnessTests.writeWav(path, rate: 48000, frames: frames) { f, _ in one[f % one.count] }
    return path
  }

  /// Renders `input` through `preset` with `livemic render` — the release binary the setup
  /// builds (`$LIVEMIC_BINARY`, else .build/release/livemic: ten times faster than this debug
  /// test build), or `Renderer` in process when there is none — and returns the output.
  static func render(_ input: String, preset: String, target: Float?, _ overrides: [String] = []) throws
    -> [Float]
  {
    let output = LoudnessTests.temporary("target-\(preset)-\(UUID().uuidString.prefix(6)).wav")
    defer { try? FileManager.default.removeItem(atPath: output) }
    let release = Programs.packageRoot.appendingPathComponent(".build/release/livemic").path
    let environment = ProcessInfo.processInfo.environment["LIVEMIC_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
    if let binary = environment ?? (FileManager.default.isExecutableFile(atPath: release) ? release : nil) {
      let arguments =
        ["render", "-p", preset] + overrides.flatMap { ["-c", $0] }
        + (target.map { ["--loudness-target", "\($0)"] } ?? []) + [input, output]
      let result = try Programs.run(binary, arguments)
      try #require(result.status == 0, "livemic render failed: \(result.err)")
    } else {
      var options = RenderOptions()
      options.preset = preset
      options.inputPath = input
      options.outputPath = output
      options.loudnessTargetLufs = target
      options.overrides = try overrides.map { try ParameterOverride(parsing: $0) }
      options.showProgress = false
      try Renderer.render(options)
    }
    return try LoudnessTests.readStereo(output).samples
  }

  @Test(
    "stream with --loudness-target -16: the last 30 s measure -16 LUFS ±0.5, peaks under the limiter's ceiling"
  )
  func streamReachesMinus16() throws {
    let input = try Self.speech(peakDecibels: -14)
    defer { try? FileManager.default.removeItem(atPath: input) }
    let dry = try Self.render(input, preset: "stream", target: nil, ["output.volume=1"])
    let wet = try Self.render(input, preset: "stream", target: -16, ["output.volume=1"])
    let tail = { (x: [Float]) in Array(x.suffix(2 * 30 * 48000)) }
    let before = LoudnessTests.reference(tail(dry), rate: 48000)
    let after = LoudnessTests.reference(tail(wet), rate: 48000)
    let samplePeak = 20 * log10(Double(wet.reduce(0) { max($0, abs($1)) }))
    print(
      "loudness target: stream \(before.integrated) LUFS (TP \(before.truePeak) dBTP) → with -16: "
        + "\(after.integrated) LUFS, TP \(after.truePeak) dBTP, sample peak \(samplePeak) dBFS")
    #expect(before.integrated < -18, "the preset alone is quieter than the target")
    #expect(abs(after.integrated - -16) <= 0.5)
    // The stream preset's limiter ceiling is -2 dBFS (sample peaks); true peak may be a little over.
    #expect(samplePeak <= -2 + 0.01)
    #expect(after.truePeak <= -1.5)
  }

  @Test(
    "--loudness-target puts a loudness stage before the limiter, with its ceiling, and turns a bypassed limiter on"
  )
  func insertsBeforeTheLimiter() throws {
    var run = RunOptions()
    run.preset = "stream"
    run.loudnessTargetLufs = -14
    let stream = try LiveSession.stages(for: run).1.compactMap(\.unit)
    let at = try #require(stream.firstIndex { $0.type == "loudness" })
    #expect(stream[at + 1].type == "limiter")
    #expect(stream[at].values == ["target_lufs": -14, "ceiling_db": -2])
    run.preset = "flat"
    let flat = try LiveSession.stages(for: run).1.compactMap(\.unit)
    let limiter = try #require(flat.first { $0.type == "limiter" })
    #expect(!limiter.bypassed)
    #expect(flat.firstIndex { $0.type == "loudness" }! + 1 == flat.firstIndex { $0.type == "limiter" }!)
  }
}
