import CEbur128
import CSndfile
import Foundation
import TestSupport
import Testing

@testable import LiveMicControl
@testable import LiveMicOffline

/// The loudness meter's analysis (`LoudnessAnalyzer.ingest`, the function its tap thread calls)
/// against libebur128's own one-shot computation on a whole file, and against EBU Tech 3341.
@Suite("Loudness")
struct LoudnessTests {
  /// A stereo 32-bit float WAV file of `frames` frames from `sample(frame, channel)`.
  static func writeWav(_ path: String, rate: Int, frames: Int, _ sample: (Int, Int) -> Float) throws {
    var info = SF_INFO()
    info.samplerate = Int32(rate)
    info.channels = 2
    info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    let file = try #require(sf_open(path, Int32(SFM_WRITE), &info), "cannot write \(path)")
    var data = [Float](repeating: 0, count: 2 * frames)
    for f in 0..<frames {
      data[2 * f] = sample(f, 0)
      data[2 * f + 1] = sample(f, 1)
    }
    _ = sf_writef_float(file, data, sf_count_t(frames))
    sf_close(file)
  }

  /// A file's frames as interleaved stereo (a mono file on both channels), and its rate.
  static func readStereo(_ path: String) throws -> (samples: [Float], rate: Int) {
    var info = SF_INFO()
    let file = try #require(sf_open(path, Int32(SFM_READ), &info))
    defer { sf_close(file) }
    let channels = Int(info.channels)
    var raw = [Float](repeating: 0, count: Int(info.frames) * channels)
    let frames = Int(sf_readf_float(file, &raw, info.frames))
    var stereo = [Float](repeating: 0, count: 2 * frames)
    for f in 0..<frames {
      stereo[2 * f] = raw[f * channels]
      stereo[2 * f + 1] = raw[f * channels + min(1, channels - 1)]
    }
    return (stereo, Int(info.samplerate))
  }

  /// The meter's path: the file fed to `ingest` in tap-sized chunks of varying length.
  static func chunked(_ samples: [Float], rate: Int) throws -> LoudnessReading {
    let analyzer = try LoudnessAnalyzer(sampleRate: rate)
    let sizes = [256, 1024, 4096, 64, 3000]
    var offset = 0
    var i = 0
    let total = samples.count / 2
    samples.withUnsafeBufferPointer { p in
      guard let p = p.baseAddress else { return }
      while offset < total {
        let n = min(sizes[i % sizes.count], total - offset)
        analyzer.ingest(p + 2 * offset, frames: n)
        offset += n
        i += 1
      }
    }
    return analyzer.reading
  }

  /// libebur128 directly, in its exact (non-histogram) mode, on the whole file at once:
  /// integrated loudness (LUFS) and true peak (dBTP).
  static func reference(_ samples: [Float], rate: Int) -> (integrated: Double, truePeak: Double) {
    let mode = Int32(EBUR128_MODE_I.rawValue) | Int32(EBUR128_MODE_TRUE_PEAK.rawValue)
    var state = ebur128_init(2, UInt(rate), mode)
    defer { ebur128_destroy(&state) }
    _ = ebur128_add_frames_float(state, samples, samples.count / 2)
    var integrated = 0.0
    _ = ebur128_loudness_global(state, &integrated)
    var peak = 0.0
    for c in 0..<2 {
      var p = 0.0
      _ = ebur128_true_peak(state, UInt32(c), &p)
      peak = max(peak, p)
    }
    return (integrated, 20 * log10(peak))
  }

  static func temporary(_ name: String) -> String {
    NSTemporaryDirectory() + "livemic-loudness-\(getpid())-" + name
  }

