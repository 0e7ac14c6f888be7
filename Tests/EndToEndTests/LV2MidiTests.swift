import CSndfile
import Foundation
import TestSupport
import Testing

/// MIDI from `midi_in` to LV2 plugins, on a real server: eg-midigate (lv2-examples) passes its
/// audio only while a note is held, so the frame where the output starts and stops is the frame
/// where the note-on and note-off arrived.
extension EndToEnd {
  @Suite("LV2 plugins get MIDI", .serialized)
  struct LV2MidiTests {
    static let gate = "http://lv2plug.in/plugins/eg-midigate"
    static let signal = TestSignal.sine(frequencyHz: 500, amplitude: 0.2)

    /// A MIDI keyboard of the test's, joined after LiveMic started, patched to its MIDI input.
    static func keyboard(_ rig: LiveRig) throws -> TestClient {
      let keys = try rig.join(LiveRig.Client(name: "lmkeys", midi: true))
      try keys.connect("lmkeys:midi_out", "\(LiveRig.clientName):midi_in")
      return keys
    }

    /// One take of a note: the frame times the note-on and note-off went out at, and the
    /// recording over the note (frame times, the generator's signal, LiveMic's two outputs).
    struct Played {
      var on: UInt32
      var off: UInt32
      var times: [UInt32]
      var direct: [Float]
      var outputs: [[Float]]

      /// The first frame time at or after `from` where output `c` is not 0.
      func firstSound(_ c: Int, from: UInt32) -> UInt32? {
        times.indices.first { Int32(bitPattern: times[$0] &- from) >= 0 && outputs[c][$0] != 0 }.map {
          times[$0]
        }
      }
      /// The largest magnitude of output `c` before frame time `t`.
      func peak(_ c: Int, before t: UInt32) -> Float {
        times.indices.filter { Int32(bitPattern: times[$0] &- t) < 0 }.map { abs(outputs[c][$0]) }.max() ?? 0
      }
    }

    /// Starts LiveMic with a preset of one chain `entry`, sends a note-on `onOffset` frames into
    /// one cycle and a note-off `offOffset` frames into a later one from a JACK MIDI client, and
    /// records both outputs over the note. A take the server spoilt (a gap, an xrun, the
    /// generator off, a cycle LiveMic missed) is taken again, note and all. Under the real-time
    /// guard, which is expected to count nothing once LiveMic has stopped.
    static func play(entry: String, signal: TestSignal, onOffset: Int, offOffset: Int) throws -> Played {
      let preset = try LV2Tests.presetFile(entry)
      defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
      let rig = try LiveAudioTests.rig(["-p", preset.path], signal: signal, guarded: true)
      defer {
        rig.stop()
        rig.expectNothingCounted()
      }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      #expect(!livemic.log.contains("left out"), "\(livemic.log)")
      let keys = try Self.keyboard(rig)
      defer { keys.close() }
      rig.waitForAudio()  // the start ramp
      let witness = rig.witness(capture, generators: [(0, signal)])
      let (on, off, start, end) = try retaking("a note through a plugin") {
        let mark = witness.mark()
        try capture.record(frames: 2400)
        guard let on = keys.sendMidi(status: 0x90, 60, 100, offset: onOffset) else {
          throw HarnessError("the MIDI client did not send the note-on")
        }
        try capture.record(frames: 4800)
        guard let off = keys.sendMidi(status: 0x80, 60, 0, offset: offOffset) else {
          throw HarnessError("the MIDI client did not send the note-off")
        }
        try capture.record(frames: 4800)
        let end = capture.frameCount
        return Take((on, off, mark.frame, end), spoilt: witness.evidence(since: mark, to: end))
      }
      let direct = capture.recording(channel: 0, from: start, to: end)
      return Played(
        on: on, off: off, times: direct.times, direct: direct.samples,
        outputs: [1, 2].map { capture.recording(channel: $0, from: start, to: end).samples })
    }

    static let period = UInt32(JackServer.takePeriod)

