import CJack
import Foundation
import Testing

extension EndToEnd {
  /// JACK's freewheel mode (the graph run as fast as it can, as Ardour's export runs it) switched
  /// on and off with `jack_freewheel` on a private server, with the release binary: the
  /// `freewheel` events, `status`, a recording, the meters and the loudness meter through it.
  @Suite("Freewheel", .serialized)
  struct FreewheelTests {
    /// Switches the server's freewheel mode with `jack_freewheel y|n`, which takes no server
    /// option: it opens libjack's default server, which `JACK_DEFAULT_SERVER` names.
    static func freewheel(_ on: Bool, server: String) throws {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/jack_freewheel")
      process.arguments = [on ? "y" : "n"]
      var env = Paths.childEnvironment()
      env["JACK_DEFAULT_SERVER"] = server
      // PipeWire's libjack takes the default server from the remote's name instead.
      if TestBackend.isPipeWire { env["PIPEWIRE_REMOTE"] = server }
      env["JACK_NO_START_SERVER"] = "1"
      process.environment = env
      let errors = Pipe()
      process.standardError = errors
      process.standardOutput = FileHandle.nullDevice
      try process.run()
      let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      // jack_freewheel exits 0 even when the server refused: its message tells.
      guard process.terminationStatus == 0, !text.contains("failed"), !text.contains("not running") else {
        throw HarnessError("jack_freewheel \(on ? "y" : "n") failed on '\(server)': \(text)")
      }
    }

    /// The meters' output left channel (peak, RMS in dBFS) and the loudness figures of one
    /// reading taken `seconds` after a reading that reset them.
    static func meters(after seconds: Double, _ rig: LiveRig) throws -> (
      peak: Double, rms: Double, loudness: [String: Double]
    ) {
      _ = try rig.json(["meters", "--once"])
      usleep(UInt32(seconds * 1e6))
      let reading = try rig.json(["meters", "--once"])
      let left = (reading["output"] as? [[String: Double]])?.first ?? [:]
      return (
        left["peak_dbfs"] ?? -200, left["rms_dbfs"] ?? -200, reading["loudness"] as? [String: Double] ?? [:]
      )
    }

    @Test(
      "freewheel on for a second and off: events, status, a recording holding every frame in order, meters after",
      .notOnPipeWire(
        "PipeWire 0.3.65's jack_set_freewheel moves the calling client's node (with what it is"
          + " linked to) into the pipewire.freewheel group, not the whole graph: jack_freewheel's own"
          + " client has no ports and exits at once, so LiveMic never freewheels and gets no freewheel callback (seen: 0 cycles, no event);"
          + " switched by the generator's client instead, the graph did freewheel and the recording"
          + " dropped nothing, but the server's frame times no longer followed the frames run"
          + " (24,318 recorded samples outside the generator's frame range), so the frame-coded check"
          + " cannot tell a lost frame there"))
    func recordingThroughFreewheel() throws {
      let folder = Paths.temporaryFolder("freewheel")
      defer { try? FileManager.default.removeItem(at: folder) }
      let events = folder.appendingPathComponent("events.jsonl")
      // Outputs to the first playback ports (the default), which jackd disconnects while it
      // freewheels and connects again after.
      let rig = try LiveRig(
        period: 256, clients: [LiveRig.Client(name: "lmgen", signal: .frameCode)], guarded: true,
        folder: folder
      ) { c in ["-p", "flat", "--connect-in", c[0].portName("out"), "--events", events.path] }
      defer { rig.stop() }
      let (server, generator, livemic) = (rig.server, rig.client("lmgen"), rig.livemic)
      rig.waitForAudio()  // the start ramp, by LiveMic's own cycles
      let before = try Self.meters(after: 0.5, rig)
      let connectionsBefore = try rig.json(["connections"])["connections"] as? [String: [String]] ?? [:]
      let initial = try rig.json(["status"])
      #expect(initial["freewheeling"] as? Bool == false, "\(initial)")

      // A recording running from before the freewheel until after it: a take, retaken when the
      // server spoilt it in real time around the freewheel (an xrun the generator's client
      // counted, a cycle LiveMic missed; seen once in CI: 6 xruns and 9 missed cycles moved the
      // server's frame times past what the frame-coded check can follow). A clean take must
      // hold every frame exactly.
      var number = 0
      let measured = try retaking("the recording through a freewheel") { () -> Take<FreewheelTake> in
        number += 1
        let startStatus = try rig.json(["status"])
        let firstFrame = jack_frame_time(generator.handle)
        let (xrunsAtStart, missedAtStart) = (
          generator.xruns.load(ordering: .relaxed), startStatus["missed_cycles"] as? Int ?? 0
        )
        let take = folder.appendingPathComponent("take-\(number).wav").path
        let started = try rig.json(["record", "start", "--tap", "output", take])
        #expect(started["ok"] as? Bool == true, "\(started)")
        usleep(300_000)
        let wallStart = Date()
        try Self.freewheel(true, server: server.name)
        var during: [String: Any] = [:]
        #expect(
          waitUntil(seconds: 2) {
            during = (try? rig.json(["status"])) ?? [:]
            return during["freewheeling"] as? Bool == true
          }, "status never said freewheeling: \(during)")
        usleep(UInt32(max(0, 1 - Date().timeIntervalSince(wallStart)) * 1e6))
        try Self.freewheel(false, server: server.name)
        let wall = Date().timeIntervalSince(wallStart)
        usleep(300_000)
        let stopped = try rig.json(["record", "stop"])["stopped"] as? [[String: Any]] ?? []
        let status = try rig.json(["status"])
        let xruns = Int(generator.xruns.load(ordering: .relaxed) - xrunsAtStart)
        let missed = (status["missed_cycles"] as? Int ?? 0) - missedAtStart
        let result = FreewheelTake(
          path: take, firstFrame: firstFrame, wall: wall, stopped: stopped, startStatus: startStatus,
          status: status)
        return Take(result, spoilt: xruns + missed > 0 ? "\(xruns) xruns, \(missed) missed cycles" : nil)
      }
      let (take, firstFrame, wall, stopped, status) = (
        measured.path, measured.firstFrame, measured.wall, measured.stopped, measured.status
      )
      #expect(status["freewheeling"] as? Bool == false, "\(status)")
      #expect(status["state"] as? String == "running", "\(status)")
      let connectionsAfter = try rig.json(["connections"])["connections"] as? [String: [String]] ?? [:]
      #expect(connectionsAfter == connectionsBefore, "before \(connectionsBefore), after \(connectionsAfter)")

