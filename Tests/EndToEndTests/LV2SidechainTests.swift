import Foundation
import TestSupport
import Testing

/// A plugin's sidechain input fed from the music bed, on a real server: LSP's sidechain
/// compressor (lsp-plugins-lv2) in the voice chain, keyed by the music on LiveMic's music ports.
extension EndToEnd {
  @Suite("LV2 sidechain inputs live", .serialized)
  struct LV2SidechainTests {
    @Test(
      "\"sidechain\": \"music\": LSP's sidechain compressor turns the voice down while the music plays, by the reduction it reports"
    )
    func musicKeysTheCompressor() throws {
      let preset = try LV2Tests.presetFile(
        #"{"lv2": "http://lsp-plug.in/plugins/lv2/sc_compressor_stereo", "id": "duck", "params": {"sct": 2, "cr": 8}, "sidechain": "music"}"#
      )
      defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
      let voice = TestSignal.sine(frequencyHz: 440, amplitude: 0.1)
      let music = TestSignal.sine(frequencyHz: 97, amplitude: 0.8)
      // The music is keyed, not heard: at -60 dB it is silent in the output.
      let rig = try MusicTests.rig(
        ["-p", preset.path, "-c", "music.volume_db=-60"], voice: voice, music: music, guarded: true)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      #expect(!livemic.log.contains("left out"), "\(livemic.log)")
      rig.waitForAudio(seconds: 1.8)  // the start ramp, and the compressor's attack
      let witness = rig.witness(capture, generators: [(0, music)])
      let level = try retaking("the voice under the keyed compressor") {
        let mark = witness.mark()
        try capture.record(frames: 9600)
        let end = capture.frameCount
        let out = capture.recording(channel: 1, from: mark.frame, to: end).samples
        return Take(rms(out[...]), spoilt: witness.evidence(since: mark, to: end))
      }
      let drop = 20 * log10(level / (0.1 / 2.0.squareRoot()))
      let answer = try rig.ctl("get", "duck.rlm")
      let reported = answer.stdout.split(whereSeparator: { !"0123456789.-e".contains($0) }).compactMap {
        Double($0)
      }.last
      let reportedDecibels = reported.map { 20 * log10($0) }
      LV2Tests.measured(
        "LSP sc compressor keyed by the music bed: the voice fell \(drop) dB, the plugin reports "
          + "\(String(describing: reportedDecibels)) dB")
      #expect(drop < -3, "the music did not turn the voice down: \(drop) dB")
      if let reportedDecibels {
        #expect(abs(drop - reportedDecibels) < 1, "fell \(drop) dB, reported \(reportedDecibels) dB")
      } else {
        Issue.record("no reduction reported: \(answer.stdout) \(answer.stderr)")
      }
      rig.expectNothingCounted()
    }
  }
}

extension EndToEnd.LV2SidechainTests {
  /// The amplitude of the `hz` sine in `x` (a window of whole periods of it).
  static func amplitude(_ x: [Float], hz: Double) -> Double {
    var (c, s) = (0.0, 0.0)
    for (i, v) in x.enumerated() {
      let phase = 2 * Double.pi * hz * Double(i) / 48000
      c += Double(v) * cos(phase)
      s += Double(v) * sin(phase)
    }
    return 2 * (c * c + s * s).squareRoot() / Double(x.count)
  }

  @Test(
    "\"on\": \"music\": LSP's sidechain compressor on the music bed, keyed by the voice, takes the music down by the reduction it reports"
  )
  func musicDucksUnderTheVoice() throws {
    let preset = try EndToEnd.LV2Tests.presetFile(
      #"{"lv2": "http://lsp-plug.in/plugins/lv2/sc_compressor_stereo", "id": "duck", "on": "music", "params": {"sct": 2, "cr": 8, "al": 0.05}}"#
    )
    defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
    // The voice at 1000 Hz, the music at 100 Hz: over 9600 frames (200 and 20 periods) each
    // one's amplitude in the output is measured apart from the other's.
    let voice = TestSignal.sine(frequencyHz: 1000, amplitude: 0.3)
    let music = TestSignal.sine(frequencyHz: 100, amplitude: 0.5)
    let rig = try EndToEnd.MusicTests.rig(
      ["-p", preset.path, "-c", "music.volume_db=0"], voice: voice, music: music, guarded: true)
    defer { rig.stop() }
    let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
    #expect(!livemic.log.contains("left out"), "\(livemic.log)")
    rig.waitForAudio(seconds: 1.8)  // the start ramp, and the compressor's attack
    let witness = rig.witness(capture, generators: [(0, music)])
    let (musicOut, voiceOut) = try retaking("the music under the keyed compressor") {
      let mark = witness.mark()
      try capture.record(frames: 9600)
      let out = capture.recording(channel: 1, from: mark.frame, to: mark.frame + 9600).samples
      return Take(
        (Self.amplitude(out, hz: 100), Self.amplitude(out, hz: 1000)),
        spoilt: witness.evidence(since: mark, to: capture.frameCount))
    }
    let drop = 20 * log10(musicOut / 0.5)
    let answer = try rig.ctl("get", "duck.rlm")
    let reported = answer.stdout.split(whereSeparator: { !"0123456789.-e".contains($0) }).compactMap {
      Double($0)
    }.last.map { 20 * log10($0) }
    EndToEnd.LV2Tests.measured(
      "LSP sc compressor on the music keyed by the voice: the music fell \(drop) dB (reported "
        + "\(String(describing: reported)) dB); the voice at \(voiceOut) (in 0.3)")
    #expect(drop < -3, "the voice did not take the music down: \(drop) dB")
    #expect(
      reported.map { abs(drop - $0) < 1 } == true, "fell \(drop) dB, reported \(String(describing: reported))"
    )
    #expect(abs(voiceOut - 0.3) < 0.003, "the voice changed: \(voiceOut)")
    rig.expectNothingCounted()
  }
}

