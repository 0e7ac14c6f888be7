import Foundation
import Testing

/// A small NSM server for the tests: a UDP socket on loopback that receives the client's
/// messages and sends it `open` and `save`, in the protocol's OSC encoding.
final class NsmTestServer {
  let fd: Int32
  let port: Int
  private var client = sockaddr_storage()
  private var clientLength = socklen_t(0)

  init() throws {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    self.fd = fd
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
        guard bind(fd, p, length) == 0 else { return -1 }
        return getsockname(fd, p, &length)
      }
    }
    port = Int(UInt16(bigEndian: address.sin_port))
    guard bound == 0 else { throw HarnessError("cannot bind the NSM test server") }
    var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  var url: String { "osc.udp://127.0.0.1:\(port)/" }

  /// The next message within `seconds` (remembering its sender as the client).
  func receive(seconds: Double = 10) -> (path: String, args: [Any])? {
    let deadline = Date().addingTimeInterval(seconds)
    var buffer = [UInt8](repeating: 0, count: 65536)
    while Date() < deadline {
      var from = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let n = withUnsafeMutablePointer(to: &from) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(fd, &buffer, buffer.count, 0, $0, &length)
        }
      }
      if n > 0, let message = OSC.decode(Array(buffer[0..<n])) {
        client = from
        clientLength = length
        return message
      }
    }
    return nil
  }

  func send(_ path: String, _ args: [Any]) {
    let bytes = OSC.message(path, args)
    _ = withUnsafePointer(to: &client) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(fd, bytes, bytes.count, 0, $0, clientLength)
      }
    }
  }
}

/// One NSM test's parts: a private server at 256 frames, a session folder (the runtime folder
/// too), the test session manager, and the client's id and state folder in the session.
/// Not a LiveRig: LiveMic starts under the session manager, which names its client (the client
/// id, not `lmclient`) only once the test has answered its announce, after LiveRig's init.
final class NsmRig {
  let server: JackServer
  let session: URL
  let nsm: NsmTestServer
  let clientId: String
  /// The environment LiveMic runs in under the session manager.
  var env: [String: String] { ["NSM_URL": nsm.url, "XDG_RUNTIME_DIR": session.path] }
  /// Where the session manager tells the client to keep its state.
  var statePath: String { session.appendingPathComponent("Session/\(clientId)").path }

  init(clientId: String) throws {
    server = try JackServer(period: 256)
    session = Paths.temporaryFolder("nsm")
    do {
      nsm = try NsmTestServer()
    } catch {
      server.stop()
      try? FileManager.default.removeItem(at: session)
      throw error
    }
    self.clientId = clientId
  }

  /// Stops the server and removes the session folder.
  func close() {
    server.stop()
    try? FileManager.default.removeItem(at: session)
  }
}

