import Foundation
import Testing

extension EndToEnd {
  @Suite("MIDI control", .serialized)
  struct MidiTests {
    /// A test client sends CC 7: the mapped volume follows (measured on the output); then
    /// `ctl learn` binds the next controller that moves.
    @Test(
      "CC 7 mapped to output.volume sets the level; ctl learn binds a controller")
    func ccSetsVolume() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--midi-cc", "7:1=output.volume"], signal: .sine(frequencyHz: 500, amplitude: 0.2),
        guarded: true)
      defer { rig.stop() }
      let livemic = rig.livemic
      let controller = try TestClient(
        name: "lmmidi", server: rig.server.name, signal: nil, captureChannels: 0, midi: true)
      defer { controller.close() }
      try controller.connect("lmmidi:midi_out", "lmclient:midi_in")
      let input = 0.2 / 2.squareRoot()
      // `send`s a controller message, then measures the level as a share of the input's. Retaken
      // (message and take) when the server spoilt the take or the delivery, the first 100 ms
      // after the send (a gap, an xrun, the generator off, a cycle LiveMic missed): a dropped
      // cycle can lose the message itself. A controller's value is absolute, so resending is safe.
      let witness = LiveAudioTests.witness(rig)
      func level(near ratio: Double, after send: () -> Void) throws -> Double {
        try retaking("the level after a controller message (near \(ratio))") {
          let mark = witness.mark()
          send()
          // Parameter smoothing.
          let take = try witness.take(frames: 4800, channels: [1], settleMicroseconds: 300_000, since: mark)
          return Take(rms(take.value[0][...]) / input, spoilt: take.spoilt)
        }
      }
      rig.waitForAudio()
      let full = try level(near: 1) { controller.sendControlChange(channel: 1, cc: 7, value: 127) }
      #expect(abs(full - 1) < 0.01, "volume at CC 127: \(full)")
      let half = try level(near: 64.0 / 127) { controller.sendControlChange(channel: 1, cc: 7, value: 64) }
      #expect(abs(half - 64.0 / 127) < 0.01, "volume at CC 64: \(half)")
      // Another channel: not mapped.
      let same = try level(near: half) { controller.sendControlChange(channel: 2, cc: 7, value: 0) }
      #expect(abs(same - half) < 0.01, "CC 7 on channel 2 changed the volume: \(same)")

      // Learn: map the next controller that moves to input.gain_db.
      let environment = rig.environment
      let learn = Thread {
        _ = try? runLiveMic(["ctl", "-n", "lmclient", "learn", "output.volume"], environment: environment)
      }
      learn.start()
      usleep(500_000)
      controller.sendControlChange(channel: 3, cc: 20, value: 127)
      #expect(livemic.waitForLog("MIDI CC 20 on channel 3 now sets 'output.volume'"), "\(livemic.log)")
      let learned = try level(near: 32.0 / 127) {
        controller.sendControlChange(channel: 3, cc: 20, value: 32)
      }
      #expect(abs(learned - 32.0 / 127) < 0.01, "volume at learned CC 20 = 32: \(learned)")
      rig.stop()
      rig.expectNothingCounted()
    }
  }
}
