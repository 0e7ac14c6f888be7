import Foundation
import Testing

extension EndToEnd {
  @Suite("Real-time discipline, measured", .serialized)
  struct RealtimeGuardTests {
    /// The voice chain for 2,000+ cycles, then a live buffer-size change and 1,000+ more: the
    /// guard preloaded into the release binary counts nothing in the process callback.
    @Test("voice chain: zero allocations, locks, waits, I/O and sleeps, across a buffer-size change")
    func voiceChainIsRealtimeSafe() throws {
      // 100 ms bursts of a tone, not a steady one: voice's feedback suppressor and denoiser
      // take a steady sine down by design, deeper the longer it lasts (from -80 dBFS to
      // -99 dBFS here, and below the old 1e-5 check's floor under --load), so "not silent"
      // held by 1.4 dB. The bursts come out at about -47 dBFS.
      let run = GuardedRun(
        rig: try LiveAudioTests.rig(
          ["-p", "voice"], signal: .burst(frequencyHz: 220, amplitude: 0.3, onFrames: 4800, offFrames: 4800),
          period: 64, guarded: true)
      )
      defer { run.rig.stop() }
      let out = try run.acrossBufferSizeChange(recording: 48000, cyclesAfter: 1000)
      let level = rms(out[(out.count / 2)...])
      print("[measured] voice chain after the buffer-size change: RMS \(level)")
      #expect(level > 1e-3, "no audio after the buffer-size change")
      run.finish()
    }