extension EndToEnd {
  @Suite("NSM session manager", .serialized)
  struct NsmTests {
    /// Starts `livemic ARGS` under the test session manager and answers its announce and open.
    static func open(
      _ nsm: NsmTestServer, _ arguments: [String], _ env: [String: String], _ statePath: String,
      _ clientId: String
    ) throws -> LiveMicProcess {
      let livemic = try LiveMicProcess(arguments, environment: env)
      guard let announce = nsm.receive() else { throw HarnessError("no announce: \(livemic.log)") }
      #expect(announce.path == "/nsm/server/announce")
      #expect(announce.args.count == 6, "\(announce.args)")
      #expect(announce.args.first as? String == "LiveMic" && announce.args[2] as? String == "livemic")
      #expect(
        announce.args[3] as? Int32 == 1 && announce.args[5] as? Int32 == livemic.process.processIdentifier)
      nsm.send("/reply", ["/nsm/server/announce", "welcome", "nsm-test", ":server-control:"])
      nsm.send("/nsm/client/open", [statePath, "LiveMic", clientId])
      let opened = nsm.receive()
      #expect(
        opened?.path == "/reply" && opened?.args.first as? String == "/nsm/client/open",
        "\(String(describing: opened)) \(livemic.log)")
      // Ready as a rig's LiveMic is: it answers `status`, under the client id as its name.
      guard LiveRig.answersStatus(livemic, name: clientId, environment: env) else {
        throw HarnessError("livemic did not start under the session manager: \(livemic.log)")
      }
      #expect(livemic.log.contains("session manager 'nsm-test' accepted LiveMic"), "\(livemic.log)")
      return livemic
    }

    @Test("every port group's connections are saved, also while suspended, and restored at the next open")
    func allPortGroups() throws {
      let rig = try NsmRig(clientId: "LiveMic.nPORTS")
      defer { rig.close() }
      let (server, nsm, env, clientId, statePath) = (
        rig.server, rig.nsm, rig.env, rig.clientId, rig.statePath
      )
      let arguments = ["-s", server.name, "-p", "flat", "--music", "--monitor", "--no-connect"]
      let source = try TestClient(
        name: "lmnsmsrc", server: server.name, signal: .sine(frequencyHz: 500, amplitude: 0.1),
        captureChannels: 0)
      let sink = try TestClient(name: "lmnsmsink", server: server.name, signal: nil, captureChannels: 3)
      let controller = try TestClient(
        name: "lmnsmmidi", server: server.name, signal: nil, captureChannels: 0, midi: true)
      defer {
        source.close()
        sink.close()
        controller.close()
      }
      let wanted = [
        ("in_1", source.portName("out")), ("music_1", source.portName("out")),
        ("out_1", sink.portName("in_1")), ("monitor_2", sink.portName("in_3")),
        ("midi_in", controller.portName("midi_out")),
      ]
      var livemic = try Self.open(nsm, arguments, env, statePath, clientId)
      for (ours, theirs) in wanted {
        let port = "\(clientId):\(ours)"
        try sink.connect(
          ours.hasPrefix("out_") || ours.hasPrefix("monitor_") ? port : theirs,
          ours.hasPrefix("out_") || ours.hasPrefix("monitor_") ? theirs : port)
      }
      // The graph settles: LiveMic's own client sees every connection (the book reads them
      // again when the suspend's fade ends).
      let seen = { () -> [String: [String]] in
        let answer = try? runLiveMic(["ctl", "-n", clientId, "--json", "connections"], environment: env)
        return jsonObject(answer?.stdout ?? "")["connections"] as? [String: [String]] ?? [:]
      }
      #expect(
        waitUntil(seconds: 5) {
          let now = seen()
          return wanted.allSatisfy { ours, theirs in now["\(clientId):\(ours)"]?.contains(theirs) == true }
        }, "LiveMic sees: \(seen())")
      #expect(
        try runLiveMic(["ctl", "-n", clientId, "mute", "--mode", "suspend"], environment: env).status == 0)
      nsm.send("/nsm/client/save", [])
      #expect(nsm.receive()?.args.first as? String == "/nsm/client/save")
      let data = FileManager.default.contents(atPath: statePath + "/connections.json") ?? Data()
      let saved = (try? JSONSerialization.jsonObject(with: data)) as? [String: [String]] ?? [:]
      for (ours, theirs) in wanted {
        #expect(
          saved[ours]?.contains(theirs) == true, "\(ours) → \(theirs) not saved while suspended: \(saved)")
      }
      #expect(livemic.interrupt() == 0)

      livemic = try Self.open(nsm, arguments, env, statePath, clientId)
      #expect(
        waitUntil(seconds: 5) {
          wanted.allSatisfy { ours, theirs in sink.connections(of: "\(clientId):\(ours)").contains(theirs) }
        },
        "restored: \(wanted.map { sink.connections(of: "\(clientId):\($0.0)") }) \(livemic.log)")
      #expect(livemic.interrupt() == 0)
    }

    @Test("announce, open (client id as JACK name), save, and a second start restores the state")
    func handshake() throws {
      let rig = try NsmRig(clientId: "LiveMic.nTEST")
      defer { rig.close() }
      let (server, nsm, env, clientId, statePath) = (
        rig.server, rig.nsm, rig.env, rig.clientId, rig.statePath
      )
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", clientId, "--json"] + words, environment: env)
      }

      func start() throws -> LiveMicProcess {
        try Self.open(nsm, ["-s", server.name, "-p", "voice", "--no-connect"], env, statePath, clientId)
      }

      // First start: a new session. The client id is the JACK client name.
      var livemic = try start()
      let status = try ctl(["status"])
      #expect(status.stdout.contains("\"client\":\"\(clientId)\""), "\(status)")
      #expect(try ctl(["set", "eq.mid_db", "4.5"]).status == 0)
      #expect(try ctl(["set", "output.volume", "0.2"]).status == 0)
      nsm.send("/nsm/client/save", [])
      let saved = nsm.receive()
      #expect(
        saved?.path == "/reply" && saved?.args.first as? String == "/nsm/client/save",
        "\(String(describing: saved))")
      #expect(FileManager.default.fileExists(atPath: statePath + "/livemic.json"))
      #expect(FileManager.default.fileExists(atPath: statePath + "/connections.json"))
      #expect(livemic.interrupt() == 0)

      // Second start: the session opens again and the saved values are back.
      livemic = try start()
      let values = jsonObject(try ctl(["get"]).stdout)["values"] as? [String: Double] ?? [:]
      #expect(abs((values["eq.mid_db"] ?? 0) - 4.5) < 1e-6, "\(values.filter { $0.key.hasPrefix("eq.mid") })")
      #expect(abs((values["output.volume"] ?? 0) - 0.2) < 1e-6)
      #expect(livemic.log.contains("state in '\(statePath)'"), "\(livemic.log)")
      // A save that cannot be written (the session's folder gone, a file in its place) is
      // answered with NSM's /error and one sentence; LiveMic runs on.
      try FileManager.default.removeItem(atPath: statePath)
      #expect(FileManager.default.createFile(atPath: statePath, contents: Data()))
      nsm.send("/nsm/client/save", [])
      let refused = nsm.receive()
      #expect(
        refused?.path == "/error" && refused?.args.first as? String == "/nsm/client/save"
          && refused?.args.dropFirst().first as? Int32 == -1
          && refused?.args.last as? String == "cannot create the folder '\(statePath)'",
        "\(String(describing: refused))")
      #expect(livemic.log.contains("session not saved: cannot create the folder"), "\(livemic.log)")
      #expect(try ctl(["status"]).status == 0)
      #expect(livemic.interrupt() == 0)
    }
  }
}
