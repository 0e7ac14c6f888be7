import CSndfile
import Foundation
import Testing

/// Reads any libsndfile-readable file as interleaved floats.
func readAudio(_ path: String) throws -> (rate: Int, channels: Int, samples: [Float]) {
  var info = SF_INFO()
  guard let file = sf_open(path, Int32(SFM_READ), &info) else { throw HarnessError("cannot read \(path)") }
  defer { sf_close(file) }
  var samples = [Float](repeating: 0, count: Int(info.frames) * Int(info.channels))
  _ = sf_readf_float(file, &samples, info.frames)
  return (Int(info.samplerate), Int(info.channels), samples)
}

/// Writes interleaved floats as a 32-bit float WAV.
func writeAudio(_ path: String, rate: Int, channels: Int, samples: [Float]) throws {
  var info = SF_INFO()
  info.samplerate = Int32(rate)
  info.channels = Int32(channels)
  info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
  guard let file = sf_open(path, Int32(SFM_WRITE), &info) else { throw HarnessError("cannot write \(path)") }
  _ = sf_writef_float(file, samples, sf_count_t(samples.count / channels))
  sf_close(file)
}

extension EndToEnd {
  @Suite("Offline rendering")
  struct RenderTests {
    let folder = Paths.temporaryFolder("render")

    func input(rate: Int = 44100, channels: Int = 1, seconds: Double = 1) throws -> String {
      let path = folder.appendingPathComponent("in-\(rate)-\(channels).wav").path
      let frames = Int(Double(rate) * seconds)
      var samples = [Float](repeating: 0, count: frames * channels)
      for i in 0..<frames {
        for c in 0..<channels {
          samples[i * channels + c] = TestSignal.frameCode.value(
            atFrame: UInt32(i * 3 + c), sampleRate: Double(rate))
        }
      }
      try writeAudio(path, rate: rate, channels: channels, samples: samples)
      return path
    }

    @Test("flat renders a mono file to identical stereo samples at the file's rate")
    func flatIsIdentity() throws {
      let source = try input(rate: 44100, channels: 1)
      let out = folder.appendingPathComponent("flat.wav").path
      let result = try runLiveMic(["render", "-p", "flat", source, out])
      #expect(result.status == 0, "\(result.stderr)")
      let a = try readAudio(source)
      let b = try readAudio(out)
      #expect(b.rate == 44100 && b.channels == 2)
      #expect(b.samples.count == a.samples.count * 2)
      var differences = 0
      for i in 0..<a.samples.count
      where b.samples[2 * i] != a.samples[i] || b.samples[2 * i + 1] != a.samples[i] {
        differences += 1
      }
      #expect(differences == 0)
    }

    @Test("the result does not depend on the block size (--frames) beyond float rounding")
    func blockSizeIndependent() throws {
      let source = try input(rate: 48000, channels: 2)
      var outputs: [[Float]] = []
      for frames in ["64", "256", "1000"] {
        let out = folder.appendingPathComponent("voice-\(frames).wav").path
        let result = try runLiveMic(["render", "-p", "karaoke", "--frames", frames, source, out])
        #expect(result.status == 0, "\(result.stderr)")
        outputs.append(try readAudio(out).samples)
      }
      // Bit-identical except the reverb, whose vectorized comb scan rounds differently where a
      // block boundary splits a 4-frame chunk: the difference stays below -120 dBFS.
      for k in 1..<outputs.count {
        #expect(outputs[k].count == outputs[0].count)
        let worst = zip(outputs[0], outputs[k]).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-6, "--frames changes the output by \(worst)")
      }
      #expect(rms(outputs[0][...]) > 0.01)
    }

    @Test("a parameter override changes the rendered level by the expected dB")
    func overrideChangesLevel() throws {
      let source = try input(rate: 48000, channels: 1)
      let out = folder.appendingPathComponent("gain.flac").path
      let result = try runLiveMic([
        "render", "-p", "flat", "-c", "input.bypass=on", "-c", "output.volume=0.25", source, out,
      ])
      #expect(result.status == 0, "\(result.stderr)")
      let a = try readAudio(source).samples
      let b = try readAudio(out).samples
      let ratio = rms(b[...]) / (rms(a[...]))
      #expect(abs(20 * log10(ratio) - 20 * log10(0.25)) < 0.01)
    }

