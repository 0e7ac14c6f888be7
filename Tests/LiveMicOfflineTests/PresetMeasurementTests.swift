import DSP
import Foundation
import Testing

@testable import LiveMicControl
@testable import LiveMicPresets

/// Every shipped preset measured on one test programme, rendered offline with the live chain's
/// code and measured with libebur128: what each preset promises (docs/presets.md) is checked
/// here, and the figures printed (`grep '\[preset\]'`) are the ones docs/presets.md shows.
///
/// The programme (48 kHz, 54 s): espeak-ng speech in three 16 s stretches peaking at −30, −18
/// and −6 dBFS (a quiet, a normal and a loud talker), each followed by 2 s of room noise only;
/// a steady noise floor (white, −60 dBFS RMS) runs under all of it.
@Suite("Presets measured")
struct PresetMeasurementTests {
  static let rate = 48000
  static let levels: [Double] = [-30, -18, -6]
  static let speechSeconds = 16
  static let pauseSeconds = 2
  static var stretchFrames: Int { (speechSeconds + pauseSeconds) * rate }

  /// The programme, mono.
  static func programme() throws -> [Float] {
    let path = try LoudnessTargetRenderTests.speech(peakDecibels: 0)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let (stereo, _) = try LoudnessTests.readStereo(path)
    let speech = stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
    var noiseState: UInt64 = 0x2545_F491_4F6C_DD1D
    let noiseAmplitude = Float(pow(10, -60.0 / 20) * 3.0.squareRoot())  // uniform: RMS = a/√3
    var out: [Float] = []
    for level in levels {
      let gain = Float(pow(10, level / 20))
      for f in 0..<stretchFrames {
        noiseState = noiseState &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let noise = (Float(noiseState >> 40) / Float(1 << 24) * 2 - 1) * noiseAmplitude
        out.append((f < speechSeconds * rate ? speech[f] * gain : 0) + noise)
      }
    }
    return out
  }

  /// One preset's figures.
  struct Figures {
    /// Integrated loudness of each speech stretch's last 12 s (LUFS).
    var loudness: [Double] = []
    /// Sample peak of the whole output (dBFS) and its true peak (dBTP).
    var samplePeak = 0.0
    var truePeak = 0.0
    /// RMS of the last second of each pause (dBFS): the noise floor between phrases.
    var pauseNoise: [Double] = []
    var spread: Double { (loudness.max() ?? 0) - (loudness.min() ?? 0) }
  }

  static func measure(_ preset: String, _ input: String, _ overrides: [String] = [], target: Float? = nil)
    throws -> Figures
  {
    let out = try LoudnessTargetRenderTests.render(input, preset: preset, target: target, overrides)
    var figures = Figures()
    for (i, _) in levels.enumerated() {
      let from = i * stretchFrames + 4 * rate
      let speech = Array(out[(2 * from)..<(2 * (from + 12 * rate))])
      figures.loudness.append(LoudnessTests.reference(speech, rate: rate).integrated)
      let pauseEnd = (i + 1) * stretchFrames
      let pause = out[(2 * (pauseEnd - rate))..<(2 * pauseEnd)]
      let power = pause.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(pause.count)
      figures.pauseNoise.append(10 * log10(max(power, 1e-20)))
    }
    figures.samplePeak = 20 * log10(Double(out.reduce(0) { max($0, abs($1)) }))
    figures.truePeak = LoudnessTests.reference(out, rate: rate).truePeak
    let f1 = { (x: Double) in String(format: "%.1f", x) }
    print(
      "[preset] \(preset)\(overrides.isEmpty ? "" : " " + overrides.joined(separator: " "))"
        + "\(target.map { " --loudness-target \($0)" } ?? ""): "
        + "speech at -30/-18/-6 dBFS peak → \(figures.loudness.map(f1).joined(separator: " / ")) LUFS "
        + "(spread \(f1(figures.spread)) LU); peak \(f1(figures.samplePeak)) dBFS, "
        + "true peak \(f1(figures.truePeak)) dBTP; pauses \(figures.pauseNoise.map(f1).joined(separator: " / ")) dBFS"
    )
    return figures
  }

  /// The preset's limiter ceiling.
  static func ceiling(_ preset: String) throws -> Double {
    let loaded = try PresetLibrary().load(preset)
    let limiter = try #require(loaded.units.first { $0.type == "limiter" })
    return Double(limiter.values["ceiling_db"] ?? -1)
  }

  @Test("what each shipped preset promises, on quiet, normal and loud speech over a noise floor")
  func shippedPresets() throws {
    let samples = try Self.programme()
    let input = LoudnessTests.temporary("preset-programme.wav")
    defer { try? FileManager.default.removeItem(atPath: input) }
    try LoudnessTests.writeWav(input, rate: Self.rate, frames: samples.count) { f, _ in samples[f] }
    // Measured at output.volume=1: the volume is a trim after the chain (the start-quiet
    // default 0.3, hearing's 0.2), not part of what a preset does to the voice.
    let unity = ["output.volume=1"]
    let flat = try Self.measure("flat", input, unity)
    var all: [String: Figures] = [:]
    for preset in ["voice", "stream", "podcast", "hearing", "karaoke", "announce"] {
      let figures = try Self.measure(preset, input, unity)
      all[preset] = figures
      // Every preset: the limiter holds its ceiling, even for a talker peaking at -6 dBFS
      // into the makeup gain.
      let ceiling = try Self.ceiling(preset)
      #expect(figures.samplePeak <= ceiling + 0.01, "\(preset): peak \(figures.samplePeak) over \(ceiling)")
    }
    func spread(_ name: String) -> Double { all[name]?.spread ?? .nan }
    // The speech presets even out a 24 dB range of talkers (flat: 23 LU)...
    #expect(spread("stream") <= 6)
    #expect(spread("podcast") <= 10)
    #expect(spread("hearing") <= 13)
    #expect(spread("announce") <= 15)
    // ...while voice and karaoke keep a speaker's or singer's dynamics (gentle compression).
    #expect(spread("voice") >= 18 && spread("karaoke") >= 18)
    // Noise-removing presets: the steady floor between phrases at least 8 dB under flat's.
    for name in ["voice", "stream", "podcast", "hearing", "announce"] {
      let figures = try #require(all[name])
      let reduction = zip(flat.pauseNoise, figures.pauseNoise).map { $0 - $1 }.min() ?? 0
      #expect(reduction >= 8, "\(name): pauses only \(reduction) dB under flat's")
    }
    // Hearing: at its own volume (0.2) the output stays far below full scale whatever comes in.
    let hearingOwn = try Self.measure("hearing", input)
    #expect(hearingOwn.samplePeak <= -6 - 13.9, "hearing at volume 0.2: \(hearingOwn.samplePeak) dBFS")
    // Stream with the loudness target: every talker ends near -16 LUFS.
    let target = try Self.measure("stream", input, unity, target: -16)
    #expect(target.loudness.allSatisfy { abs($0 - -16) <= 1 }, "\(target.loudness)")
  }
}
