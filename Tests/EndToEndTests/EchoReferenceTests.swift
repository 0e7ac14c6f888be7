import Foundation
import Testing

extension EndToEnd {
  /// Issue 16, "echo cancellation with the right reference", live: the music bed plays through
  /// LiveMic (`--music`) and, through a room client, leaks into LiveMic's microphone input. The
  /// `aec` stage (automatic: WebRTC's canceller) takes the music as mixed as its reference.
  @Suite("The music bed as the echo reference", .serialized)
  struct EchoReferenceTests {
    /// The music generator (frame code: broadband) goes to LiveMic's music inputs and to the room;
    /// the room (speaker band, resonances, −10 dB, 720 frames) feeds LiveMic's input. The capture
    /// records the music (in_1), LiveMic's outputs (in_2, in_3) and the microphone (in_4). The
    /// music is mixed at 0 dB without ducking, so the output minus the music is what the voice
    /// path left of the echo. Under the real-time guard: nothing counted.
    @Test(
      "aec cancels the music bed's echo live (ERLE ≥ 20 dB over 2 s after 5 s); zero counted in the process callback",
      .notOnPipeWire(TestBackend.unreportedDropouts))
    func musicEchoCancelledLive() throws {
      let folder = Paths.temporaryFolder("echoref")
      defer { try? FileManager.default.removeItem(at: folder) }
      let preset = folder.appendingPathComponent("aec.json")
      try #"{"name": "aec", "volume": 1, "chain": [{"unit": "aec"}]}"#
        .write(to: preset, atomically: true, encoding: .utf8)
      let counters = folder.appendingPathComponent("rtguard.txt")
      // The control socket is this test's own (another suite's `lmclient` must never answer).
      let env = ["XDG_RUNTIME_DIR": folder.path]
      // 256 frames, not `JackServer.takePeriod`: at 1024 frames this room measured 2.0-2.1 dB of
      // ERLE (2026-12-02, the helper on time: 1 late frame of 996), cause not yet found.
      // At `JackServer.takePeriod`: at 256 frames on the 2-vCPU CI machine (2026-12-02) all four
      // 2 s takes were spoilt (13-37 gaps each, LiveMic itself missing 10-22 cycles beside
      // WebRTC's real-time helper).
      // Not on LiveRig: the room (a RoomClient, which LiveRig does not make) must feed LiveMic
      // from its start; connected once LiveMic ran, the echo measured ERLE 103-106 dB, not 25.
      // Again 2026-12-07 as `LiveRig(folder:)` with the room made on `rig.server` after the rig
      // (`--connect-in lmroom:out` pending, connected when its port appeared): 96.1 and 98.6 dB
      // against this form's 25.5 in the same run; LiveMic's output was the music alone.
      let server = try JackServer(period: JackServer.takePeriod)
      defer { server.stop() }
      let music = try TestClient(name: "lmmusic", server: server.name, signal: .frameCode, captureChannels: 0)
      defer { music.close() }
      let room = try RoomClient(
        name: "lmroom", server: server.name, source: [Float](repeating: 0, count: 48000 * 30),
        gainDecibels: -10, delayFrames: 720)
      defer { room.close() }
      let capture = try TestClient(
        name: "lmcap", server: server.name, signal: nil, captureChannels: 4, seconds: 40)
      defer { capture.close() }
      try capture.connect(music.portName("out"), capture.portName("in_1"))
      try capture.connect(music.portName("out"), room.portName("in"))
      try capture.connect(room.portName("out"), capture.portName("in_4"))
      let livemic = try LiveMicProcess(
        [
          "-s", server.name, "-n", "lmclient", "-p", preset.path, "--music", "-c", "music.volume_db=0",
          "--connect-in", room.portName("out"),
          "--connect-music", "\(music.portName("out")),\(music.portName("out"))",
          "--connect-out", "\(capture.portName("in_2")),\(capture.portName("in_3"))",
        ], guardOutput: counters, environment: env)
      #expect(LiveRig.answersStatus(livemic, name: "lmclient", environment: env), "\(livemic.log)")
      let status = jsonObject(
        try runLiveMic(["ctl", "-n", "lmclient", "--json", "status"], environment: env).stdout)
      let aec = (status["chain"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "aec" } ?? [:]
      #expect(aec["implementation"] as? String == "webrtc", "\(aec)")
      // Its helper's late frames are reported (how many depends on the machine's load).
      let late = jsonObject(
        try runLiveMic(["ctl", "-n", "lmclient", "--json", "get", "aec.late_frames"], environment: env).stdout
      )
      #expect(((late["values"] as? [String: Double])?["aec.late_frames"] ?? -1) >= 0, "\(late)")
      room.start()
      LiveRig.waitForAudio(name: "lmclient", environment: env)  // past the start ramp
      // The canceller converges first (4 s, not judged: a dropped cycle there only delays it);
      // then a 2 s window is measured, taken again when the server spoilt it.
      LiveRig.waitForAudio(name: "lmclient", environment: env, seconds: 4)
      let witness = Witness.rig(capture, signal: .frameCode, client: "lmclient", environment: env)
      let erle = try retaking("the echo window") {
        let mark = witness.mark()
        try capture.record(frames: 2 * 48000)
        let end = capture.frameCount
        let (direct, out, mic) = (
          capture.recording(channel: 0, from: mark.frame, to: end).samples,
          capture.recording(channel: 1, from: mark.frame, to: end).samples,
          capture.recording(channel: 3, from: mark.frame, to: end).samples
        )
        let residual = zip(out, direct).map { Double($0 - $1) }
        let echoEnergy = mic.reduce(0) { $0 + Double($1) * Double($1) }
        let left = residual.reduce(0) { $0 + $1 * $1 }
        return Take(10 * log10(echoEnergy / max(left, 1e-20)), spoilt: witness.evidence(since: mark, to: end))
      }
      print(
        "[measured] live music-bed echo through the room, aec automatic (WebRTC): ERLE \(String(format: "%.1f", erle)) dB"
      )
      // At 1024 frames this measured 0-2 dB (both cancellers) until the reference stream got one
      // block a cycle (`ReferenceChoice`): the first cycle with music handed the output's block
      // and the music's, so the reference ran a period ahead of the microphone for good, and at
      // a period longer than the room's 720 frames the echo came before its reference.
      #expect(erle >= 20, "ERLE \(erle) dB")
      #expect(livemic.interrupt() == 0)
      RealtimeGuard.expectNothingCounted(counters)
    }
  }
}