/// CV ports, on a real server: Tests/Support/lv2-cv's gain, whose gain is a CV input and whose
/// CV output carries its output's magnitude, built here (no Debian plugin has CV ports).
extension EndToEnd {
  @Suite("LV2 CV ports live", .serialized)
  struct LV2CVTests {
    static let uri = "urn:livemic:test:cv-gain"

    /// Runs the frame code through the CV gain with `cv` (its entry's "cv" object) and returns
    /// the generator's samples, LiveMic's left output over the same frames, and `ctl get`'s
    /// answer for `cvg.level`; under the real-time guard, which is expected to count nothing once
    /// LiveMic has stopped.
    static func run(cv: String) throws -> (direct: [Float], left: [Float], level: String) {
      let folder = Paths.temporaryFolder("lv2cv")
      defer { try? FileManager.default.removeItem(at: folder) }
      _ = try LV2Tests.buildBundle("lv2-cv", binary: "cvgain", in: folder)
      let installed = ProcessInfo.processInfo.environment["LV2_PATH"] ?? "/usr/lib/lv2"
      let preset = try LV2Tests.presetFile(#"{"lv2": "\#(uri)", "id": "cvg", "cv": \#(cv)}"#)
      defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
      let rig = try LiveAudioTests.rig(
        ["-p", preset.path], signal: .sine(frequencyHz: 300, amplitude: 0.5), guarded: true,
        environment: ["LV2_PATH": folder.path + ":" + installed])
      defer {
        rig.stop()
        rig.expectNothingCounted()
      }
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      let taken = try LV2Tests.recordAfterRamp(rig, frames: 4800)
      let level = try rig.ctl("get", "cvg.level")
      return (taken.direct, taken.left, level.stdout)
    }

    @Test(
      "a CV input fed a constant (0.5) and the chain's input: out = in × 0.5, then in × in; the CV output reads back"
    )
    func cvInputsAndOutput() throws {
      let constant = try Self.run(cv: #"{"gain": 0.5}"#)
      let worstConstant = zip(constant.direct, constant.left).map { abs($1 - $0 * 0.5) }.max() ?? 1
      #expect(worstConstant == 0, "out is not in × 0.5: worst \(worstConstant)")
      #expect(constant.level.contains("cvg.level"), "\(constant.level)")
      let fed = try Self.run(cv: #"{"gain": "input"}"#)
      let worstFed = zip(fed.direct, fed.left).map { abs($1 - $0 * $0) }.max() ?? 1
      #expect(worstFed == 0, "out is not in × in: worst \(worstFed)")
      // The CV output (|out| at the end of the last block) reads like a control output.
      let level = fed.level.split(separator: ":").last.flatMap {
        Double($0.trimmingCharacters(in: CharacterSet(charactersIn: " \n}")))
      }
      #expect(level.map { $0 >= 0 && $0 <= 0.25 } == true, "cvg.level: \(fed.level)")
      LV2Tests.measured(
        "CV gain: constant 0.5 worst error \(worstConstant), fed the input worst error \(worstFed); "
          + "cvg.level read back \(String(describing: level))")
    }
  }
}

/// Messages and outputs on a real server with Debian plugins: x42 convoLV2 given its impulse
/// response by `patch:Set` from the preset, and x42 dpl#mono's two instances' outputs.
extension EndToEnd {
  @Suite("LV2 properties and outputs live", .serialized)
  struct LV2PropertyTests {
    @Test(
      "convoLV2 loads the impulse response the preset's \"properties\" name: the output is the convolution")
    func convolverLoadsItsImpulseResponse() throws {
      let preset = try LV2Tests.presetFile(
        #"{"lv2": "http://gareus.org/oss/lv2/convoLV2#Mono", "id": "ir", "properties": {"impulse": "ir.wav"}}"#
      )
      let folder = preset.deletingLastPathComponent()
      defer { try? FileManager.default.removeItem(at: folder) }
      // Two taps: 0.5 at frame 10, -0.25 at frame 30 (convoLV2 applies its own gain of 0.5).
      try LV2MidiTests.writeMono(
        folder.appendingPathComponent("ir.wav").path, (0..<64).map { $0 == 10 ? 0.5 : $0 == 30 ? -0.25 : 0 })
      let rig = try LiveAudioTests.rig(["-p", preset.path], signal: .frameCode, guarded: true)
      defer { rig.stop() }
      let counters = try #require(rig.counters)
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      // Loaded once the plugin reports the file: it does so from its work_response, which LV2 has
      // the host call on the audio thread, and which in Debian's convoLV2 also writes to stderr
      // (measured: the guard's one `io`, fwrite from convo.lv2 under PluginWorker's
      // deliverResponses, under pw-jack when the load ended after the warm-up). So the guard
      // holds LiveMic to zero from the load on, and a count before it must be that call.
      var reported = (status: Int32(0), stdout: "", stderr: "")
      let loaded = waitUntil(seconds: 10) {
        reported =
          (try? rig.ctl("get", "ir.impulse")) ?? reported
        return reported.stdout.contains("ir.wav")
      }
      #expect(loaded, "the impulse response was not reported: \(reported.stdout) \(reported.stderr)")
      #expect(rig.waitForGuardReport(), "the guard did not rewrite its counters")
      let atLoad = RealtimeGuard.counters(counters)
      if RealtimeGuard.forbidden.contains(where: { atLoad[$0] != "0" }) {
        let stack = RealtimeGuard.stack(counters)
        LV2Tests.measured("convoLV2's load counted before it was reported: \(atLoad)\(stack)")
        #expect(
          atLoad["io"] != "0" && RealtimeGuard.forbidden.allSatisfy { $0 == "io" || atLoad[$0] == "0" }
            && stack.contains("convo.lv2/"),
          "counted before the load, and not convoLV2's own write in its work_response: \(atLoad)\(stack)")
      }
      let taken = try LV2Tests.recordAfterRamp(rig, frames: 9600)
      let latency = 0  // convoLV2 convolves without latency (it declares none)
      var worst: Float = 0
      for i in 64..<taken.direct.count {
        let expected = 0.25 * taken.direct[i - 10 - latency] - 0.125 * taken.direct[i - 30 - latency]
        worst = max(worst, abs(taken.left[i] - expected))
      }
      LV2Tests.measured(
        "convoLV2 with the preset's ir.wav (patch:Set): worst error against the convolution \(worst)")
      #expect(worst < 1e-5, "the output is not the convolution: worst \(worst)")
      #expect(rig.waitForGuardReport(), "the guard did not rewrite its counters")
      let after = RealtimeGuard.counters(counters)
      for key in RealtimeGuard.forbidden {
        #expect(
          after[key] == atLoad[key],
          "\(key) counted after the load: \(atLoad[key] ?? "?") → \(after[key] ?? "?")\(RealtimeGuard.stack(counters))"
        )
      }
    }

    @Test("a mono plugin on the stereo chain shows both instances' outputs: dpl#mono's level and level_right")
    func bothInstancesOutputs() throws {
      // Two inputs: the left loud, the right silent.
      let rig = try LiveRig(
        period: JackServer.takePeriod,
        clients: [.init(name: "lmloud", signal: .sine(frequencyHz: 300, amplitude: 0.9))]
      ) { c in
        [
          "-i", "2", "-p", "flat", "--plugin", "http://gareus.org/oss/lv2/dpl#mono", "--connect-in",
          c[0].portName("out"),
        ]
      }
      defer { rig.stop() }
      rig.waitForAudio(seconds: 1.5)
      let answer = try rig.ctl("--json", "get").stdout
      func value(_ key: String) -> Double? {
        guard let range = answer.range(of: "\"\(key)\":") else { return nil }
        let rest = answer[range.upperBound...].drop { $0 == " " }
        return Double(rest.prefix { "0123456789.-e".contains($0) })
      }
      let (left, right) = (value("dpl_mono.level"), value("dpl_mono.level_right"))
      LV2Tests.measured(
        "dpl#mono: level \(String(describing: left)) (left, loud), level_right \(String(describing: right))")
      #expect(left != nil && right != nil && left != right, "\(answer)")
    }
  }
}
