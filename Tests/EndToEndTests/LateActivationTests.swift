import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

extension EndToEnd {
  /// Most JACK clients register their ports and only then call `jack_activate`; jackd2 refuses
  /// to connect a port of a client that is not active yet (`jack_connect` returns -1). LiveMic
  /// must keep such a connection pending and make it once the client is active (issue 14).
  @Suite("Clients that activate after registering their ports", .serialized)
  struct LateActivationTests {
    /// LiveMic's three connections to the late client, as (source, destination).
    static func wanted(_ livemic: String) -> [(String, String)] {
      [("late:out", "\(livemic):in_1"), ("\(livemic):out_1", "late:in_1"), ("\(livemic):out_2", "late:in_2")]
    }

    /// Whether all three connections exist, as the late client sees them.
    static func connected(_ late: TestClient, _ livemic: String) -> Bool {
      late.connections(of: "late:out") == ["\(livemic):in_1"]
        && late.connections(of: "late:in_1") == ["\(livemic):out_1"]
        && late.connections(of: "late:in_2") == ["\(livemic):out_2"]
    }

    /// The late client's generator reaches both of its inputs through LiveMic (`-p flat`).
    /// `settle` waits for the audio to reach them (200 ms of LiveMic's cycles).
    static func expectAudioFlows(
      _ late: TestClient, _ livemic: LiveMicProcess, _ label: String, settle: () -> Void
    ) throws {
      settle()
      let start = late.frameCount
      try late.record(frames: 4800)
      let end = late.frameCount
      let left = late.recording(channel: 0, from: start, to: end).samples
      let right = late.recording(channel: 1, from: start, to: end).samples
      #expect(
        rms(left[...]) > 0.2 && rms(right[...]) > 0.2,
        "\(label): rms \(rms(left[...])), \(rms(right[...])) at the late client's inputs: \(livemic.log)")
    }

    /// Each failed attempt is logged once, not at every retry, and so is each success.
    static func expectLoggedOnce(_ livemic: LiveMicProcess, _ name: String) {
      let log = livemic.log
      for (source, destination) in wanted(name) {
        let failures = log.components(separatedBy: "cannot connect '\(source)' to '\(destination)'").count - 1
        #expect(failures <= 1, "\(source) → \(destination) failed \(failures) times in the log: \(log)")
        let successes = log.components(separatedBy: "connected \(source) → \(destination)").count - 1
        #expect(successes <= 1, "\(source) → \(destination) connected \(successes) times in the log: \(log)")
      }
    }

    @Test("a client registered before LiveMic starts and activated 1 s later is connected, and audio flows")
    func registeredBeforeStart() throws {
      let spec = LiveRig.Client(name: "late", signal: .frameCode, captureChannels: 2, activate: false)
      let rig = try LiveRig(period: 64, clients: [spec]) { _ in
        ["-p", "flat", "--connect-in", "late:out", "--connect-out", "late:in_1,late:in_2"]
      }
      defer { rig.stop() }
      let (late, livemic, name) = (rig.client("late"), rig.livemic, LiveRig.clientName)
      rig.waitForAudio(seconds: 1)  // a second of LiveMic's cycles with the client not active
      try late.activate()
      #expect(waitUntil(seconds: 3) { Self.connected(late, name) }, "\(livemic.log)")
      try Self.expectAudioFlows(late, livemic, "at start") { rig.waitForAudio(seconds: 0.2) }
      Self.expectLoggedOnce(livemic, name)
    }

    /// LiveMic is stopped (SIGSTOP) while the server is killed and restarted and the late client
    /// registers on the new server, so LiveMic reconnects, deterministically, while that client
    /// is registered but not active yet.
    @Test("after a server restart, a client registered but not yet active is connected once it activates")
    func registeredBeforeReconnect() throws {
      let spec = LiveRig.Client(name: "late", signal: .frameCode, captureChannels: 2)
      let rig = try LiveRig(period: 64, clients: [spec]) { _ in
        [
          "-p", "flat", "--connect-in", "late:out", "--connect-out", "late:in_1,late:in_2",
          // The client closes before the restart: a lost route, which would keep the output
          // muted (the default); this test is about the reconnection, so it plays on.
          "--on-route-loss", "continue",
        ]
      }
      defer { rig.stop() }
      let (server, livemic, name) = (rig.server, rig.livemic, LiveRig.clientName)
      var late = rig.client("late")
      // The client made again on the new server closes before the rig stops it.
      defer { late.close() }
      #expect(waitUntil(seconds: 3) { Self.connected(late, name) }, "\(livemic.log)")
      late.close()
      let pid = livemic.process.processIdentifier
      kill(pid, SIGSTOP)
      do {
        try server.killAndRestart()
        late = try rig.join(spec, activate: false)
      } catch {
        kill(pid, SIGCONT)
        throw error
      }
      kill(pid, SIGCONT)
      #expect(livemic.waitForLog("reconnected to '\(server.name)'"), "\(livemic.log)")
      if !TestBackend.isPipeWire {
        // jackd2 refused all three: LiveMic did reconnect while the client was not active.
        #expect(livemic.log.contains("0 connection(s) restored, 3 waiting"), "\(livemic.log)")
      }
      rig.waitForAudio(seconds: 1)  // a second of LiveMic's cycles with the client not active
      try late.activate()
      #expect(waitUntil(seconds: 3) { Self.connected(late, name) }, "\(livemic.log)")
      try Self.expectAudioFlows(late, livemic, "after the restart") { rig.waitForAudio(seconds: 0.2) }
      #expect(livemic.process.isRunning, "\(livemic.log)")
    }
  }
}
