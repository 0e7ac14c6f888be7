import Foundation
import Testing

extension EndToEnd {
  @Suite("Routing policy and howl protection", .serialized)
  struct RoutingTests {
    /// Preference list A then B: starts on B; A appearing moves the output there (not muted:
    /// the user named it); A vanishing falls back to B, muted; SIGUSR1 unmutes.
    @Test("a preferred target is taken when it appears; a lost target mutes and falls back")
    func preferenceFallbackAndMute() throws {
      let folder = Paths.temporaryFolder("route")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("events.jsonl")
      let rig = try LiveRig(
        period: 64,
        clients: [
          .init(name: "lmgen", signal: .sine(frequencyHz: 440, amplitude: 0.3)),
          .init(name: "lmspkB", captureChannels: 2),
        ], guarded: true, folder: folder
      ) { _ in
        [
          "-p", "flat", "--connect-in", "lmgen:out", "--route-out", "lmspkA:in_", "--route-out", "lmspkB:in_",
          "--events", file.path,
        ]
      }
      defer { rig.stop() }
      let (generator, speakerB, livemic) = (rig.client("lmgen"), rig.client("lmspkB"), rig.livemic)
      // Logged before LiveMic answers `status` (the route is applied before its loop runs).
      #expect(livemic.log.contains("route: requested 'lmspkA:in_' then 'lmspkB:in_'"), "\(livemic.log)")
      #expect(generator.connections(of: "lmclient:out_1") == ["lmspkB:in_1"])
      #expect(generator.connections(of: "lmclient:out_2") == ["lmspkB:in_2"])

      // The preferred device appears: LiveMic moves there without muting.
      var speakerA: TestClient? = try rig.join(.init(name: "lmspkA", captureChannels: 2))
      #expect(
        waitUntil(seconds: 5) { generator.connections(of: "lmclient:out_1") == ["lmspkA:in_1"] },
        "\(livemic.log)")
      #expect(!livemic.log.contains("output muted"), "\(livemic.log)")

