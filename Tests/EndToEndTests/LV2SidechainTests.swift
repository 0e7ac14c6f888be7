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
      let folder = preset.deletingLastPathComponent()
      let counters = folder.appendingPathComponent("rtguard.txt")
      let voice = TestSignal.sine(frequencyHz: 440, amplitude: 0.1)
      let music = TestSignal.sine(frequencyHz: 97, amplitude: 0.8)
      // The music is keyed, not heard: at -60 dB it is silent in the output.
      let rig = try MusicTests.rig(
        ["-p", preset.path, "-c", "music.volume_db=-60"], voice: voice, music: music, guardOutput: counters)
      let (server, generators, capture, livemic) = rig
      defer {
        #expect(livemic.interrupt() == 0, "\(livemic.log)")
        for g in generators { g.close() }
        capture.close()
        server.stop()
      }
      #expect(!livemic.log.contains("left out"), "\(livemic.log)")
      usleep(1_800_000)  // the start ramp, and the compressor's attack
      let witness = MusicTests.witness(capture, voice: voice, music: music)
      let level = try retaking("the voice under the keyed compressor") {
        let mark = witness.mark()
        try capture.record(frames: 9600)
        let end = capture.frameCount
        let out = capture.recording(channel: 1, from: mark.frame, to: end).samples
        return Take(rms(out[...]), spoilt: witness.evidence(since: mark, to: end))
      }
      let drop = 20 * log10(level / (0.1 / 2.0.squareRoot()))
      let answer = try runLiveMic(["ctl", "-n", "lmclient", "get", "duck.rlm"])
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
      RealtimeGuard.expectNothingCounted(counters)
    }
  }
}