    /// Every unit of issue 7 (feedback, denoise, aec, deesser, leveler) with a limiter.
    static func everyVoiceUnitPreset(in folder: URL) throws -> String {
      let path = folder.appendingPathComponent("all-voice-units.json")
      try #"""
      {"name": "all-voice-units", "chain": [
        {"unit": "input"}, {"unit": "aec", "mode": "builtin", "params": {"residual_db": 10}}, {"unit": "highpass"},
        {"unit": "denoise"}, {"unit": "eq"}, {"unit": "deesser"}, {"unit": "leveler"},
        {"unit": "compressor"}, {"unit": "feedback"}, {"unit": "limiter"}, {"unit": "output"}]}
      """#.write(to: path, atomically: true, encoding: .utf8)
      return path.path
    }

    @Test("feedback, denoise, aec, deesser, leveler and limiter: zero counted, across a buffer-size change")
    func voiceUnitsAreRealtimeSafe() throws {
      let folder = Paths.temporaryFolder("guard7")
      defer { try? FileManager.default.removeItem(at: folder) }
      let run = GuardedRun(
        rig: try LiveAudioTests.rig(
          ["-p", try Self.everyVoiceUnitPreset(in: folder)], signal: .frameCode, period: 64, guarded: true))
      defer { run.rig.stop() }
      let log = run.rig.livemic.log
      #expect(log.contains("+ 960 (chain) +"), "aec and denoise declare 480 frames each: \(log)")
      let out = try run.acrossBufferSizeChange(recording: 24000, cyclesAfter: 1000)
      #expect(rms(out[(out.count / 2)...]) > 1e-4, "no audio after the buffer-size change")
      let result = run.finish()
      print("[measured] rtguard, every issue-7 unit: \(result.sorted { $0.key < $1.key })")
    }

    /// denoise, aec and leveler on WebRTC's engine (mode `webrtc`): WebRTC locks and allocates
    /// in its processing, which runs on its helper thread; the process callback only hands
    /// frames over.
    @Test(
      "WebRTC's denoise, aec and leveler: zero counted in the process callback, across a rebuild for a longer period"
    )
    func webrtcEnginesAreRealtimeSafe() throws {
      let folder = Paths.temporaryFolder("guardwebrtc")
      defer { try? FileManager.default.removeItem(at: folder) }
      let preset = folder.appendingPathComponent("webrtc.json")
      try #"""
      {"name": "webrtc", "chain": [
        {"unit": "input"}, {"unit": "aec", "mode": "webrtc"}, {"unit": "denoise", "mode": "webrtc"},
        {"unit": "leveler", "mode": "webrtc"}, {"unit": "limiter"}, {"unit": "output"}]}
      """#.write(to: preset, atomically: true, encoding: .utf8)
      let rig = try LiveAudioTests.rig(
        ["-p", preset.path], signal: .sine(frequencyHz: 220, amplitude: 0.3), period: 64, guarded: true)
      defer { rig.stop() }
      let (capture, livemic, counters) = (rig.client("lmcap"), rig.livemic, try #require(rig.counters))
      func cycles() -> Int { Int(RealtimeGuard.counters(counters)["cycles"] ?? "0") ?? 0 }
      #expect(
        livemic.log.contains("+ 3885 (chain) +"),
        "aec 1583 (a speexdsp frame, two frames and WebRTC's own delay), denoise 1295, leveler 1007 frames: \(livemic.log)"
      )
      #expect(waitUntil(seconds: 20) { cycles() >= 2000 }, "only \(cycles()) cycles")
      // A period over 10 ms: the helpers need a period of latency beyond the frame (1504 frames
      // and WebRTC's own delay each, 544 more than at 64), so the chain is built again and
      // crossfaded in, and the guard still counts nothing.
      #expect(capture.setBufferSize(1024) == 0)
      #expect(
        livemic.waitForLog(
          "the chain was built again for 1024 frames per period (latency 3885 → 5517 frames)"),
        "\(livemic.log)")
      let start = capture.frameCount
      try capture.record(frames: 24000)
      let out = capture.recording(channel: 1, from: start).samples
      #expect(rms(out[(out.count / 2)...]) > 1e-4, "no audio through the WebRTC units")
      rig.stop()
      let result = RealtimeGuard.counters(counters)
      print("[measured] rtguard, WebRTC engines: \(result.sorted { $0.key < $1.key })")
      rig.expectNothingCounted()
    }

    @Test(
      "the independent rtcheck agrees with every issue-7 unit, across a buffer-size change",
      .enabled(if: FileManager.default.isExecutableFile(atPath: Paths.rtcheck.path)),
      .notOnPipeWire(
        "under pw-jack rtcheck once counted no cycle at all in this test (cause not found; the other rtcheck tests pass there); the jackd run covers it"
      ))
    func rtcheckAgreesWithVoiceUnits() throws {
      let folder = Paths.temporaryFolder("rtcheck7")
      defer { try? FileManager.default.removeItem(at: folder) }
      let output = folder.appendingPathComponent("rt.txt")
      // Not on LiveRig: rtcheck runs LiveMic under itself (RtcheckRun), where LiveRig runs it directly.
      let server = try JackServer()
      let probe = try TestClient(name: "lmprobe", server: server.name, signal: nil, captureChannels: 0)
      let run = try RtcheckRun(
        ["-s", server.name, "-n", "lmrtcheck", "-p", try Self.everyVoiceUnitPreset(in: folder)],
        output: output)
      func cycles() -> Int { run.cycles }
      #expect(waitUntil(seconds: 30) { cycles() >= 2000 }, "only \(cycles()) cycles")
      #expect(probe.setBufferSize(256) == 0)
      let atChange = cycles()
      #expect(waitUntil(seconds: 20) { cycles() >= atChange + 400 })
      print(
        "[measured] rtcheck, every issue-7 unit: \(RealtimeGuard.counters(output).sorted { $0.key < $1.key })"
      )
      RealtimeGuard.expectNothingCounted(output, "rtcheck")
      run.stop()
      probe.close()
      server.stop()
    }

    /// The workplace's independent checker must agree (skipped where it is not installed).
    /// The guard itself, checked against a client known to allocate: a zero elsewhere means
    /// something only if the guard sees an allocation where there is one.
    @Test("positive control: the guard counts a C client's one allocation and records its stack")
    func guardCatchesAnAllocation() throws {
      let folder = Paths.temporaryFolder("leaky")
      defer { try? FileManager.default.removeItem(at: folder) }
      let binary = folder.appendingPathComponent("leaky-client")
      let built = try runTool(
        "cc", ["-O1", "-rdynamic", "-o", binary.path, Paths.leakyClientSource.path, "-ljack"])
      try #require(built != nil, "cc failed to build the leaky client")
      // Not a LiveRig: the guard itself is tested, on a C client of its own, no LiveMic.
      let server = try JackServer()
      defer { server.stop() }
      let output = folder.appendingPathComponent("rt.txt")
      let client = Process()
      client.executableURL = binary
      client.arguments = [server.name, "2"]
      var env = Paths.childEnvironment()
      env["LD_PRELOAD"] = try RealtimeGuard.library().path
      env["RTGUARD_OUT"] = output.path
      client.environment = env
      try client.run()
      client.waitUntilExit()
      let c = RealtimeGuard.counters(output)
      #expect(Int(c["cycles"] ?? "0") ?? 0 >= 500, "\(c)")
      #expect(c["malloc"] == "1" && c["free"] == "1" && c["first"] == "malloc", "\(c)")
      for key in ["lock", "wait", "io", "sleep"] { #expect(c[key] == "0", "\(key): \(c)") }
      let stack = RealtimeGuard.stack(output)
      #expect(stack.contains("leaky_allocation"), "\(stack)")
    }

    @Test(
      "the independent rtcheck agrees",
      .enabled(if: FileManager.default.isExecutableFile(atPath: Paths.rtcheck.path)))
    func rtcheckAgrees() throws {
      let folder = Paths.temporaryFolder("rtcheck")
      defer { try? FileManager.default.removeItem(at: folder) }
      let output = folder.appendingPathComponent("rt.txt")
      // Not on LiveRig: rtcheck runs LiveMic under itself (RtcheckRun), where LiveRig runs it directly.
      let server = try JackServer()
      let probe = try TestClient(name: "lmprobe", server: server.name, signal: nil, captureChannels: 0)
      let run = try RtcheckRun(["-s", server.name, "-n", "lmrtcheck", "-p", "voice"], output: output)
      func cycles() -> Int { run.cycles }
      #expect(waitUntil(seconds: 30) { cycles() >= 2000 }, "only \(cycles()) cycles")
      #expect(probe.setBufferSize(256) == 0)
      let atChange = cycles()
      #expect(waitUntil(seconds: 20) { cycles() >= atChange + 400 })
      RealtimeGuard.expectNothingCounted(output, "rtcheck")
      run.stop()
      probe.close()
      server.stop()
    }
  }
}