    @Test("a synth (MDA ePiano, 0 in → 2 out) sounds from the note-on's own frame, silent before it")
    func synthSoundsAtTheNotesFrame() throws {
      let played = try Self.play(
        entry: #"{"lv2": "http://drobilla.net/plugins/mda/EPiano", "id": "synth"}"#,
        signal: .sine(frequencyHz: 500, amplitude: 0), onOffset: 37, offOffset: 0)
      for c in 0..<2 {
        #expect(played.peak(c, before: played.on) == 0, "output \(c + 1) sounded before the note")
        let first = played.firstSound(c, from: played.times.first ?? 0)
        #expect(
          first == played.on,
          "output \(c + 1) first sounded at \(String(describing: first)), note at \(played.on)")
        let during = played.times.indices.filter {
          Int32(bitPattern: played.times[$0] &- played.on) >= 0
            && Int32(bitPattern: played.times[$0] &- played.off) < 0
        }
        #expect(
          rms(during.map { played.outputs[c][$0] }[...]) > 0.01, "output \(c + 1) is too quiet under the note"
        )
      }
      LV2Tests.measured(
        "MDA ePiano: note-on at frame \(played.on) (37 into its cycle); first sound at "
          + "\(String(describing: played.firstSound(0, from: played.times.first ?? 0)))")
    }

    /// eg-midigate passes its input while a note is held. Its `run` counts an event's note before
    /// it writes the frames up to the event (lv2's midigate.c), so a cycle's gate changes at the
    /// start of the cycle the note came in: the cycle is what this test can see through it.
    @Test(
      "eg-midigate (MIDI in, mono, two instances) opens in the note-on's cycle and closes in the note-off's")
    func gateFollowsNotes() throws {
      let played = try Self.play(
        entry: #"{"lv2": "\#(Self.gate)", "id": "gate"}"#, signal: Self.signal, onOffset: 37, offOffset: 101)
      let (onCycle, offCycle) = (played.on - 37, played.off - 101)
      for c in 0..<2 {
        var worst: Float = 0
        for i in played.times.indices {
          let t = played.times[i]
          let open = Int32(bitPattern: t &- onCycle) >= 0 && Int32(bitPattern: t &- offCycle) < 0
          worst = max(worst, abs(played.outputs[c][i] - (open ? played.direct[i] : 0)))
        }
        #expect(worst < 1e-6, "output \(c + 1) differs from the input gated by the note's cycles by \(worst)")
      }
    }

    /// A mono 32-bit float WAV of `samples` at 48 kHz.
    static func writeMono(_ path: String, _ samples: [Float]) throws {
      var info = SF_INFO()
      info.samplerate = 48000
      info.channels = 1
      info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
      guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
        throw HarnessError("cannot write \(path)")
      }
      _ = sf_writef_float(file, samples, sf_count_t(samples.count))
      sf_close(file)
    }

    /// A deterministic clip in [-0.25, 0.25).
    static func clip(seed: UInt32) -> [Float] {
      var x = seed
      return (0..<1000).map { _ in
        x = x &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: x) >> 8) / Float(1 << 25)
      }
    }

    @Test(
      "messages: eg-sampler loads the sample its preset names and one ctl set names; ctl get reports each; a note plays it"
    )
    func samplerPropertiesLive() throws {
      let (a, b) = (Self.clip(seed: 1), Self.clip(seed: 2))
      let preset = try LV2Tests.presetFile(
        #"{"lv2": "http://lv2plug.in/plugins/eg-sampler", "id": "sampler", "properties": {"sample": "a.wav", "gain": 0}}"#
      )
      let folder = preset.deletingLastPathComponent()
      defer { try? FileManager.default.removeItem(at: folder) }
      try Self.writeMono(folder.appendingPathComponent("a.wav").path, a)
      try Self.writeMono(folder.appendingPathComponent("b.wav").path, b)
      let silence = TestSignal.sine(frequencyHz: 500, amplitude: 0)
      let rig = try LiveAudioTests.rig(["-p", preset.path], signal: silence, guarded: true)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      #expect(!livemic.log.contains("left out"), "\(livemic.log)")
      let keys = try Self.keyboard(rig)
      defer { keys.close() }
      rig.waitForAudio()  // the start ramp
      /// `ctl get sampler.sample` once it answers `path` (the plugin reports the file it loaded).
      func reported(_ path: String) -> Bool {
        waitUntil(seconds: 5) {
          let answer = try? rig.ctl("get", "sampler.sample")
          return answer?.stdout.contains(path) ?? false
        }
      }
      let witness = rig.witness(capture, generators: [(0, silence)])
      /// The worst difference between the output and `expected` from the note's frame (and silence
      /// before it). eg-sampler stops one frame before a sample's end (sampler.c's own loop), so
      /// the last frame is not compared.
      func playedError(_ expected: [Float]) throws -> Float {
        try retaking("a note on eg-sampler") {
          let mark = witness.mark()
          guard let on = keys.sendMidi(status: 0x90, 60, 100, offset: 21) else {
            throw HarnessError("the MIDI client did not send the note")
          }
          try capture.record(frames: 4800)
          _ = keys.sendMidi(status: 0x80, 60, 0)
          let end = capture.frameCount
          let times = capture.recording(channel: 0, from: mark.frame, to: end).times
          let outputs = [1, 2].map { capture.recording(channel: $0, from: mark.frame, to: end).samples }
          var worst: Float = 1
          if let i = times.firstIndex(of: on), i + expected.count <= times.count {
            worst =
              outputs.map { out in (0..<expected.count - 1).map { abs(out[i + $0] - expected[$0]) }.max() ?? 1
              }
              .max() ?? 1
            worst = max(worst, outputs.map { out in (0..<i).map { abs(out[$0]) }.max() ?? 0 }.max() ?? 0)
          }
          return Take(worst, spoilt: witness.evidence(since: mark, to: end))
        }
      }
      #expect(reported(folder.appendingPathComponent("a.wav").path), "ctl get never reported a.wav")
      let errorA = try playedError(a)
      #expect(errorA < 1e-6, "the note did not play a.wav: worst error \(errorA)")
      let set = try rig.ctl("set", "sampler.sample", folder.appendingPathComponent("b.wav").path)
      #expect(set.status == 0, "\(set.stderr)")
      #expect(reported(folder.appendingPathComponent("b.wav").path), "ctl get never reported b.wav")
      let errorB = try playedError(b)
      #expect(errorB < 1e-6, "the note did not play b.wav: worst error \(errorB)")
      let missing = try rig.ctl("set", "sampler.sample", "/nonexistent/c.wav")
      #expect(missing.status != 0 && missing.stderr.contains("which does not exist"), "\(missing.stderr)")
      LV2Tests.measured("eg-sampler by patch:Set: a.wav played with worst error \(errorA), b.wav \(errorB)")
      rig.expectNothingCounted()
    }

    @Test("\"midi\": false keeps MIDI from a plugin: eg-midigate stays closed through a note")
    func midiFalseKeepsTheGateShut() throws {
      let played = try Self.play(
        entry: #"{"lv2": "\#(Self.gate)", "id": "gate", "midi": false}"#, signal: Self.signal, onOffset: 0,
        offOffset: 0)
      #expect(played.outputs.allSatisfy { $0.allSatisfy { $0 == 0 } }, "the gate opened without MIDI")
    }
  }
}
