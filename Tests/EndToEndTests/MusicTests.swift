import Foundation
import Testing

/// The music bed (`--music`) and its ducking on a real jackd (dummy backend).
extension EndToEnd {
  @Suite("Music bed and ducking", .serialized)
  struct MusicTests {
    /// A server, a voice generator (into `in_1`), a music generator (into `music_1` and
    /// `music_2`) and a capture: in_1 the music directly, in_2/in_3 LiveMic's outputs; with
    /// `monitor`, in_4 the voice directly and in_5 `monitor_1`.
    /// A `LiveRig` with the voice and music generators (`lmvoice`, `lmmusic`) on LiveMic's voice
    /// and music inputs, and a capture (`lmcap`) of the music (channel 0) and LiveMic's outputs
    /// (1, 2), with `monitor` also of the voice (3) and the monitor output (4).
    static func rig(
      _ arguments: [String], voice: TestSignal, music: TestSignal, monitor: Bool = false,
      guarded: Bool = false, period: Int = JackServer.takePeriod, environment: [String: String] = [:]
    ) throws -> LiveRig {
      let clients: [LiveRig.Client] = [
        .init(name: "lmvoice", signal: voice), .init(name: "lmmusic", signal: music),
        .init(name: "lmcap", captureChannels: monitor ? 5 : 3),
      ]
      let rig = try LiveRig(period: period, clients: clients, guarded: guarded, environment: environment) {
        c in
        let (voiceOut, musicOut, capture) = (c[0].portName("out"), c[1].portName("out"), c[2])
        return [
          "--connect-in", voiceOut, "--connect-music", "\(musicOut),\(musicOut)",
          "--connect-out", "\(capture.portName("in_2")),\(capture.portName("in_3"))",
        ] + (monitor ? ["--connect-monitor", capture.portName("in_5")] : []) + arguments
      }
      let capture = rig.client("lmcap")
      try capture.connect(rig.client("lmmusic").portName("out"), capture.portName("in_1"))
      if monitor { try capture.connect(rig.client("lmvoice").portName("out"), capture.portName("in_4")) }
      return rig
    }

    /// The rig's witness: the music generator on channel 0 (and the voice on channel 3 with a
    /// monitor), LiveMic's missed cycles.
    static func witness(_ rig: LiveRig, voice: TestSignal, music: TestSignal, monitor: Bool = false)
      -> Witness
    {
      rig.witness(rig.client("lmcap"), generators: [(0, music)] + (monitor ? [(3, voice)] : []))
    }

    @Test("the music bypasses the voice chain: out = music × its volume, bit for bit")
    func musicBypassesChain() throws {
      // The voice chain has -12 dB of input gain and a silent voice: the music must not see it.
      let rig = try Self.rig(
        ["-p", "flat", "-c", "input.bypass=0", "-c", "input.gain_db=-12", "-c", "music.volume_db=-6"],
        voice: .sine(frequencyHz: 300, amplitude: 0), music: .sine(frequencyHz: 1000, amplitude: 0.5))
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      // PipeWire delivers port metadata to other clients asynchronously: allow it a moment.
      #expect(
        capture.prettyNameOnServer(
          of: "lmclient:music_1", expected: "LiveMic music 1 (left)", server: rig.server.name)
          == "LiveMic music 1 (left)")
      #expect(capture.connections(of: "lmclient:music_2") == ["lmmusic:out"])
      rig.waitForAudio()  // the start ramp applies to the music too
      let volume = powf(10, Float(-6) / 20)
      // A take the server spoilt (a gap, an xrun, a generator off, a cycle LiveMic missed) is
      // taken again.
      let witness = Self.witness(
        rig, voice: .sine(frequencyHz: 300, amplitude: 0), music: .sine(frequencyHz: 1000, amplitude: 0.5)
      )
      let take = try retaking("the music through LiveMic") {
        try witness.take(frames: 24000, channels: [0, 1, 2])
      }
      let (music, left, right) = (take[0], take[1], take[2])
      var mismatches = 0
      for i in 0..<music.count where left[i] != music[i] * volume || right[i] != music[i] * volume {
        mismatches += 1
      }
      #expect(music.count >= 24000)
      #expect(rms(music[...]) > 0.3)
      #expect(mismatches == 0, "\(mismatches) of \(music.count) samples are not music × 10^(-6/20)")
    }

