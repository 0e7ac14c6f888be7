import Foundation
import Testing

extension EndToEnd {
  @Suite("Presets while running", .serialized)
  struct PresetSwitchTests {
    static func preset(volume: Float, bass: Float) -> String {
      """
      {"name": "switch", "description": "test", "volume": \(volume),
       "chain": [{"unit": "eq", "params": {"bass_db": \(bass)}}, {"unit": "limiter"}]}
      """
    }

    /// SIGHUP while a sine plays: the new chain is crossfaded in (equal power, 50 ms) with no
    /// gap and no step beyond what the sine itself and a 50 ms gain change make.
    @Test("SIGHUP reloads the preset with a crossfade: no gap, no click")
    func reloadCrossfades() throws {
      let folder = Paths.temporaryFolder("switch")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("switch.json")
      try Self.preset(volume: 0.8, bass: 0).write(to: file, atomically: true, encoding: .utf8)
      let counters = folder.appendingPathComponent("rtguard.txt")
      let (server, generator, capture, livemic) = try LiveAudioTests.rig(
        ["-p", file.path], signal: .sine(frequencyHz: 220, amplitude: 0.25), guardOutput: counters)
      usleep(1_300_000)  // past the start ramp
      let start = capture.frameCount
      try capture.record(frames: 4800)
      try Self.preset(volume: 0.4, bass: 6).write(to: file, atomically: true, encoding: .utf8)
      kill(livemic.process.processIdentifier, SIGHUP)
      #expect(livemic.waitForLog("preset 'switch' reloaded (SIGHUP)"), "\(livemic.log)")
      try capture.record(frames: 9600)
      let out = capture.recording(channel: 1, from: start).samples
      let steady = out[0..<4800]
      let steadyJump = zip(steady, steady.dropFirst()).map { abs($1 - $0) }.max() ?? 0
      let jump = zip(out, out.dropFirst()).map { abs($1 - $0) }.max() ?? 0
      #expect(jump <= steadyJump * 1.25, "largest step \(jump) against \(steadyJump) before the switch")
      // No gap: every 5 ms window keeps at least a third of the quieter preset's level.
      let quietest =
        stride(from: 0, to: out.count - 240, by: 240).map { rms(out[$0..<($0 + 240)]) }.min() ?? 0
      #expect(quietest > 0.4 * 0.25 * 0.707 / 3, "a 5 ms window fell to RMS \(quietest)")
      // And the new preset is what plays now (volume 0.4 with +6 dB bass shelf at 100 Hz).
      let after = rms(out[(out.count - 2400)...])
      #expect(
        abs(after - rms(steady) * 0.5) < rms(steady) * 0.15, "level after \(after), before \(rms(steady))")
      #expect(livemic.interrupt() == 0)
      // The crossfade runs both chains on the audio thread: still nothing counted there.
      RealtimeGuard.expectNothingCounted(counters)
      generator.close()
      capture.close()
      server.stop()
    }

    @Test("a broken preset file on SIGHUP is reported and the running chain is kept")
    func brokenReloadKeepsChain() throws {
      let folder = Paths.temporaryFolder("switch")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("switch.json")
      try Self.preset(volume: 0.8, bass: 0).write(to: file, atomically: true, encoding: .utf8)
      let (server, generator, capture, livemic) = try LiveAudioTests.rig(
        ["-p", file.path, "--watch"], signal: .sine(frequencyHz: 220, amplitude: 0.25))
      usleep(1_300_000)
      try "{ broken".write(to: file, atomically: true, encoding: .utf8)
      #expect(livemic.waitForLog("preset not reloaded (the file changed)"), "\(livemic.log)")
      #expect(livemic.log.contains("the running chain is kept"))
      let start = capture.frameCount
      try capture.record(frames: 4800)
      #expect(rms(capture.recording(channel: 1, from: start).samples[...]) > 0.1)
      #expect(livemic.process.isRunning)
      #expect(livemic.interrupt() == 0)
      generator.close()
      capture.close()
      server.stop()
    }
  }
}
