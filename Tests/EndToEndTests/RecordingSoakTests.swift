import Foundation
import Synchronization
import Testing

extension EndToEnd {
  /// Recordings under stress: many control clients at once, and 50 server restarts.
  @Suite("Recordings under stress", .serialized)
  struct RecordingSoakTests {
    /// A seeded generator (each client its own, so a run can be repeated).
    struct Seeded {
      var state: UInt64
      mutating func next(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(n))
      }
    }

    @Test(
      "six control clients start and stop recordings in every format at random, then SIGINT: every file opens"
    )
    func concurrentRecordControl() throws {
      let folder = Paths.temporaryFolder("chaosrec")
      defer { try? FileManager.default.removeItem(at: folder) }
      let events = folder.appendingPathComponent("events.jsonl")
      let takes = folder.appendingPathComponent("takes").path + "/"
      let rig = try RecordingTests.rig(
        ["--events", events.path], captureSeconds: 2, folder: folder, guarded: true)
      defer { rig.stop() }
      let (livemic, socketPath) = (rig.livemic, rig.socketPath)
      let formats = ["wav", "flac", "ogg", "mp3"]
      let requests = Atomic<Int>(0)
      let refused = Atomic<Int>(0)
      let group = DispatchGroup()
      for client in 0..<6 {
        group.enter()
        Thread {
          defer { group.leave() }
          guard let socket = try? SocketLines(socketPath) else { return }
          var random = Seeded(state: UInt64(client + 1) * 7919)
          let end = Date().addingTimeInterval(8)
          while Date() < end {
            let request: String
            switch random.next(10) {
            case 0..<4:
              request =
                #"{"cmd":"record","action":"start","format":"\#(formats[random.next(4)])","path":"\#(takes)"}"#
            case 4..<7: request = #"{"cmd":"record","action":"stop"}"#
            case 7:
              request =
                #"{"cmd":"preset","action":"load","name":"\#(["flat", "voice", "podcast"][random.next(3)])"}"#
            case 8:
              request = #"{"cmd":"set","key":"output.volume","value":\#([0.2, 0.5, 1.0][random.next(3)])}"#
            default:
              request =
                random.next(2) == 0
                ? #"{"cmd":"mute","mode":"\#(["ramp", "input", "suspend"][random.next(3)])"}"#
                : #"{"cmd":"unmute"}"#
            }
            socket.send(request)
            let answer = socket.lines(for: 12, count: 1).first.map(jsonObject) ?? [:]
            requests.add(1, ordering: .relaxed)
            if answer["ok"] as? Bool != true { refused.add(1, ordering: .relaxed) }
          }
        }.start()
      }
      group.wait()
      #expect(livemic.interrupt() == 0, "\(livemic.log)")
      let takesFolder = URL(fileURLWithPath: takes)
      let files = RecordingFaultTests.expectEveryFileOpens(
        takesFolder, reported: RecordingFaultTests.loggedFrames(livemic.log))
      let names = EventStreamTests.events(events).compactMap { $0["event"] as? String }
      let empty = names.filter { $0 == "recording-empty" }.count
      let started = names.filter { $0 == "record-started" }.count
      print(
        "[measured] six clients, 8 s: \(requests.load(ordering: .relaxed)) requests "
          + "(\(refused.load(ordering: .relaxed)) refused), \(started) recordings, \(files) files, "
          + "\(empty) removed empty")
      #expect(started > 20 && started == files + empty, "\(started) started, \(files) files, \(empty) empty")
      rig.expectNothingCounted()
    }

    /// The threads of a process.
    static func threadCount(_ pid: Int32) -> Int {
      guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
      let line = text.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
      return Int(line.split(separator: "\t").last ?? "") ?? 0
    }

    /// The Theil–Sen slope of `values` over their index: the median of the slopes between every
    /// pair, so a few outliers (a transient allocation caught by one reading) move it little.
    static func slope(_ values: [Int]) -> Double {
      var slopes: [Double] = []
      for i in values.indices {
        for j in values.indices where j > i {
          slopes.append(Double(values[j] - values[i]) / Double(j - i))
        }
      }
      slopes.sort()
      guard !slopes.isEmpty else { return 0 }
      let middle = slopes.count / 2
      return slopes.count % 2 == 1 ? slopes[middle] : (slopes[middle - 1] + slopes[middle]) / 2
    }

    /// Counts the places where a counter recording steps back (a frame written twice) and the
    /// frames it holds; zeros (no generator connected) are gaps.
    static func stepsBack(_ samples: [Float]) -> (back: Int, counted: Int) {
      var last: Int?
      var (back, counted) = (0, 0)
      for sample in samples {
        guard let frame = TestSignal.counterFrame(sample) else { continue }
        counted += 1
        if let last, frame <= last - 2 { back += 1 }
        last = frame
      }
      return (back, counted)
    }

