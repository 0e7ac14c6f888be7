import Foundation
import Testing

/// A client connection to LiveMic's control socket that reads lines with a deadline.
final class SocketLines {
  let fd: Int32
  private var buffered: [UInt8] = []

  init(_ path: String) throws {
    fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in Array(path.utf8).enumerated() { raw[i] = b }
    }
    let ok = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard ok == 0 else { throw HarnessError("cannot connect to \(path)") }
    var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  func send(_ line: String) { send(bytes: Array((line + "\n").utf8)) }

  func send(bytes: [UInt8]) {
    _ = bytes.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
  }

  /// Every line that arrives within `seconds` (or the first `count` of them, once they came).
  func lines(for seconds: Double, count: Int = .max) -> [String] {
    var result: [String] = []
    let deadline = Date().addingTimeInterval(seconds)
    var chunk = [UInt8](repeating: 0, count: 65536)
    while Date() < deadline && result.count < count {
      let n = read(fd, &chunk, chunk.count)
      if n > 0 { buffered += chunk[0..<n] }
      while let end = buffered.firstIndex(of: 10) {
        result.append(String(decoding: buffered[..<end], as: UTF8.self))
        buffered.removeSubrange(...end)
      }
      if n == 0 { break }
    }
    return result
  }
}

func jsonObject(_ line: String) -> [String: Any] {
  (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
}

extension EndToEnd {
  @Suite("Meter and event streams, livemic monitor", .serialized)
  struct StreamTests {
    /// voice's feedback suppressor notches a steady sine (it is indistinguishable from a howl)
    /// and its denoiser takes it for noise: these tests measure the compressor on a sine.
    static let keepSine = ["-c", "feedback.bypass=on", "-c", "denoise.bypass=on"]

    /// Starts `livemic ARGUMENTS` beside the rig's LiveMic (its control socket under `runtime`),
    /// standard input from `input` when given, standard output and error into pipes.
    static func start(_ arguments: [String], runtime: URL, input: Pipe? = nil) throws -> (
      process: Process, out: Pipe, err: Pipe
    ) {
      let process = Process()
      process.executableURL = Paths.livemic
      process.arguments = arguments
      var environment = Paths.childEnvironment()
      environment["XDG_RUNTIME_DIR"] = runtime.path
      process.environment = environment
      let (out, err) = (Pipe(), Pipe())
      (process.standardOutput, process.standardError) = (out, err)
      if let input { process.standardInput = input }
      try process.run()
      return (process, out, err)
    }

    @Test(
      "A subscription streams meters at about 20 Hz (with gain reduction) and events; OSC subscribers get meters"
    )
    func subscriptions() throws {
      let oscPort = 19000 + Int(getpid() % 2000)
      let rig = try LiveAudioTests.rig(
        ["-p", "voice", "--osc", "\(oscPort)"] + Self.keepSine,
        signal: .sine(frequencyHz: 1000, amplitude: 0.5))
      defer { rig.stop() }
      let (folder, capture, livemic) = (rig.folder, rig.client("lmcap"), rig.livemic)
      let path = folder.appendingPathComponent("livemic/lmclient.sock").path
      let follower = try SocketLines(path)
      follower.send(#"{"cmd":"subscribe","topics":["meters","events"]}"#)
      usleep(1_200_000)  // past the start ramp
      let early = follower.lines(for: 0.1)  // the answer and the lines queued meanwhile
      #expect(early.first.map { jsonObject($0)["ok"] as? Bool == true } == true, "\(early.prefix(2))")
      let lines = follower.lines(for: 2)
      let meters = lines.map(jsonObject).filter { $0["stream"] as? String == "meters" }
      // About 20 a second over 2 s (a loaded 2-core machine may lose a few wake-ups).
      #expect(meters.count >= 30 && meters.count <= 44, "meter lines in 2 s: \(meters.count)")
      let last = meters.last ?? [:]
      // The input meter reads the test sine exactly: peak 0.5 (-6.02 dBFS), RMS 3 dB lower, in
      // every one of ten lines. Ten lines whose stretch the server spoilt (a gap, an xrun, the
      // generator's own sine off, a cycle LiveMic missed) are read again. A line reports the
      // 50 ms before it, so the first two after the mark are left out.
      let witness = LiveAudioTests.witness(rig)
      let ten = try retaking("ten input meter lines") {
        _ = follower.lines(for: 0.05)  // what was queued before the mark
        let mark = witness.mark()
        let read = follower.lines(for: 0.75).map(jsonObject).filter { $0["stream"] as? String == "meters" }
        return Take(
          Array(read.dropFirst(2).prefix(10)), spoilt: witness.evidence(since: mark, to: capture.frameCount))
      }
      func worst(_ key: String, _ expected: Double) -> Double {
        ten.map { abs((($0["input"] as? [[String: Double]])?.first?[key] ?? 0) - expected) }.max() ?? 99
      }
      #expect(ten.count == 10, "\(ten.count) meter lines in 0.65 s")
      #expect(worst("peak_dbfs", -6.0) < 0.15, "\(ten)")
      #expect(worst("rms_dbfs", -9.0) < 0.15, "\(ten)")
      let reductions = last["gain_reduction_db"] as? [String: Double] ?? [:]
      #expect((reductions["compressor"] ?? 0) > 3, "the compressor works on a -6 dBFS sine: \(reductions)")
      // An event reaches the subscriber.
      let commands = try SocketLines(path)
      commands.send(#"{"cmd":"mute"}"#)
      let after = follower.lines(for: 1).map(jsonObject)
      #expect(
        after.contains { $0["stream"] as? String == "event" && $0["event"] as? String == "muted" },
        "\(after.filter { $0["stream"] as? String == "event" })")
      commands.send(#"{"cmd":"unmute"}"#)
      // Unknown topics are refused; the connection goes on.
      commands.send(#"{"cmd":"subscribe","topics":["nope"]}"#)
      commands.send(#"{"cmd":"status"}"#)
      let answers = commands.lines(for: 1).map(jsonObject).filter { $0["stream"] == nil }
      #expect(answers.count == 4, "mute, unmute, subscribe, status: \(answers)")
      #expect((answers.dropFirst(2).first?["error"] as? String)?.contains("unknown topic 'nope'") == true)
      #expect(answers.last?["preset"] as? String == "voice")
      // OSC: /livemic/subscribe meters, then /livemic/meters datagrams.
      let replies = OSC.send([OSC.message("/livemic/subscribe", ["meters"])], port: oscPort, wait: 1)
      let decoded = replies.compactMap(OSC.decode)
      let oscMeters = decoded.filter { $0.path == "/livemic/meters" }
      #expect(decoded.first?.path == "/livemic/reply", "\(decoded.prefix(2))")
      #expect(oscMeters.count >= 10, "OSC meter messages in 1 s: \(oscMeters.count)")
      if let m = oscMeters.last {
        #expect(m.args.count == 9)
        #expect(abs(Double(m.args[0] as? Float ?? 0) - -6.0) < 0.15, "\(m.args)")
      }
      #expect(livemic.process.isRunning)
    }

    @Test(
      "livemic ctl events prints each event, ctl meters a meter line about 20 times a second; both end when LiveMic stops (status 1); OSC event subscribers get /livemic/event"
    )
    func followingCommands() throws {
      let oscPort = 19000 + Int(getpid() % 2000)
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--osc", "\(oscPort)"], signal: .sine(frequencyHz: 1000, amplitude: 0.5))
      defer { rig.stop() }
      let folder = rig.folder
      let events = try Self.start(["ctl", "-n", "lmclient", "events"], runtime: folder)
      let meters = try Self.start(["ctl", "-n", "lmclient", "meters"], runtime: folder)
      usleep(1_500_000)  // subscribed, and past the start ramp
      // OSC: subscribe to events, then mute and unmute from the same socket.
      let replies = OSC.send(
        [
          OSC.message("/livemic/subscribe", ["events"]), OSC.message("/livemic/mute", []),
          OSC.message("/livemic/unmute", []),
        ], port: oscPort, wait: 1
      ).compactMap(OSC.decode)
      let oscEvents = replies.filter { $0.path == "/livemic/event" }
      #expect(replies.filter { $0.path == "/livemic/reply" }.count == 3, "\(replies.map(\.path))")
      let names = oscEvents.compactMap { $0.args.first as? String }
      #expect(names.contains("muted") && names.contains("unmuted"), "\(names)")
      if let muted = oscEvents.first(where: { $0.args.first as? String == "muted" }) {
        let line = jsonObject(muted.args.count == 2 ? muted.args[1] as? String ?? "" : "")
        #expect(line["event"] as? String == "muted" && line["mode"] as? String == "ramp", "\(muted.args)")
      }
      rig.stop()  // LiveMic stops, status 0 expected: both followers end
      for (name, (process, out, err)) in [("events", events), ("meters", meters)]
        as [(String, (Process, Pipe, Pipe))]
      {
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let error = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "ctl \(name): \(error)")
        #expect(error == "livemic: error: LiveMic 'lmclient' stopped\n", "ctl \(name): \(error)")
        let lines = text.split(separator: "\n").map(String.init)
        if name == "events" {
          // Time, event, then its fields in key order: the mute, the unmute and the stop.
          for expected in ["muted mode=ramp reason=control", "unmuted reason=control", "stopped cycles="] {
            #expect(lines.contains { $0.dropFirst(13).hasPrefix(expected) }, "\(expected) in \(lines)")
          }
        } else {
          // About 20 a second over the 2.5 s it followed; the input reads the sine's −6.0 dBFS peak.
          #expect(lines.count >= 30, "\(lines.count) meter lines")
          let formed = lines.allSatisfy { $0.hasPrefix("in ") && $0.contains("(peak/RMS dBFS)") }
          #expect(formed, "\(lines.prefix(3))")
          let sine = lines.contains { $0.hasPrefix("in   -6.0/  -9.0   -6.0/  -9.0   out ") }
          #expect(sine, "\(lines.suffix(3))")
        }
      }
    }

    @Test("livemic monitor draws levels and gain reduction; its keys mute and change the volume")
    func monitor() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "voice"] + Self.keepSine, signal: .sine(frequencyHz: 1000, amplitude: 0.5))
      defer { rig.stop() }
      let folder = rig.folder
      let keys = Pipe()
      let (process, out, _) = try Self.start(["monitor", "-n", "lmclient"], runtime: folder, input: keys)
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", "lmclient", "--json"] + words, environment: rig.environment)
      }
      usleep(1_500_000)
      try keys.fileHandleForWriting.write(contentsOf: Data("m".utf8))
      usleep(500_000)
      #expect(try ctl(["status"]).stdout.contains("\"muted\":true"))
      try keys.fileHandleForWriting.write(contentsOf: Data("u-".utf8))
      usleep(500_000)
      let status = try ctl(["status"]).stdout
      #expect(status.contains("\"muted\":false"), "\(status)")
      let volume = jsonObject(try ctl(["get", "output.volume"]).stdout)["values"] as? [String: Double] ?? [:]
      // The voice preset's 0.3, 1 dB down.
      #expect(abs((volume["output.volume"] ?? 0) - 0.3 / pow(10, 1.0 / 20)) < 1e-4, "\(volume)")
      try keys.fileHandleForWriting.write(contentsOf: Data("q".utf8))
      let screen = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      #expect(process.terminationStatus == 0)
      #expect(screen.contains("in  L [") && screen.contains("out R ["), "\(screen.suffix(1500))")
      #expect(screen.contains("dB compressor") && screen.contains("preset 'voice'"), "\(screen.suffix(1500))")
      #expect(screen.contains("MUTED (ramp)") && screen.contains("muted mode=ramp"), "\(screen.suffix(1500))")
    }
  }
}