  @Test("EBU Tech 3341 case 1: a 1 kHz sine at -23 dBFS on both channels is -23.0 LUFS")
  func ebuSine() throws {
    let path = Self.temporary("sine.wav")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let rate = 48000
    let amplitude = Float(pow(10, -23.0 / 20))
    try Self.writeWav(path, rate: rate, frames: 20 * rate) { f, _ in
      amplitude * Float(sin(2 * Double.pi * 1000 * Double(f) / Double(rate)))
    }
    let (samples, fileRate) = try Self.readStereo(path)
    let meter = try Self.chunked(samples, rate: fileRate)
    let ref = Self.reference(samples, rate: fileRate)
    print(
      "loudness sine: meter M \(meter.momentary) S \(meter.shortTerm) I \(meter.integrated) LUFS, "
        + "TP \(meter.truePeak) dBTP, LRA \(meter.range) LU; reference I \(ref.integrated) LUFS, TP \(ref.truePeak) dBTP"
    )
    #expect(abs(meter.integrated - ref.integrated) <= 0.1)
    #expect(abs(meter.integrated - -23) <= 0.1)
    #expect(abs(meter.momentary - -23) <= 0.1)
    #expect(abs(meter.shortTerm - -23) <= 0.1)
    #expect(abs(meter.truePeak - ref.truePeak) <= 0.1)
    #expect(abs(meter.truePeak - -23) <= 0.2)
    #expect(meter.range <= 0.1)
  }

  @Test("speech (espeak-ng): the meter's integrated loudness equals libebur128's on the file")
  func speech() throws {
    let path = Self.temporary("speech.wav")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let spoken = try Programs.run(
      tool: "espeak-ng",
      [
        "-w", path,
        "The quick brown fox jumps over the lazy dog. Loudness is measured in units relative to full scale.",
      ])
    guard let spoken else {
      Issue.record("espeak-ng is needed for this test (scripts/setup --test installs it)")
      return
    }
    try #require(spoken.status == 0, "espeak-ng failed: \(spoken.err)")
    let (samples, rate) = try Self.readStereo(path)
    let meter = try Self.chunked(samples, rate: rate)
    let ref = Self.reference(samples, rate: rate)
    print(
      "loudness speech (\(rate) Hz): meter I \(meter.integrated) LUFS, reference I \(ref.integrated) LUFS")
    #expect(ref.integrated > -60 && ref.integrated < 0)
    #expect(abs(meter.integrated - ref.integrated) <= 0.1)
    #expect(abs(meter.truePeak - ref.truePeak) <= 0.1)
  }

  @Test("reset and a new sample rate start the measurement over")
  func reset() throws {
    let analyzer = try LoudnessAnalyzer(sampleRate: 48000)
    let tone = (0..<96000).map { i in Float(0.1 * sin(2 * Double.pi * 1000 * Double(i / 2) / 48000)) }
    tone.withUnsafeBufferPointer { analyzer.ingest($0.baseAddress!, frames: 48000) }
    #expect(analyzer.reading.integrated > -40)
    try analyzer.reset()
    #expect(analyzer.reading.integrated == -200 && analyzer.reading.truePeak == -200)
    try analyzer.reset(sampleRate: 44100)
    #expect(analyzer.sampleRate == 44100)
    #expect(throws: LoudnessError.self) { try LoudnessAnalyzer(sampleRate: 0) }
  }

  @Test("CPU cost: analyzing 60 s of stereo at 48 kHz in tap-sized chunks")
  func cost() throws {
    let rate = 48000
    let frames = 60 * rate
    var samples = [Float](repeating: 0, count: 2 * frames)
    var seed: UInt32 = 1
    for i in 0..<samples.count {
      seed = seed &* 1_664_525 &+ 1_013_904_223
      samples[i] = 0.2 * (Float(seed >> 8) / Float(1 << 24) - 0.5)
    }
    let started = DispatchTime.now().uptimeNanoseconds
    let reading = try Self.chunked(samples, rate: rate)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    print(
      "loudness cost: 60 s of stereo 48 kHz in \(String(format: "%.3f", seconds)) s = "
        + String(format: "%.2f", seconds / 60 * 100) + " % of one core (I \(reading.integrated) LUFS)")
    #expect(seconds < 60)
  }
}