    @Test(
      "50 kill -9 server restarts with recordings, the stream and the loudness meter running: every file opens, no frame twice, memory flat"
    )
    func restartSoak() throws {
      let folder = Paths.temporaryFolder("soakrec")
      defer { try? FileManager.default.removeItem(at: folder) }
      let (sessions, whole) = (
        folder.appendingPathComponent("sessions"), folder.appendingPathComponent("whole")
      )
      // No clients of the rig's: each round makes its generator on the (restarted) server.
      let rig = try LiveRig(guarded: true, folder: folder) { _ in
        [
          "-p", "flat", "--connect-in", "lmgen:out", "--on-route-loss", "continue", "--autorecord",
          sessions.path, "--record-format", "flac", "--stream-out",
          folder.appendingPathComponent("stream.f32").path,
        ]
      }
      defer { rig.stop() }
      let livemic = rig.livemic
      // The input tap (the dry input: no ramp) in WAV and FLAC, for the whole run.
      for format in ["wav", "flac"] {
        let answer = try rig.json(["record", "start", "--tap", "input", "--format", format, whole.path + "/"])
        #expect(answer["ok"] as? Bool == true, "\(answer)")
      }
      var (rss, heap, threads): ([Int], [Int], [Int]) = ([], [], [])
      var start: UInt32 = 0
      let restarts = 50
      for round in 0...restarts {
        let generator = try rig.join(LiveRig.Client(name: "lmgen", signal: .counter(start: start)))
        if round > 0 {
          #expect(rig.waitForReconnections(round), "round \(round): \(livemic.log)")
        }
        #expect(
          waitUntil(seconds: 5) { generator.connections(of: "\(LiveRig.clientName):in_1") == ["lmgen:out"] },
          "round \(round): \(livemic.log)")
        // 0.4 s of this generator's audio into the recordings, by LiveMic's own cycles.
        rig.waitForAudio(seconds: 0.4)
        #expect(livemic.process.isRunning, "LiveMic exited in round \(round): \(livemic.log)")
        let memory = try rig.json(["status"])["memory"] as? [String: Any]
        (heap, rss) = (
          heap + [memory?["heap_in_use_bytes"] as? Int ?? 0],
          rss + [memory?["resident_kilobytes"] as? Int ?? 0]
        )
        threads.append(Self.threadCount(livemic.process.processIdentifier))
        // The next generator counts on from past this one's frames.
        start &+= UInt32(generator.cycles.load(ordering: .relaxed) * JackServer.takePeriod + 48000)
        generator.close()
        if round < restarts { try rig.server.killAndRestart(period: JackServer.takePeriod) }
      }
      #expect(start < 1 << 23, "the counter wrapped: \(start) frames")
      let status = try rig.json(["status"])
      #expect((status["loudness"] as? [String: Any]) != nil, "the loudness meter is not running: \(status)")
      #expect(livemic.interrupt() == 0, "\(livemic.log)")
      let reported = RecordingFaultTests.loggedFrames(livemic.log)
      let sessionFiles = RecordingFaultTests.expectEveryFileOpens(sessions, reported: reported)
      #expect(
        sessionFiles + livemic.log.components(separatedBy: "before any audio reached it").count - 1
          == restarts + 1,
        "\(sessionFiles) session files")
      #expect(RecordingFaultTests.expectEveryFileOpens(whole, reported: reported) == 2)
      for path in RecordingTests.files(whole) {
        let check = FileCheck(path, keepLeft: true)
        let (back, counted) = Self.stepsBack(check.left)
        #expect(back == 0, "'\(path)': \(back) steps back in \(counted) counted frames")
        #expect(counted > restarts * 9600, "'\(path)': only \(counted) counted frames")
      }
      // A leak of LiveMic's grows the heap in use by about the same amount every restart. The
      // resident size is printed, not held: it moves in pages and allocator steps (a thread
      // arena touching 1–2 MB more once, in CI at restart 30 of 50) that no slope tells from a
      // leak in 40 restarts.
      let heapSlope = Self.slope(Array(heap.suffix(40)))
      let residentSlope = Self.slope(Array(rss.suffix(40)))
      print(
        "[measured] restart soak (\(TestBackend.isPipeWire ? "PipeWire" : "jackd")): heap in use "
          + "\(heap.first ?? 0) → \(heap.last ?? 0) bytes, Theil–Sen slope over the last 40 "
          + String(format: "%.0f", heapSlope)
          + " bytes per restart; RSS \(rss.first ?? 0) → \(rss.last ?? 0) kB ("
          + String(format: "%.1f", residentSlope) + " kB per restart); threads \(threads.first ?? 0) → "
          + "\(threads.last ?? 0); heap of the last 40 (bytes): \(heap.suffix(40))"
      )
      #expect(threads.last == threads.dropFirst(2).first, "LiveMic's threads: \(threads)")
      #expect(heap.allSatisfy { $0 > 0 }, "status gave no heap figure: \(heap)")
      if TestBackend.isPipeWire {
        // Not LiveMic's: PipeWire 0.3.65's libjack allocates its ports in chunks of eight (each
        // `struct port` carries a 32 kB silent buffer, 262 kB a chunk) at the first
        // jack_port_register and never frees the chunk in jack_client_close, so every client a
        // server restart replaces leaves 262 kB behind (heaptrack: "4.24M leaked over 16 calls
        // from jack_port_register in pipewire-0.3/jack/libjack.so.0", 16 clients; jackd's libjack
        // frees them). Held to a bound a leak of LiveMic's own on top would break; docs/recording.md.
        #expect(
          heapSlope < 400_000, "the heap grows \(heapSlope) bytes per restart over the last 40: \(heap)")
      } else {
        #expect(heapSlope < 1024, "the heap grows \(heapSlope) bytes per restart over the last 40: \(heap)")
      }
      rig.expectNothingCounted()
    }
  }
}
