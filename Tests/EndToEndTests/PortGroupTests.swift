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
      "lmclient:in_1": ["lmgsrc:out"],
      "lmclient:music_1": ["lmgsrc:out"],  // --connect-music
      "lmclient:music_2": ["lmgsrc:out"],  // a user's
      "lmclient:monitor_1": ["lmgmon:in_1"],  // --connect-monitor
      "lmclient:monitor_2": ["lmgmon:in_2"],  // a user's
      "lmclient:midi_in": ["lmgmidi:midi_out"],  // a user's
      "lmclient:out_1": ["lmgmon:in_3"],
    ]

    /// The clients around LiveMic (they do not survive a server restart: made again each time).
    static let clients: [LiveRig.Client] = [
      .init(name: "lmgsrc", signal: .frameCode), .init(name: "lmgmon", captureChannels: 3),
      .init(name: "lmgmidi", midi: true),
    ]

    static func missing(_ probe: TestClient) -> [String] {
      expected.keys.sorted().filter { probe.connections(of: $0) != expected[$0] }
    }

    @Test("a restart and suspend/unmute restore music, monitor and MIDI connections")
    func restartRestoresEveryGroup() throws {
      let rig = try LiveRig(period: 64, clients: Self.clients) { _ in
        [
          "-p", "flat", "--connect-in", "lmgsrc:out", "--connect-out", "lmgmon:in_3", "--connect-music",
          "lmgsrc:out", "--connect-monitor", "lmgmon:in_1",
        ]
      }
      defer { rig.stop() }
      let livemic = rig.livemic
      var around = rig.clients
      // The clients made again after the restart close before the rig stops its server.
      defer { for client in around { client.close() } }
      let probe = around[1]
      try probe.connect("lmgsrc:out", "lmclient:music_2")
      try probe.connect("lmclient:monitor_2", "lmgmon:in_2")
      try probe.connect("lmgmidi:midi_out", "lmclient:midi_in")
      #expect(waitUntil(seconds: 5) { Self.missing(probe).isEmpty }, "\(Self.missing(probe))")
      // `connections` holds every group.
      let listed = try rig.ctl("--json", "connections").stdout
      let connections = jsonObject(listed)["connections"] as? [String: [String]] ?? [:]
      for port in Self.expected.keys.sorted() {
        #expect(connections[port] == Self.expected[port], "\(port) in \(listed)")
      }
      // LiveMic has read the graph with the user's connections (it settles by LiveMic's own
      // 100 ms timer, which nothing it answers shows), by LiveMic's cycles.
      rig.waitForAudio(seconds: 0.5)

      // suspend drops every connection (JACK does on deactivation); unmute makes them again.
      #expect(try rig.ctl("mute", "--mode", "suspend").status == 0)
      #expect(waitUntil(seconds: 2) { probe.connections(of: "lmclient:midi_in").isEmpty }, "\(livemic.log)")
      #expect(try rig.ctl("unmute").status == 0)
      #expect(
        waitUntil(seconds: 5) { Self.missing(probe).isEmpty },
        "after unmute: \(Self.missing(probe)) \(livemic.log)")

      // A server restart: the clients come back after LiveMic reconnected.
      for client in around { client.close() }
      try rig.server.killAndRestart()
      #expect(rig.waitForReconnections(1), "\(livemic.log)")
      around = try Self.clients.map { try rig.join($0) }
      #expect(
        waitUntil(seconds: 5) { Self.missing(around[1]).isEmpty },
        "after a restart: \(Self.missing(around[1])) \(livemic.log)")
    }
  }
}