    /// The music's gain and the voice's presence per 10 ms window (480 frames: a whole number
    /// of periods of both the 1 kHz music and the 300 Hz voice, so they are orthogonal).
    static func windows(music: [Float], output: [Float]) -> [(gain: Double, voice: Double)] {
      stride(from: 0, to: music.count - 480, by: 480).map { s in
        var mm = 0.0
        var om = 0.0
        for i in s..<(s + 480) {
          mm += Double(music[i]) * Double(music[i])
          om += Double(output[i]) * Double(music[i])
        }
        let g = om / mm
        var residual = 0.0
        for i in s..<(s + 480) {
          let r = Double(output[i]) - g * Double(music[i])
          residual += r * r
        }
        return (g, (residual / 480).squareRoot())
      }
    }

    @Test("ducking: the music dips by depth_db within attack_ms of the voice and recovers over release_ms")
    func duckingDepthAndTiming() throws {
      let rig = try Self.rig(
        [
          "-p", "flat", "-c", "music.volume_db=-6", "-c", "music.duck=1", "-c", "music.duck_depth_db=12",
          "-c", "music.duck_attack_ms=100", "-c", "music.duck_release_ms=400", "-c", "music.duck_hold_ms=0",
          "-c", "music.duck_threshold_db=-40",
        ],
        voice: .sine(frequencyHz: 300, amplitude: 0.25), music: .sine(frequencyHz: 1000, amplitude: 0.5))
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      usleep(1_500_000)
      let voiceOut = rig.client("lmvoice").portName("out")
      /// One take: the windows, and where the voice went off and came back (three windows in a
      /// row, so one spoilt window is not taken for the voice).
      let witness = Self.witness(
        rig, voice: .sine(frequencyHz: 300, amplitude: 0.25),
        music: .sine(frequencyHz: 1000, amplitude: 0.5))
      func take() throws -> Take<(w: [(gain: Double, voice: Double)], off: Int, on: Int)?> {
        let mark = witness.mark()
        // Voice off after 0.6 s, back on after 1.6 s.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.6) {
          capture.disconnect(voiceOut, "lmclient:in_1")
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 1.6) {
          try? capture.connect(voiceOut, "lmclient:in_1")
        }
        try capture.record(frames: 48000 * 26 / 10)
        let end = capture.frameCount
        let spoilt = witness.evidence(since: mark, to: end)
        let w = Self.windows(
          music: capture.recording(channel: 0, from: mark.frame, to: end).samples,
          output: capture.recording(channel: 1, from: mark.frame, to: end).samples)
        // The voice's residual is about 0.18; the music's own gain ramp leaves about 0.002.
        func run(from i: Int, _ test: (Double) -> Bool) -> Int? {
          (i..<max(i, w.count - 2)).first { j in (j..<j + 3).allSatisfy { test(w[$0].voice) } }
        }
        guard let off = run(from: 0, { $0 < 0.01 }), let on = run(from: off, { $0 > 0.01 }) else {
          return Take(nil, spoilt: spoilt)
        }
        return Take((w, off, on), spoilt: spoilt)
      }
      // A take the server spoilt (a cycle dropped reads as voice) is taken again.
      let result = try retaking("the ducking take", take)
      guard let (w, off, on) = result else {
        Issue.record("the voice never went off and on again")
        return
      }
      let open = Double(powf(10, Float(-6) / 20))
      let db = { (g: Double) in 20 * log10(g / open) }
      // Depth: ducked before the voice went off, open before it came back.
      let ducked = db(w[max(off - 5, 0)].gain)
      let reopened = db(w[on - 3].gain)
      #expect(abs(ducked + 12) < 0.05, "ducked by \(ducked) dB, expected -12 dB")
      #expect(abs(reopened) < 0.01, "recovered to \(reopened) dB, expected 0 dB")
      // Release: from the first window without voice to within 0.5 dB of open ≈ 400 · 11.5/12 ms.
      let released = w[off...].firstIndex { db($0.gain) > -0.5 }.map { Double($0 - off) * 10 } ?? .infinity
      // Attack: from the first window with voice to within 0.5 dB of the depth ≈ 100 · 11.5/12 ms.
      let attacked = w[on...].firstIndex { db($0.gain) < -11.5 }.map { Double($0 - on) * 10 } ?? .infinity
      print("ducking: depth \(ducked) dB, release \(released) ms, attack \(attacked) ms")
      #expect(abs(released - 383) <= 30, "recovered in \(released) ms, expected about 383 ms")
      #expect(abs(attacked - 96) <= 30, "dipped in \(attacked) ms, expected about 96 ms")
    }

    /// The gain of `reference` in `signal` (their correlation over a whole number of periods).
    static func gain(of reference: [Float], in signal: [Float]) -> Double {
      var rr = 0.0
      var sr = 0.0
      for i in 0..<min(reference.count, signal.count) {
        rr += Double(reference[i]) * Double(reference[i])
        sr += Double(signal[i]) * Double(reference[i])
      }
      return sr / rr
    }

    @Test("monitor mix: its voice and music levels are its own, independent of the main outputs")
    func monitorLevelsAreIndependent() throws {
      let rig = try Self.rig(
        [
          "-p", "flat", "-c", "music.volume_db=-20", "-c", "monitor.voice_db=-6", "-c", "monitor.music_db=0",
        ],
        voice: .sine(frequencyHz: 300, amplitude: 0.25), music: .sine(frequencyHz: 1000, amplitude: 0.5),
        monitor: true)
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      // PipeWire delivers port metadata to other clients asynchronously: allow it a moment.
      #expect(
        capture.prettyNameOnServer(
          of: "lmclient:monitor_1", expected: "LiveMic monitor 1 (left)", server: rig.server.name)
          == "LiveMic monitor 1 (left)")
      rig.waitForAudio()
      let db = { (g: Double) in 20 * log10(g) }
      // A take the server spoilt is taken again.
      let witness = Self.witness(
        rig, voice: .sine(frequencyHz: 300, amplitude: 0.25),
        music: .sine(frequencyHz: 1000, amplitude: 0.5),
        monitor: true)
      let figures = try retaking("the monitor and main levels") {
        // 24,000 frames: 150 periods of the voice, 500 of the music (orthogonal).
        let take = try witness.take(frames: 24000, channels: [0, 1, 3, 4])
        let (music, out, voice, monitor) = (take.value[0], take.value[1], take.value[2], take.value[3])
        return Take(
          (
            mainMusic: db(Self.gain(of: music, in: out)), mainVoice: db(Self.gain(of: voice, in: out)),
            monitorMusic: db(Self.gain(of: music, in: monitor)),
            monitorVoice: db(Self.gain(of: voice, in: monitor))
          ), spoilt: take.spoilt)
      }
      print("monitor: \(figures)")
      #expect(abs(figures.mainMusic + 20) < 0.01, "\(figures)")
      #expect(abs(figures.mainVoice) < 0.01, "\(figures)")
      #expect(abs(figures.monitorMusic) < 0.01, "\(figures)")
      #expect(abs(figures.monitorVoice + 6) < 0.01, "\(figures)")
    }

    @Test("monitor reverb: a tail in the monitor between the voice's bursts, none in the main outputs")
    func monitorReverbIsMonitorOnly() throws {
      for reverbDb in [-60, -3] {
        let rig = try Self.rig(
          [
            "-p", "flat", "-c", "music.volume_db=-60", "-c", "monitor.music_db=-60",
            "-c", "monitor.reverb_db=\(reverbDb)", "-c", "monitor.reverb_room=0.7",
          ],
          voice: .burst(frequencyHz: 440, amplitude: 0.25, onFrames: 4800, offFrames: 9600),
          music: .sine(frequencyHz: 1000, amplitude: 0.5), monitor: true)
        defer { rig.stop() }
        rig.waitForAudio()
        // A take the server spoilt is taken again.
        let witness = Self.witness(
          rig, voice: .burst(frequencyHz: 440, amplitude: 0.25, onFrames: 4800, offFrames: 9600),
          music: .sine(frequencyHz: 1000, amplitude: 0.5), monitor: true)
        let take = try retaking("the monitor reverb at \(reverbDb) dB") {
          try witness.take(frames: 48000, channels: [1, 3, 4])
        }
        let (out, voice, monitor) = (take[0], take[1], take[2])
        // The frames where the voice is silent (and was for 1,000 frames before).
        var quiet: [Int] = []
        var silentRun = 0
        for i in voice.indices {
          silentRun = voice[i] == 0 ? silentRun + 1 : 0
          if silentRun > 1000 { quiet.append(i) }
        }
        let rms = { (x: [Float], at: [Int]) in
          (at.reduce(0.0) { $0 + Double(x[$1]) * Double(x[$1]) } / Double(max(at.count, 1))).squareRoot()
        }
        print(
          "monitor reverb \(reverbDb) dB: quiet frames \(quiet.count), main \(rms(out, quiet)), monitor \(rms(monitor, quiet))"
        )
        #expect(quiet.count > 10000)
        #expect(rms(out, quiet) == 0, "the main outputs carry no reverb")
        #expect(abs(20 * log10(Self.gain(of: voice, in: out))) < 0.01, "the main voice is untouched")
        if reverbDb == -60 {
          #expect(rms(monitor, quiet) == 0, "no send, no tail")
          #expect(abs(20 * log10(Self.gain(of: voice, in: monitor))) < 0.01)
        } else {
          // The tail of a 0.1 s burst at -12 dBFS in a 0.7 room, 20 to 200 ms after it.
          #expect(rms(monitor, quiet) > 0.002, "the monitor has the reverb's tail")
        }
      }
    }

    @Test("latency through JACK: the voice path adds the chain's 480 frames, the music path none")
    func latencyOfBothPaths() throws {
      // voice's denoise declares 480 frames; the music bypasses the chain. The test clients'
      // own ports have no latency.
      let rig = try Self.rig(
        ["-p", "voice", "-c", "music.volume_db=-20"], voice: .sine(frequencyHz: 300, amplitude: 0.25),
        music: .sine(frequencyHz: 1000, amplitude: 0.5), monitor: true)
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      var figures: [String: (min: UInt32, max: UInt32)] = [:]
      let reported = waitUntil(seconds: 5) {
        figures = [
          "out_1 capture": capture.latency(of: "lmclient:out_1", capture: true),
          "monitor_1 capture": capture.latency(of: "lmclient:monitor_1", capture: true),
          "in_1 playback": capture.latency(of: "lmclient:in_1", capture: false),
          "music_1 playback": capture.latency(of: "lmclient:music_1", capture: false),
        ]
        return figures["out_1 capture"]! == (0, 480) && figures["monitor_1 capture"]! == (0, 480)
          && figures["in_1 playback"]! == (480, 480) && figures["music_1 playback"]! == (0, 0)
      }
      #expect(reported, "\(figures)")
    }

    @Test(
      "real-time guard: zero allocations, locks and waits with --music, ducking, --monitor and its reverb, --loudness-target"
    )
    func musicIsRealtimeSafe() throws {
      let rig = try Self.rig(
        [
          "-p", "voice", "-c", "music.duck=1", "--monitor", "-c", "monitor.reverb_db=-6",
          "--loudness-target", "-16",
        ],
        voice: .sine(frequencyHz: 300, amplitude: 0.3),
        music: .sine(frequencyHz: 1000, amplitude: 0.3), monitor: true, guarded: true, period: 256)
      defer { rig.stop() }
      func cycles() -> Int { rig.counters.map { Int(RealtimeGuard.counters($0)["cycles"] ?? "0") ?? 0 } ?? 0 }
      #expect(waitUntil(seconds: 20) { cycles() >= 2000 }, "only \(cycles()) cycles")
      rig.stop()
      rig.expectNothingCounted()
    }
  }
}
