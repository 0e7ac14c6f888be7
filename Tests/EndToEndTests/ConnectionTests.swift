import CJack
import Foundation
import Testing

extension EndToEnd {
  @Suite("Ports and connections", .serialized)
  struct ConnectionTests {
    @Test("--no-connect registers the ports and connects nothing")
    func noConnect() throws {
      let rig = try LiveRig(period: 64, clients: [.init(name: "lmprobe")]) { _ in ["-i", "2", "--no-connect"]
      }
      defer { rig.stop() }
      let probe = rig.client("lmprobe")
      for port in ["lmclient:in_1", "lmclient:in_2", "lmclient:out_1", "lmclient:out_2"] {
        #expect(probe.portExists(port), "\(port) missing")
        #expect(probe.connections(of: port).isEmpty, "\(port) is connected")
      }
      // PipeWire delivers port metadata to other clients asynchronously: allow it a moment.
      for (port, name) in [
        ("lmclient:in_2", "LiveMic input 2"), ("lmclient:out_1", "LiveMic output 1 (left)"),
      ] {
        let seen = probe.prettyNameOnServer(of: port, expected: name, server: rig.server.name)
        #expect(seen == name, "\(port) is named \(seen ?? "nothing")")
      }
    }

    @Test("by default the first physical ports are connected")
    func defaultConnections() throws {
      let rig = try LiveRig(period: 64, clients: [.init(name: "lmprobe")])
      defer { rig.stop() }
      let (probe, livemic) = (rig.client("lmprobe"), rig.livemic)
      #expect(probe.connections(of: "lmclient:in_1") == ["system:capture_1"])
      #expect(probe.connections(of: "lmclient:out_1") == ["system:playback_1"])
      #expect(probe.connections(of: "lmclient:out_2") == ["system:playback_2"])
      #expect(livemic.log.contains("48000 Hz, 64 frames per period"))
      rig.stop()
      #expect(livemic.log.contains("stopped after"))
    }

    @Test("a port that does not exist yet is reported in one line and audio goes on")
    func missingPortIsReported() throws {
      let rig = try LiveRig(period: 64) { _ in ["--connect-out", "nobody:here"] }
      defer { rig.stop() }
      let livemic = rig.livemic
      #expect(
        livemic.log.contains("'nobody:here' does not exist yet: LiveMic connects to it when it appears"),
        "\(livemic.log)")
      #expect(livemic.process.isRunning)
    }

    /// A client that drops a port and registers it again at once (a restarted plugin host, a
    /// NetJACK2 link coming back): LiveMic's connection is in place afterwards, and a user's
    /// disconnect still stays undone. So is one whose client dropped the connection a moment
    /// before the port (read in between). (Here jackd2 shows the connection on the new port at
    /// once; the case where it is really lost, a driver's ports, is
    /// `NetJackTests.linkDropAndReturn(quick: true)`.)
    @Test(
      "a port that vanishes and comes back, at once or after dropping its connection, is connected again; a user's disconnect is kept"
    )
    func portRecreatedIsReconnected() throws {
      // The flaky client is a rig client with no ports of its own: its port `out` is registered
      // on its handle, by libjack directly (so it can be unregistered and registered again), in
      // the arguments closure, which runs once the client is on the server, before LiveMic starts.
      var registered: OpaquePointer?
      let register = { (flaky: OpaquePointer) -> OpaquePointer? in
        jack_port_register(flaky, "out", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
      }
      let rig = try LiveRig(period: 64, clients: [.init(name: "lmflaky")]) { clients in
        registered = register(clients[0].handle)
        return ["-p", "flat", "--connect-in", "lmflaky:out"]
      }
      defer { rig.stop() }
      let (flaky, livemic, name) = (rig.client("lmflaky").handle, rig.livemic, LiveRig.clientName)
      var port = try #require(registered)
      let connected = { () -> Bool in
        guard let p = jack_port_by_name(flaky, "lmflaky:out") else { return false }
        return jack_port_connected_to(p, "\(name):in_1") != 0
      }
      #expect(waitUntil(seconds: 5, connected))
      // The port unregistered and registered again `microseconds` later.
      let recreate = { (microseconds: UInt32) throws in
        jack_port_unregister(flaky, port)
        usleep(microseconds)
        port = try #require(register(flaky))
      }
      for round in 0..<3 {
        // Gone and back within a few milliseconds: before LiveMic's next look at the graph.
        try recreate(20_000)
        #expect(waitUntil(seconds: 5, connected), "round \(round): \(livemic.log)")
      }
      // A client (a NetJACK2 slave's driver) that drops its connections a moment before its
      // ports: LiveMic looks at the graph in between (400 ms > its 100 ms settling), sees the
      // connection gone and its port still there, and must not take that for a user's undoing
      // once the port vanishes.
      jack_disconnect(flaky, "lmflaky:out", "\(name):in_1")
      usleep(400_000)
      try recreate(300_000)
      #expect(waitUntil(seconds: 5, connected), "disconnected, then the port recreated: \(livemic.log)")
      // A user's disconnect is still a user's: it stays undone, also when the port is recreated
      // later (after the 2 s in which a vanishing port says its client dropped the connection).
      jack_disconnect(flaky, "lmflaky:out", "\(name):in_1")
      usleep(1_000_000)
      #expect(!connected(), "\(livemic.log)")
      usleep(1_500_000)
      try recreate(20_000)
      usleep(1_000_000)
      #expect(!connected(), "\(livemic.log)")
    }

    @Test("no server: a clear error and a non-zero exit")
    func noServer() throws {
      let result = try runLiveMic(["-s", "lmnosuchserver\(getpid())"])
      #expect(result.status == 1)
      #expect(result.stderr.contains("cannot open a JACK client on server 'lmnosuchserver"))
    }
  }
}