      // The preferred device vanishes: fall back to B, muted, silent there.
      speakerA!.close()
      speakerA = nil
      #expect(
        waitUntil(seconds: 5) { generator.connections(of: "lmclient:out_1") == ["lmspkB:in_1"] },
        "\(livemic.log)")
      #expect(livemic.waitForLog("output muted"), "\(livemic.log)")
      rig.waitForAudio(seconds: 0.3)  // the mute's ramp down
      var start = speakerB.frameCount
      try speakerB.record(frames: 4800)
      #expect(
        rms(speakerB.recording(channel: 0, from: start).samples[...]) == 0,
        "muted output is not silent: \(livemic.log)")

      // Told to unmute: audio ramps back up on the fallback.
      kill(livemic.process.processIdentifier, SIGUSR1)
      #expect(livemic.waitForLog("output unmuted"), "\(livemic.log)")
      rig.waitForAudio()  // the unmute's ramp
      start = speakerB.frameCount
      try speakerB.record(frames: 4800)
      #expect(rms(speakerB.recording(channel: 0, from: start).samples[...]) > 0.15)
      rig.stop()
      rig.expectNothingCounted()
      let names = EventStreamTests.events(file).compactMap { $0["event"] as? String }
      #expect(
        names.filter { $0 == "route-changed" }.count >= 2 && names.contains("muted")
          && names.contains("unmuted"), "\(names)")
      // The loss is `lost` whichever way LiveMic saw it: the port vanishing, or (PipeWire
      // 0.3.65's libjack reports some server errors as a shutdown, seen under load when a
      // client closes) not back after the reconnection that follows.
      let changes = EventStreamTests.events(file).filter { $0["event"] as? String == "route-changed" }
      let reasons = changes.compactMap { $0["reason"] as? String }
      #expect(
        changes.contains { $0["code"] as? String == "lost" }
          && reasons.contains { $0.contains("more preferred") },
        "\(reasons)")
    }

    /// The output's target vanishes while LiveMic's audio thread is stalled (its generator,
    /// upstream, holds its cycle), so the mute's ramp cannot run in the 300 ms the supervisor
    /// waits: the fallback must hear nothing once audio runs again. Before the fix LiveMic
    /// connected it anyway and it heard the rest of the ramp down from full level (RMS 0.047
    /// over 9600 frames; the CI run at 4fe1dc5 failed the test above this way, RMS 0.015), and
    /// with the ramp merely cut, a cycle of the stale buffer (JACK's xrun recovery ran the
    /// fallback once before LiveMic: RMS 0.018). Now the ramp is cut and the fallback waits
    /// until a silent cycle has run.
    @Test(
      "a fallback stays silent when the audio thread was stalled as the route was lost; the doors answer meanwhile",
      .notOnPipeWire(TestBackend.heldClientStallsOnJackdOnly))
    func fallbackSilentAfterStall() throws {
      let rig = try LiveRig(
        period: 64,
        clients: [
          .init(name: "lmgen", signal: .sine(frequencyHz: 440, amplitude: 0.3)),
          .init(name: "lmspkB", captureChannels: 2), .init(name: "lmspkA", captureChannels: 2),
        ], guarded: true
      ) { _ in
        ["-p", "flat", "--connect-in", "lmgen:out", "--route-out", "lmspkA:in_", "--route-out", "lmspkB:in_"]
      }
      defer { rig.stop() }
      let (generator, speakerB, speakerA) = (rig.client("lmgen"), rig.client("lmspkB"), rig.client("lmspkA"))
      let livemic = rig.livemic
      // Logged before LiveMic answers `status` (the route is applied before its loop runs).
      #expect(livemic.log.contains("route: requested 'lmspkA:in_' then 'lmspkB:in_'"), "\(livemic.log)")
      #expect(generator.connections(of: "lmclient:out_1") == ["lmspkA:in_1"])
      // Full level on A (the start's fade-in is over).
      rig.waitForAudio()
      var start = speakerA.frameCount
      try speakerA.record(frames: 4800)
      #expect(rms(speakerA.recording(channel: 0, from: start).samples[...]) > 0.15)

      generator.hold.store(true, ordering: .releasing)
      #expect(waitUntil(seconds: 2) { generator.held.load(ordering: .acquiring) })
      let socket = try SocketLines(rig.socketPath)
      speakerA.close()
      // The ramp cannot run while the cycle is held: the supervisor must not wait for it (it
      // held every door, and a server loss, for 300 ms). Asked as the mute is logged, status
      // answers at once.
      #expect(livemic.waitForLog("output muted (route lost)"), "\(livemic.log)")
      let (status, seconds) = ControlDoorTests.ask(socket, #"{"cmd":"status"}"#)
      print("[measured] route loss with the cycle held: status answered in \(Int(seconds * 1000)) ms")
      #expect(status?["state"] as? String == "muted", "\(status ?? [:])")
      #expect(seconds < 0.15, "status waited \(seconds) s for the route loss's fade")
      #expect(!livemic.log.contains("cut to silence"), "the cut came before the ask: \(livemic.log)")
      #expect(livemic.waitForLog("cut to silence"), "\(livemic.log)")
      let stillHeld = generator.held.load(ordering: .acquiring)
      #expect(stillHeld, "the stall ended before LiveMic gave up waiting for the ramp")
      #expect(generator.connections(of: "lmclient:out_1").isEmpty, "the fallback was connected while stalled")
      start = speakerB.frameCount
      generator.hold.store(false, ordering: .releasing)
      #expect(
        waitUntil(seconds: 5) { generator.connections(of: "lmclient:out_1") == ["lmspkB:in_1"] },
        "\(livemic.log)")
      try speakerB.record(frames: 9600)
      #expect(
        rms(speakerB.recording(channel: 0, from: start).samples[...]) == 0,
        "the fallback heard the muted output: \(livemic.log)")
      #expect(livemic.log.contains("output muted (route lost)"), "\(livemic.log)")
      rig.stop()
      rig.expectNothingCounted()
    }

    /// Input preference list: the most preferred source that exists feeds in_1.
    @Test("input routing follows its preference list")
    func inputPreference() throws {
      let rig = try LiveRig(period: 64, clients: [.init(name: "lmsrcB", signal: .frameCode)]) { _ in
        ["--no-connect", "--route-in", "lmsrcA:out", "--route-in", "lmsrcB:out"]
      }
      defer { rig.stop() }
      let (sourceB, livemic) = (rig.client("lmsrcB"), rig.livemic)
      // Logged before LiveMic answers `status` (the route is applied before its loop runs).
      #expect(livemic.log.contains("input route: requested 'lmsrcA:out' then 'lmsrcB:out'"), "\(livemic.log)")
      #expect(sourceB.connections(of: "lmclient:in_1") == ["lmsrcB:out"])
      var sourceA: TestClient? = try rig.join(.init(name: "lmsrcA", signal: .frameCode))
      #expect(
        waitUntil(seconds: 5) { sourceB.connections(of: "lmclient:in_1") == ["lmsrcA:out"] }, "\(livemic.log)"
      )
      sourceA?.close()
      sourceA = nil
      #expect(
        waitUntil(seconds: 5) { sourceB.connections(of: "lmclient:in_1") == ["lmsrcB:out"] }, "\(livemic.log)"
      )
      #expect(!livemic.log.contains("output muted"), "an input change never mutes")
    }
  }
}
