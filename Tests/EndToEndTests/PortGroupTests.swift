import Foundation
import Testing

extension EndToEnd {
  /// Every port group is in the book of connections (issue 14, defect 6): inputs, outputs,
  /// music, monitor and midi_in are restored after a server restart and after suspend/unmute,
  /// and `connections` lists them all.
  @Suite("Every port group is remembered", .serialized)
  struct PortGroupTests {
    /// The connections LiveMic's ports should have: the command line's and a user's.
    static let expected: [String: [String]] = [
      "lmgroups:in_1": ["lmgsrc:out"],
      "lmgroups:music_1": ["lmgsrc:out"],  // --connect-music
      "lmgroups:music_2": ["lmgsrc:out"],  // a user's
      "lmgroups:monitor_1": ["lmgmon:in_1"],  // --connect-monitor
      "lmgroups:monitor_2": ["lmgmon:in_2"],  // a user's
      "lmgroups:midi_in": ["lmgmidi:midi_out"],  // a user's
      "lmgroups:out_1": ["lmgmon:in_3"],
    ]

    /// The clients around LiveMic (they do not survive a server restart: made again each time).
    static func clients(_ server: JackServer) throws -> [TestClient] {
      [
        try TestClient(name: "lmgsrc", server: server.name, signal: .frameCode, captureChannels: 0),
        try TestClient(name: "lmgmon", server: server.name, signal: nil, captureChannels: 3),
        try TestClient(name: "lmgmidi", server: server.name, signal: nil, captureChannels: 0, midi: true),
      ]
    }

    static func missing(_ probe: TestClient) -> [String] {
      expected.keys.sorted().filter { probe.connections(of: $0) != expected[$0] }
    }

    @Test("a restart and suspend/unmute restore music, monitor and MIDI connections")
    func restartRestoresEveryGroup() throws {
      let folder = Paths.temporaryFolder("portgroups")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let server = try JackServer(period: 64)
      var around = try Self.clients(server)
      let livemic = try LiveMicProcess(
        [
          "-s", server.name, "-n", "lmgroups", "-p", "flat", "--connect-in", "lmgsrc:out",
          "--connect-out", "lmgmon:in_3", "--connect-music", "lmgsrc:out",
          "--connect-monitor", "lmgmon:in_1",
        ], environment: env)
      #expect(livemic.waitForLog("latency capture-to-playback"), "\(livemic.log)")
      let probe = around[1]
      try probe.connect("lmgsrc:out", "lmgroups:music_2")
      try probe.connect("lmgroups:monitor_2", "lmgmon:in_2")
      try probe.connect("lmgmidi:midi_out", "lmgroups:midi_in")
      #expect(waitUntil(seconds: 5) { Self.missing(probe).isEmpty }, "\(Self.missing(probe))")
      // `connections` holds every group.
      let listed = try runLiveMic(["ctl", "-n", "lmgroups", "--json", "connections"], environment: env).stdout
      let connections = jsonObject(listed)["connections"] as? [String: [String]] ?? [:]
      for port in Self.expected.keys.sorted() {
        #expect(connections[port] == Self.expected[port], "\(port) in \(listed)")
      }
      usleep(500_000)  // LiveMic has read the graph with the user's connections

      // suspend drops every connection (JACK does on deactivation); unmute makes them again.
      #expect(
        try runLiveMic(["ctl", "-n", "lmgroups", "mute", "--mode", "suspend"], environment: env).status == 0)
      #expect(waitUntil(seconds: 2) { probe.connections(of: "lmgroups:midi_in").isEmpty }, "\(livemic.log)")
      #expect(try runLiveMic(["ctl", "-n", "lmgroups", "unmute"], environment: env).status == 0)
      #expect(
        waitUntil(seconds: 5) { Self.missing(probe).isEmpty },
        "after unmute: \(Self.missing(probe)) \(livemic.log)")

      // A server restart: the clients come back after LiveMic reconnected.
      for client in around { client.close() }
      try server.killAndRestart()
      #expect(livemic.waitForLog("reconnected to '\(server.name)'"), "\(livemic.log)")
      around = try Self.clients(server)
      #expect(
        waitUntil(seconds: 5) { Self.missing(around[1]).isEmpty },
        "after a restart: \(Self.missing(around[1])) \(livemic.log)")
      #expect(livemic.interrupt() == 0)
      for client in around { client.close() }
      server.stop()
    }
  }
}