      // The meters read the signal again after the freewheel, as before it.
      let after = try Self.meters(after: 0.5, rig)
      #expect(
        abs(after.rms - before.rms) <= 0.2 && abs(after.peak - before.peak) <= 0.3, "\(before) \(after)")
      #expect(abs(after.rms - -10.8) <= 0.3, "a uniform ±0.5 signal has an RMS of -10.8 dBFS: \(after)")
      let (momentaryBefore, momentaryAfter) = (
        before.loudness["momentary_lufs"] ?? -200, after.loudness["momentary_lufs"] ?? -200
      )
      #expect(
        abs(momentaryAfter - momentaryBefore) <= 0.5 && momentaryBefore > -30,
        "momentary loudness before \(before.loudness), after \(after.loudness)")
      let loudnessDrops = { (s: [String: Any]) in
        (s["loudness"] as? [String: Any])?["dropped_frames"] as? Int ?? -1
      }
      let loudnessDropped = loudnessDrops(status) - loudnessDrops(measured.startStatus)
      #expect(livemic.interrupt() == 0)
      rig.expectNothingCounted()

      // The events: on, then off with the cycles and frames run meanwhile.
      let changes = EventStreamTests.events(events).filter { $0["event"] as? String == "freewheel" }
      #expect(
        changes.map { $0["on"] as? Bool } == Array(repeating: [true, false], count: number).flatMap { $0 },
        "\(changes)")
      let off = changes.last ?? [:]
      let (cycles, frames) = (off["cycles"] as? Int ?? 0, off["frames"] as? Int ?? 0)
      #expect(cycles > 0 && frames == cycles * 256, "\(off)")
      #expect(off["dropped_frames"] as? Int == 0, "\(off)")
      // The loudness meter's drops (it analyzes slower than some graphs run) are counted and
      // reported too: the event says what status counted meanwhile.
      #expect(off["loudness_dropped_frames"] as? Int == loudnessDropped, "\(off), status: \(loudnessDropped)")
      #expect(livemic.log.contains("JACK stopped freewheeling after \(cycles) cycles"), "\(livemic.log)")

      // The recording: every frame the chain produced while it ran, in order, none dropped.
      let summary = stopped.first ?? [:]
      let dropped = summary["dropped_frames"] as? Int ?? -1
      print(
        "[measured] freewheel: \(cycles) cycles, \(frames) frames ("
          + String(format: "%.1f s of audio in %.2f s", Double(frames) / 48000, wall)
          + "); recording \(summary["frames"] ?? "?") frames, \(dropped) dropped; loudness meter dropped "
          + "\(loudnessDropped)")
      #expect(stopped.count == 1 && dropped == 0, "\(stopped)")
      guard let file = SoundFile(take) else {
        Issue.record("libsndfile cannot open '\(take)'")
        return
      }
      #expect(file.frames == summary["frames"] as? Int, "\(file.frames) frames in the file, \(summary)")
      #expect(file.frames > frames, "\(file.frames) frames recorded, \(frames) run freewheeling")
      #expect(file.channels[0] == file.channels[1], "a mono input feeds both channels")
      // The generator's code of every frame time from a second before the recording started.
      let margin = 48000
      let reference = (0..<(file.frames + 2 * margin)).map {
        TestSignal.frameCode.value(atFrame: firstFrame &- UInt32(margin) &+ UInt32($0), sampleRate: 48000)
      }
      guard let offset = alignment(of: file.channels[0], in: reference) else {
        Issue.record("the recording is not the generator's signal")
        return
      }
      let (mismatches, outside, resyncs) = compare(file.channels[0], reference, offset: offset)
      // A clean take (no xrun, no missed cycle): every frame, in order, at one offset.
      #expect(outside == 0, "\(outside) samples outside the generator's frames")
      #expect(resyncs == 0, "the recording matched at \(resyncs + 1) offsets")
      #expect(mismatches == 0, "\(mismatches) of \(file.frames) samples differ")
    }
  }

  /// What one take of the freewheel test measured.
  struct FreewheelTake {
    let path: String
    /// The generator's frame time when the take began.
    let firstFrame: jack_nframes_t
    /// Seconds from switching freewheel on to switching it off.
    let wall: Double
    /// `record stop`'s answer, and `status` at the take's start and end.
    let stopped: [[String: Any]]
    let startStatus: [String: Any]
    let status: [String: Any]
  }
}
