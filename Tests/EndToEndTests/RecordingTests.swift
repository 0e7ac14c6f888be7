import Foundation
import Testing

extension EndToEnd {
  /// Recordings and the output stream on a real jackd (dummy backend), with the release binary.
  @Suite("Recording and taps", .serialized)
  struct RecordingTests {
    /// A rig (`period`, `JackServer.takePeriod` by default) of a frame-code generator (`lmgen`), a
    /// capture client (`lmcap`) recording the generator (in_1) and LiveMic's outputs (in_2, in_3)
    /// for `captureSeconds`, and LiveMic (`-p flat`, so the output is the input bit for bit once
    /// the start ramp is done) with `arguments`. `folder`: the test's, holding the files named on
    /// LiveMic's command line (the test removes it).
    static func rig(
      _ arguments: [String], captureSeconds: Double, folder: URL, guarded: Bool = false,
      period: Int = JackServer.takePeriod, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> LiveRig {
      var connecting: Error?
      let rig = try LiveRig(
        period: period,
        clients: [
          LiveRig.Client(name: "lmgen", signal: .frameCode),
          LiveRig.Client(name: "lmcap", captureChannels: 3, seconds: captureSeconds),
        ], guarded: guarded, folder: folder, sourceLocation: sourceLocation
      ) { c in
        // The generator reaches the capture before LiveMic starts.
        do { try c[1].connect(c[0].portName("out"), c[1].portName("in_1")) } catch { connecting = error }
        return [
          "-p", "flat", "--connect-in", c[0].portName("out"), "--connect-out",
          "\(c[1].portName("in_2")),\(c[1].portName("in_3"))",
        ] + arguments
      }
      if let connecting { throw connecting }
      return rig
    }

    /// The files in a folder, sorted.
    static func files(_ folder: URL) -> [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        .map { folder.appendingPathComponent($0).path }
    }

    /// Expects `samples` to equal the capture's channel `channel` sample for sample under one
    /// offset, none outside it; an xrun during the run may spoil a few cycles (then at most
    /// four periods per xrun may differ).
    static func expectContinuous(
      _ samples: [Float], _ capture: TestClient, channel: Int, _ label: String, missedCycles: Int = 0,
      sourceLocation: SourceLocation = #_sourceLocation
    ) {
      let reference = capture.recording(channel: channel).samples
      guard let offset = alignment(of: samples, in: reference) else {
        Issue.record("\(label): not found in the capture", sourceLocation: sourceLocation)
        return
      }
      let (mismatches, outside, resyncs) = compare(samples, reference, offset: offset)
      // Cycles LiveMic or the capture missed count as xruns: PipeWire reports none for them, and
      // jackd's dummy server was seen losing a cycle for one client without an xrun (a clean-clone
      // run: the input tap matched at 3 offsets with 1 xrun counted, LiveMic's writers dropping
      // nothing). Each shifts the reference once.
      let xruns =
        Int(capture.xruns.load(ordering: .relaxed)) + missedCycles + capture.frameTimeGaps
      let allowed = xruns * 4 * JackServer.takePeriod
      // On PipeWire one dropped cycle was once seen to move the alignment twice, identically in
      // the input tap, the output tap and the FIFO stream (three separate writers, so the server's
      // timing, not a writer): there a counted drop may account for two offsets.
      let resyncsAllowed = xruns * (TestBackend.isPipeWire ? 2 : 1)
      #expect(
        resyncs <= resyncsAllowed,
        "\(label): the recording matched at \(resyncs + 1) offsets with \(xruns) xruns",
        sourceLocation: sourceLocation)
      #expect(
        outside == 0, "\(label): \(outside) samples outside the capture", sourceLocation: sourceLocation)
      #expect(
        mismatches <= allowed,
        "\(label): \(mismatches) of \(samples.count) samples differ (xruns allow \(allowed))",
        sourceLocation: sourceLocation)
    }

    @Test("--record: 10 s of the output tap equal what a capture client received from out_1/out_2")
    func recordingEqualsCapture() throws {
      let folder = Paths.temporaryFolder("record")
      defer { try? FileManager.default.removeItem(at: folder) }
      let rig = try Self.rig(
        ["--record", folder.appendingPathComponent("takes").path], captureSeconds: 16, folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      #expect(livemic.waitForLog("recording 1 started"), "\(livemic.log)")
      // 10 s of audio (a loaded machine's dummy backend may run a little slower than the clock).
      let recorded = waitUntil(seconds: 20) {
        usleep(200_000)
        let status = (try? rig.json(["status"])) ?? [:]
        return ((status["recordings"] as? [[String: Any]])?.first?["frames"] as? Int ?? 0) >= 10 * 48000
          + 4800
      }
      #expect(recorded, "the recording did not reach 10 s")
      let missed = (try? rig.json(["status"]))?["missed_cycles"] as? Int ?? 0
      #expect(livemic.interrupt() == 0)
      let paths = Self.files(folder.appendingPathComponent("takes"))
      #expect(paths.count == 1 && paths.first?.contains("\(LiveRig.clientName)-output-") == true, "\(paths)")
      guard let path = paths.first, let file = SoundFile(path) else {
        Issue.record("no readable recording: \(paths)")
        return
      }
      #expect(file.frames >= 10 * 48000, "\(file.frames) frames")
      #expect(
        livemic.log.contains("\(file.frames) frames"), "the log reports the frames written: \(livemic.log)")
      #expect(livemic.log.contains(", 0 dropped,"), "\(livemic.log)")
      Self.expectContinuous(file.channels[0], capture, channel: 1, "left", missedCycles: missed)
      Self.expectContinuous(file.channels[1], capture, channel: 2, "right", missedCycles: missed)
    }

    @Test(
      "the input and output taps recorded and the output streamed to a FIFO at once: all complete, no drops")
    func threeConsumersAtOnce() throws {
      let folder = Paths.temporaryFolder("taps")
      defer { try? FileManager.default.removeItem(at: folder) }
      let fifo = folder.appendingPathComponent("stream.f32").path
      #expect(mkfifo(fifo, 0o600) == 0)
      // The reader: opens the FIFO (waiting for LiveMic), reads to the end.
      let received = ReceivedBytes()
      let reader = Thread {
        received.set(FileHandle(forReadingAtPath: fifo)?.readDataToEndOfFile() ?? Data())
      }
      reader.start()
      let rig = try Self.rig(
        ["--stream-out", fifo, "--stream-format", "f32"], captureSeconds: 14, folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      let takes = folder.appendingPathComponent("takes").path + "/"
      let input = try rig.json(["record", "start", "--tap", "input", takes])
      let output = try rig.json(["record", "start", "--tap", "output", "--format", "wav", takes])
      #expect(input["ok"] as? Bool == true && output["ok"] as? Bool == true, "\(input) \(output)")
      // 4 s of audio into both recordings, by LiveMic's own cycles.
      rig.waitForAudio(seconds: 4)
      let status = try rig.json(["status"])
      let recordings = status["recordings"] as? [[String: Any]] ?? []
      let stream = status["stream"] as? [String: Any] ?? [:]
      #expect(recordings.count == 2, "\(status)")
      #expect(recordings.allSatisfy { $0["dropped_frames"] as? Int == 0 }, "\(recordings)")
      #expect(stream["dropped_frames"] as? Int == 0 && stream["open"] as? Bool == true, "\(stream)")
      let stopped = try rig.json(["record", "stop"])["stopped"] as? [[String: Any]] ?? []
      let missed = try rig.json(["status"])["missed_cycles"] as? Int ?? 0
      #expect(stopped.count == 2 && stopped.allSatisfy { $0["dropped_frames"] as? Int == 0 }, "\(stopped)")
      #expect(stopped.allSatisfy { ($0["frames"] as? Int ?? 0) >= 3 * 48000 }, "\(stopped)")
      #expect(livemic.interrupt() == 0)
      #expect(waitUntil(seconds: 5) { received.data != nil }, "the FIFO reader saw no end of stream")
      #expect(livemic.log.contains("the stream to '\(fifo)' ended after"), "\(livemic.log)")
      // Every sample of all three, in order, none missing.
      let inputFile = stopped.first { $0["tap"] as? String == "input" }.flatMap {
        SoundFile($0["path"] as? String ?? "")
      }
      let outputFile = stopped.first { $0["tap"] as? String == "output" }.flatMap {
        SoundFile($0["path"] as? String ?? "")
      }
      #expect(inputFile != nil && outputFile != nil, "\(stopped)")
      if let inputFile {
        Self.expectContinuous(
          inputFile.channels[0], capture, channel: 0, "input tap, left", missedCycles: missed)
        Self.expectContinuous(
          inputFile.channels[1], capture, channel: 0, "input tap, right (mono input)", missedCycles: missed)
      }
      if let outputFile {
        Self.expectContinuous(outputFile.channels[0], capture, channel: 1, "output tap", missedCycles: missed)
      }
      let streamed = stereoFloats(received.data ?? Data())
      #expect(streamed[0].count >= 7 * 48000 / 2, "\(streamed[0].count) frames streamed")
      Self.expectContinuous(streamed[0], capture, channel: 1, "stream, left", missedCycles: missed)
      Self.expectContinuous(streamed[1], capture, channel: 2, "stream, right", missedCycles: missed)
    }

    @Test("a stream reader that stops reading only costs the stream frames; a recording and the audio go on")
    func stalledReaderIsIsolated() throws {
      let folder = Paths.temporaryFolder("stall")
      defer { try? FileManager.default.removeItem(at: folder) }
      let fifo = folder.appendingPathComponent("stream.f32").path
      #expect(mkfifo(fifo, 0o600) == 0)
      // Opened for reading (non-blocking, so the test goes on) and never read.
      let stalled = open(fifo, O_RDONLY | O_NONBLOCK)
      defer { close(stalled) }
      let rig = try Self.rig(
        ["--stream-out", fifo, "--record", folder.appendingPathComponent("takes").path], captureSeconds: 12,
        folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      // The pipe (64 KiB) and the stream's ring (about 5.5 s) fill up, then the stream drops.
      var status: [String: Any] = [:]
      let dropping = waitUntil(seconds: 10) {
        status = (try? rig.json(["status"])) ?? [:]
        return ((status["stream"] as? [String: Any])?["dropped_frames"] as? Int ?? 0) > 0
      }
      #expect(dropping, "\(status)")
      #expect((status["recordings"] as? [[String: Any]])?.first?["dropped_frames"] as? Int == 0, "\(status)")
      // A take the server spoilt (a gap, an xrun, the generator off, a cycle LiveMic missed) is
      // taken again.
      let witness = rig.witness(capture, generators: [(0, .frameCode)])
      let take = try retaking("the output while the stream drops") {
        try witness.take(frames: 24000, channels: [1, 0])
      }
      let (out, direct) = (take[0], take[1])
      #expect(out == direct, "the audio goes on unchanged while the stream drops frames")
      #expect(livemic.interrupt() == 0)
      #expect(livemic.log.contains(", 0 dropped,"), "\(livemic.log)")
    }

    @Test("kill -9 while recording WAV: the file opens and holds all but the last second")
    func killedRecordingIsReadable() throws {
      let folder = Paths.temporaryFolder("kill")
      defer { try? FileManager.default.removeItem(at: folder) }
      let takes = folder.appendingPathComponent("takes")
      let rig = try LiveRig(folder: folder) { _ in ["--no-connect", "--record", takes.path] }
      defer { rig.stop() }
      // The test kills LiveMic with SIGKILL: its exit status is not checked.
      rig.expectsCleanExit = false
      let livemic = rig.livemic
      #expect(livemic.waitForLog("recording 1 started"), "\(livemic.log)")
      let started = Date()
      // The recording's length, measured against the file (not a wait for readiness).
      usleep(3_500_000)
      kill(livemic.process.processIdentifier, SIGKILL)
      let elapsed = Date().timeIntervalSince(started)
      livemic.process.waitUntilExit()
      let path = Self.files(takes).first ?? ""
      guard let file = SoundFile(path) else {
        Issue.record("libsndfile cannot open '\(path)' after kill -9")
        return
      }
      let seconds = Double(file.frames) / 48000
      #expect(
        seconds >= elapsed - 1 && seconds <= elapsed + 0.1, "\(seconds) s in the file, \(elapsed) s recorded")
    }

    @Test("across a server restart: --record keeps one file, --autorecord starts a new one per session")
    func recordingsAcrossReconnection() throws {
      let folder = Paths.temporaryFolder("sessions")
      defer { try? FileManager.default.removeItem(at: folder) }
      let (whole, sessions) = (
        folder.appendingPathComponent("whole"), folder.appendingPathComponent("sessions")
      )
      let rig = try LiveRig(folder: folder) { _ in
        ["--no-connect", "--record", whole.path, "--autorecord", sessions.path]
      }
      defer { rig.stop() }
      let livemic = rig.livemic
      #expect(livemic.waitForLog("recording 2 started"), "\(livemic.log)")
      // A second of audio into each session, by LiveMic's own cycles.
      rig.waitForAudio(seconds: 1)
      try rig.server.killAndRestart(period: JackServer.takePeriod)
      #expect(livemic.waitForLog("recording 3 started"), "\(livemic.log)")
      rig.waitForAudio(seconds: 1)
      #expect(livemic.interrupt() == 0)
      let files = Self.files(sessions).compactMap { SoundFile($0) }
      #expect(files.count == 2 && files.allSatisfy { $0.frames >= 40000 }, "\(Self.files(sessions))")
      let all = Self.files(whole).compactMap { SoundFile($0) }
      #expect(all.count == 1 && (all.first?.frames ?? 0) >= 80000, "\(Self.files(whole)) \(livemic.log)")
      #expect(livemic.log.contains("recording 2 stopped (new session)"), "\(livemic.log)")
    }

    @Test("a recording that cannot be written is refused in one sentence; audio and other consumers go on")
    func unwritableRecordingIsReported() throws {
      let folder = Paths.temporaryFolder("unwritable")
      defer { try? FileManager.default.removeItem(at: folder) }
      // Tests may run as root, where a 0555 folder does not stop writes: a folder under a regular
      // file cannot be created by anyone (ENOTDIR). /dev/full fails every write (ENOSPC).
      let plain = folder.appendingPathComponent("plain.txt")
      _ = FileManager.default.createFile(atPath: plain.path, contents: Data("x".utf8))
      let events = folder.appendingPathComponent("events.jsonl")
      let rig = try Self.rig(
        [
          "--record", plain.appendingPathComponent("takes").path, "--stream-out", "/dev/full",
          "--events", events.path,
        ], captureSeconds: 8, folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      let good = try rig.json(["record", "start", folder.appendingPathComponent("good.wav").path])
      let answer = try rig.json(["record", "start", plain.appendingPathComponent("x.wav").path])
      #expect(answer["ok"] as? Bool == false, "\(answer)")
      let error = answer["error"] as? String ?? ""
      #expect(error.hasPrefix("cannot record to '") && error.contains("Not a directory"), "\(error)")
      #expect(good["ok"] as? Bool == true, "\(good)")
      #expect(
        livemic.waitForLog("the stream to '/dev/full' stopped: a write failed (No space left on device)"))
      #expect(livemic.log.contains("error: " + error), "\(livemic.log)")
      // Audio goes on, bit for bit, after every failure (and past the start ramp, by LiveMic's
      // own cycles).
      rig.waitForAudio()
      let witness = rig.witness(capture, generators: [(0, .frameCode)])
      let take = try retaking("the output after the failures") {
        try witness.take(frames: 48000, channels: [0, 1])
      }
      let (direct, out) = (take[0], take[1])
      #expect(out.count >= 48000 && out == direct, "the output is not the input after the failures")
      let status = try rig.json(["status"])
      let recordings = status["recordings"] as? [[String: Any]] ?? []
      #expect(recordings.count == 1 && (recordings.first?["frames"] as? Int ?? 0) > 48000, "\(recordings)")
      #expect(status["stream"] == nil, "\(status)")
      #expect(livemic.interrupt() == 0)
      let names = EventStreamTests.events(events).compactMap { $0["event"] as? String }
      #expect(names.filter { $0 == "record-failed" }.count == 2, "\(names)")
      #expect(names.contains("stream-failed") && names.contains("record-stopped"), "\(names)")
    }

    @Test("real-time guard and rtcheck: two recordings and a stream running, every counter zero")
    func realtimeWithConsumers() throws {
      let folder = Paths.temporaryFolder("rtrec")
      defer { try? FileManager.default.removeItem(at: folder) }
      let consumers = [
        "--record", folder.appendingPathComponent("a").path, "--autorecord",
        folder.appendingPathComponent("b").path,
        "--stream-out", folder.appendingPathComponent("stream.f32").path,
      ]
      do {
        let rig = try Self.rig(consumers, captureSeconds: 4, folder: folder, guarded: true, period: 256)
        defer { rig.stop() }
        // A third recording attached and detached live, through the control socket.
        let third = try rig.json(
          ["record", "start", "--tap", "input", folder.appendingPathComponent("c").path + "/"])
        #expect(third["ok"] as? Bool == true, "\(third)")
        let counters = try #require(rig.counters)
        func cycles() -> Int { Int(RealtimeGuard.counters(counters)["cycles"] ?? "0") ?? 0 }
        let atStart = cycles()
        #expect(waitUntil(seconds: 20) { cycles() >= atStart + 2000 }, "only \(cycles()) cycles")
        #expect((try rig.json(["record", "stop", "\(third["id"] as? Int ?? 0)"]))["ok"] as? Bool == true)
        let status = try rig.json(["status"])
        #expect((status["recordings"] as? [[String: Any]])?.count == 2, "\(status)")
        #expect((status["stream"] as? [String: Any])?["dropped_frames"] as? Int == 0, "\(status)")
        #expect(rig.livemic.interrupt() == 0)
        rig.expectNothingCounted()
      }
      guard FileManager.default.isExecutableFile(atPath: Paths.rtcheck.path) else { return }
      let output = folder.appendingPathComponent("rtcheck.txt")
      // Off LiveRig: rtcheck's own runner (RtcheckRun) starts livemic under rtcheck.
      let server = try JackServer(period: 64)
      defer { server.stop() }
      let run = try RtcheckRun(
        ["-s", server.name, "-n", "lmrtrec", "--no-connect"] + consumers, output: output)
      #expect(waitUntil(seconds: 30) { run.cycles >= 2000 }, "only \(run.cycles) cycles")
      RealtimeGuard.expectNothingCounted(output, "rtcheck")
      run.stop()
    }
  }
}

/// Bytes a reader thread hands over once it is done.
final class ReceivedBytes: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Data?
  var data: Data? {
    lock.lock()
    defer { lock.unlock() }
    return value
  }
  func set(_ data: Data) {
    lock.lock()
    value = data
    lock.unlock()
  }
}
