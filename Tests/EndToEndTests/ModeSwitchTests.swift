import Foundation
import TestSupport
import Testing

extension EndToEnd {
  /// Issue 17, "processing modes you can change live": `ctl mode STAGE MODE` on the release
  /// binary. x42's fil4 (x42-plugins, installed by scripts/setup --test) is the plugin; Debian
  /// packages no denoising plugin, so `plugin` for denoise is the refusal.
  @Suite("Processing modes switched live", .serialized)
  struct ModeSwitchTests {
    static func stage(_ status: [String: Any], _ id: String) -> [String: Any] {
      (status["chain"] as? [[String: Any]] ?? []).first { $0["id"] as? String == id } ?? [:]
    }

    /// The high-pass switched from its built-in unit to fil4 and back while a 440 Hz sine plays:
    /// the switch is crossfaded (no gap, no click), the level stays (both filters pass 440 Hz),
    /// and the audio thread counts nothing, crossfade included.
    @Test(
      "ctl mode highpass plugin and back while a sine plays: crossfaded, no gap, no click, nothing counted",
      .notOnPipeWire(TestBackend.unreportedDropouts))
    func switchWhilePlaying() throws {
      let folder = Paths.temporaryFolder("modeswitch")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("hp.json")
      try #"""
      {"name": "hp", "volume": 0.8, "chain": [
        {"unit": "highpass", "params": {"freq_hz": 80}}, {"unit": "eq", "params": {"bass_db": 2}},
        {"unit": "limiter"}]}
      """#.write(to: file, atomically: true, encoding: .utf8)
      let signal = TestSignal.sine(frequencyHz: 440, amplitude: 0.25)
      let rig = try LiveAudioTests.rig(["-p", file.path], signal: signal, guarded: true)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      rig.waitForAudio()  // past the start ramp
      let witness = LiveAudioTests.witness(rig)
      var switches = 0
      for target in ["plugin", "builtin"] {
        let out = try retaking("the ctl mode \(target) window") {
          let mark = witness.mark()
          try capture.record(frames: 4800)
          let answer = try rig.ctl("--json", "mode", "highpass", target)
          #expect(answer.status == 0, "\(answer)")
          switches += 1
          #expect(
            waitUntil(seconds: 10) {
              livemic.log.components(separatedBy: "stage 'highpass': ").count > switches
            },
            "\(livemic.log)")
          try capture.record(frames: 9600)
          let end = capture.frameCount
          return Take(
            capture.recording(channel: 1, from: mark.frame, to: end).samples,
            spoilt: witness.evidence(since: mark, to: end))
        }
        let steps = zip(out, out.dropFirst()).map { abs($1 - $0) }
        let steadyJump = steps[0..<4799].max() ?? 0
        let jump = steps.max() ?? 0
        let at = steps.firstIndex(of: jump) ?? 0
        #expect(
          jump <= steadyJump * 1.25, "to \(target): largest step \(jump) at \(at) against \(steadyJump)")
        let before = rms(out[0..<4800])
        let quietest =
          stride(from: 0, to: out.count - 240, by: 240).map { rms(out[$0..<($0 + 240)]) }.min() ?? 0
        #expect(quietest > before * 0.7, "to \(target): a 5 ms window fell to RMS \(quietest) from \(before)")
        let after = rms(out[(out.count - 2400)...])
        #expect(abs(after - before) < before * 0.05, "to \(target): RMS \(after) after, \(before) before")
      }
      let status = jsonObject(try rig.ctl("--json", "status").stdout)
      #expect(Self.stage(status, "highpass")["implementation"] as? String == "builtin", "\(status)")
      rig.stop()
      rig.expectNothingCounted()
    }

    @Test(
      "ctl mode lists and switches stages, refuses what cannot be met in one sentence, and a saved preset keeps the mode"
    )
    func switchesAndRefuses() throws {
      // The presets and the events file are named on LiveMic's command line, before the rig exists.
      let folder = Paths.temporaryFolder("modes")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("m.json").path
      try #"""
      {"name": "m", "chain": [
        {"unit": "highpass", "params": {"freq_hz": 120}}, {"unit": "denoise", "bypass": true},
        {"unit": "eq"}, {"unit": "limiter"}]}
      """#.write(toFile: file, atomically: true, encoding: .utf8)
      let off = folder.appendingPathComponent("off.json").path
      try #"{"name": "off", "plugins": false, "chain": [{"unit": "highpass"}]}"#
        .write(toFile: off, atomically: true, encoding: .utf8)
      let events = folder.appendingPathComponent("events.jsonl")
      let rig = try LiveRig(period: 64) { _ in ["-p", file, "--no-connect", "--events", events.path] }
      defer { rig.stop() }
      let ctl = { (words: [String]) in try rig.ctl(["--json"] + words) }
      // The list: the high-pass built-in by default, denoise automatic (no plugin of its list).
      let list = (jsonObject(try ctl(["mode"]).stdout)["modes"] as? [[String: Any]] ?? []).map {
        "\($0["id"] ?? "?") \($0["mode"] ?? "?") \($0["implementation"] ?? "?")"
      }
      #expect(list == ["highpass builtin builtin", "denoise automatic builtin"], "\(list)")
      #expect(try ctl(["set", "eq.bass_db", "4"]).status == 0)
      // To fil4: its parameters replace the built-in ones, freq_hz mapped; eq keeps its value.
      let plugin = jsonObject(try ctl(["mode", "highpass", "plugin"]).stdout)
      #expect(plugin["implementation"] as? String == Installed.fil4, "\(plugin)")
      #expect(try ctl(["get", "highpass.HPfreq"]).stdout.contains("120"))
      #expect(try ctl(["get", "eq.bass_db"]).stdout.contains("4"))
      // denoise to WebRTC: bypass kept, its latency declared.
      let before = jsonObject(try ctl(["status"]).stdout)["latency_frames"] as? Int ?? 0
      #expect(try ctl(["mode", "denoise", "webrtc"]).status == 0)
      let status = jsonObject(try ctl(["status"]).stdout)
      #expect(Self.stage(status, "denoise")["implementation"] as? String == "webrtc", "\(status)")
      #expect(Self.stage(status, "denoise")["bypassed"] as? Bool == true, "\(status)")
      #expect((status["latency_frames"] as? Int ?? 0) > before, "\(status)")
      // Refusals, one sentence each, the chain kept.
      for (words, sentence) in [
        (
          ["mode", "denoise", "plugin"],
          "stage 'denoise' asks for mode 'plugin' but none of its plugins can be used"
        ),
        (["mode", "highpass", "webrtc"], "unit 'highpass' has no WebRTC engine"),
        (["mode", "eq", "plugin"], "unit 'eq' has no processing modes"),
        (["mode", "nosuch", "builtin"], "the running chain has no stage 'nosuch'"),
        (["mode", "denoise", "fancy"], "needs a \"mode\": builtin, plugin, automatic or webrtc"),
      ] {
        let refused = try rig.ctl(words)
        #expect(refused.status == 1 && refused.stderr.contains(sentence), "\(words): \(refused)")
      }
      let kept = jsonObject(try ctl(["status"]).stdout)
      #expect(Self.stage(kept, "highpass")["implementation"] as? String == Installed.fil4, "\(kept)")
      // Saved and loaded again: denoise asked for builtin keeps asking for it.
      #expect(try ctl(["mode", "denoise", "builtin"]).status == 0)
      let saved = folder.appendingPathComponent("saved.json").path
      #expect(try ctl(["preset", "save", saved]).status == 0)
      #expect(try ctl(["preset", "load", saved]).status == 0)
      let reloaded = (jsonObject(try ctl(["mode"]).stdout)["modes"] as? [[String: Any]] ?? []).first {
        $0["id"] as? String == "denoise"
      }
      #expect(reloaded?["mode"] as? String == "builtin", "\(String(describing: reloaded))")
      // With plugins off ("plugins": false), plugin mode runs the built-in unit and says why.
      #expect(try ctl(["preset", "load", off]).status == 0)
      let offAnswer = jsonObject(try ctl(["mode", "highpass", "plugin"]).stdout)
      #expect(offAnswer["implementation"] as? String == "builtin", "\(offAnswer)")
      #expect((offAnswer["why"] as? String)?.contains("plugins are off") == true, "\(offAnswer)")
      rig.stop()
      let changes = EventStreamTests.events(events).filter { $0["event"] as? String == "mode-changed" }
      #expect(
        changes.map { "\($0["id"] ?? "?") \($0["implementation"] ?? "?")" } == [
          "highpass \(Installed.fil4)", "denoise webrtc", "denoise builtin", "highpass builtin",
        ], "\(changes)")
    }
  }
}