    @Test("unreadable input and unknown output format are one-sentence errors")
    func errors() throws {
      let missing = try runLiveMic([
        "render", "/nonexistent/in.wav", folder.appendingPathComponent("o.wav").path,
      ])
      #expect(missing.status == 1 && missing.stderr.contains("cannot read audio file '/nonexistent/in.wav'"))
      let source = try input()
      let badFormat = try runLiveMic(["render", source, folder.appendingPathComponent("o.xyz").path])
      #expect(badFormat.status == 1 && badFormat.stderr.contains("cannot tell the output format"))
      // A chain that cannot be made: one sentence each, and no output file.
      let bad = folder.appendingPathComponent("bad.json").path
      try #"{"name": "bad", "chain": [{"unit": "eq", "params": {"bass_db": 99}}]}"#.write(
        toFile: bad, atomically: true, encoding: .utf8)
      let refusals: [([String], String)] = [
        (["-p", "nosuch"], "livemic: error: no preset named 'nosuch' (searched "),
        (
          ["-p", "voice", "-c", "eq.bass_db=99"],
          "livemic: error: 99 is outside the range of 'eq.bass_db' (-20 to 20)\n"
        ),
        (
          ["-p", "flat", "-c", "nosuch.key=1"],
          "livemic: error: 'nosuch.key' names no parameter: the chain has no such parameter in stage 'nosuch' (stages: "
        ),
        (
          ["-p", bad],
          "livemic: error: preset '\(bad)', key 'chain[0].params.bass_db': 99 is outside the range -20 to 20\n"
        ),
      ]
      for (arguments, message) in refusals {
        let out = folder.appendingPathComponent("refused.wav").path
        let result = try runLiveMic(["render"] + arguments + [source, out])
        #expect(result.status == 1 && result.stderr.hasPrefix(message), "\(arguments): \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "\(arguments) wrote \(out)")
      }
    }

    @Test(
      "--music FILE mixes a music bed in after the chain as live (out = voice + music at 0 dB once settled); another rate is refused"
    )
    func musicBed() throws {
      let voice = try input(rate: 48000, channels: 1, seconds: 1)
      let musicPath = folder.appendingPathComponent("music.wav").path
      let frames = 48000 / 2  // shorter than the voice: silence after its end
      try writeAudio(
        musicPath, rate: 48000, channels: 2,
        samples: (0..<(2 * frames)).map { 0.25 * sinf(Float($0 / 2) * 2 * .pi * 440 / 48000) })
      let out = folder.appendingPathComponent("music-out.wav").path
      let result = try runLiveMic([
        "render", "-p", "flat", "--music", musicPath, "-c", "music.volume_db=0", voice, out,
      ])
      #expect(result.status == 0, "\(result.stderr)")
      let (a, b) = (try readAudio(voice).samples, try readAudio(out).samples)
      // Once the music volume's 20 ms smoothing has settled (0.35 s), until the music ends.
      var worst: Float = 0
      for i in 16800..<frames {
        let music = 0.25 * sinf(Float(i) * 2 * .pi * 440 / 48000)
        worst = max(worst, abs(b[2 * i] - (a[i] + music)), abs(b[2 * i + 1] - (a[i] + music)))
      }
      #expect(worst < 1e-5, "largest difference from voice + music: \(worst)")
      let after = (frames + 480..<a.count).map { abs(b[2 * $0] - a[$0]) }.max() ?? 0
      #expect(after < 1e-6, "after the music's end only the voice: \(after)")
      let other = try input(rate: 44100, channels: 2)
      let refused = try runLiveMic(["render", "-p", "flat", "--music", other, voice, out])
      #expect(
        refused.status == 1 && refused.stderr.contains("its sample rate is 44100 Hz, the input's 48000 Hz"),
        "\(refused)")
    }
  }
}
