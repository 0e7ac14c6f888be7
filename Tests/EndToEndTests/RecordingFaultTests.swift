import Foundation
import Testing

extension EndToEnd {
  /// Every file LiveMic leaves opens in a player: recordings no audio reached, recordings cut off
  /// by a full disk, a vanished folder, SIGINT, SIGTERM, and many control clients at once
  /// (docs/recording.md, "Every file opens").
  @Suite("Every recording file opens", .serialized)
  struct RecordingFaultTests {
    static let formats = ["wav", "flac", "ogg", "mp3"]

    /// `livemic ctl -n NAME --json WORDS`: the parsed answer.
    static func ctl(_ name: String, _ words: [String], _ environment: [String: String]) throws -> [String:
      Any]
    {
      jsonObject(try runLiveMic(["ctl", "-n", name, "--json"] + words, environment: environment).stdout)
    }

    /// The frames each recording's stop line in the log reports, by path.
    static func loggedFrames(_ log: String) -> [String: Int] {
      var frames: [String: Int] = [:]
      for line in log.split(separator: "\n") where line.contains(" stopped (") && line.contains(" frames (") {
        guard let colon = line.range(of: "): "), let quote = line.range(of: ", '", options: .backwards)
        else { continue }
        let count = Int(line[colon.upperBound...].prefix { $0.isNumber }) ?? -1
        frames[String(line[quote.upperBound...].dropLast())] = count
      }
      return frames
    }

    /// Every file in `folder` opens, yields the frames its header claims, and (where known)
    /// the frames LiveMic reported writing.
    static func expectEveryFileOpens(
      _ folder: URL, reported: [String: Int] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int {
      let paths = RecordingTests.files(folder)
      for path in paths {
        let check = FileCheck(path)
        #expect(check.opens, "'\(path)' does not open: \(check.error)", sourceLocation: sourceLocation)
        #expect(
          check.headerFrames == check.readFrames,
          "'\(path)': the header claims \(check.headerFrames) frames, \(check.readFrames) read",
          sourceLocation: sourceLocation)
        if let frames = reported[path] {
          #expect(
            check.readFrames == frames,
            "'\(path)': \(check.readFrames) frames read, \(frames) reported written",
            sourceLocation: sourceLocation)
        }
      }
      return paths.count
    }

    @Test("a recording no audio reached is removed at stop, in every format, and the answer says so")
    func emptyRecordingsAreRemoved() throws {
      let folder = Paths.temporaryFolder("empty")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let events = folder.appendingPathComponent("events.jsonl")
      let takes = folder.appendingPathComponent("takes").path + "/"
      let server = try JackServer(period: JackServer.takePeriod)
      defer { server.stop() }
      let livemic = try LiveMicProcess(
        ["-s", server.name, "-n", "lmempty", "--no-connect", "--events", events.path], environment: env)
      #expect(livemic.waitForLog("latency capture-to-playback"), "\(livemic.log)")
      // Suspended, the client runs no cycles: no audio reaches a recording (deterministically).
      #expect(try Self.ctl("lmempty", ["mute", "--mode", "suspend"], env)["ok"] as? Bool == true)
      #expect(
        waitUntil(seconds: 5) {
          (try? Self.ctl("lmempty", ["status"], env))?["state"] as? String == "suspended"
        })
      for format in Self.formats {
        let started = try Self.ctl("lmempty", ["record", "start", "--format", format, takes], env)
        #expect(started["ok"] as? Bool == true, "\(started)")
      }
      let stopped = try Self.ctl("lmempty", ["record", "stop"], env)["stopped"] as? [[String: Any]] ?? []
      #expect(stopped.count == 4, "\(stopped)")
      #expect(
        stopped.allSatisfy { $0["removed"] as? Bool == true && $0["frames"] as? Int == 0 }, "\(stopped)")
      #expect(
        RecordingTests.files(URL(fileURLWithPath: takes)).isEmpty,
        "\(RecordingTests.files(URL(fileURLWithPath: takes)))")
      #expect(
        livemic.log.components(separatedBy: "before any audio reached it").count - 1 == 4, "\(livemic.log)")
      // A recording that got audio is kept, and opens with every frame it reports.
      #expect(try Self.ctl("lmempty", ["unmute"], env)["ok"] as? Bool == true)
      _ = try Self.ctl("lmempty", ["record", "start", "--format", "flac", takes], env)
      #expect(
        waitUntil(seconds: 5) {
          let status = (try? Self.ctl("lmempty", ["status"], env)) ?? [:]
          return ((status["recordings"] as? [[String: Any]])?.first?["frames"] as? Int ?? 0) > 4800
        })
      let kept = try Self.ctl("lmempty", ["record", "stop"], env)["stopped"] as? [[String: Any]] ?? []
      #expect(kept.count == 1 && kept.first?["removed"] as? Bool == false, "\(kept)")
      #expect(livemic.interrupt() == 0)
      let reported = Dictionary(
        uniqueKeysWithValues: kept.map { ($0["path"] as? String ?? "", $0["frames"] as? Int ?? -1) })
      #expect(Self.expectEveryFileOpens(URL(fileURLWithPath: takes), reported: reported) == 1)
      let names = EventStreamTests.events(events).compactMap { $0["event"] as? String }
      #expect(names.filter { $0 == "recording-empty" }.count == 4, "\(names)")
      #expect(names.filter { $0 == "record-stopped" }.count == 1, "\(names)")
    }

    @Test(
      "a full disk: each recording stops in one sentence and an event, its file opens with every frame written; audio goes on",
      .enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func fullDisk() throws {
      let folder = Paths.temporaryFolder("fulldisk")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let disk = folder.appendingPathComponent("disk")
      try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
      guard (try runTool("mount", ["-t", "tmpfs", "-o", "size=3m", "livemic-test", disk.path])) != nil else {
        Issue.record("cannot mount a 3 MiB tmpfs at \(disk.path)")
        return
      }
      defer { _ = try? runTool("umount", ["-l", disk.path]) }
      let events = folder.appendingPathComponent("events.jsonl")
      let (server, generator, capture, livemic) = try RecordingTests.rig(
        ["--events", events.path], captureSeconds: 30, environment: env)
      defer {
        generator.close()
        capture.close()
        server.stop()
      }
      for format in Self.formats {
        let started = try RecordingTests.ctl(["record", "start", "--format", format, disk.path + "/"], env)
        #expect(started["ok"] as? Bool == true, "\(started)")
      }
      // WAV (384 kB/s) and FLAC of noise (about 290 kB/s) fill 3 MiB within seconds.
      #expect(
        waitUntil(seconds: 20) {
          livemic.log.components(separatedBy: "stopped: the disk is full").count - 1 >= 2
        },
        "\(livemic.log)")
      // The audio goes on, bit for bit.
      let witness = Witness.rig(capture, signal: .frameCode, client: "lmrec", environment: env)
      let take = try retaking("the output with the disk full") {
        try witness.take(frames: 24000, channels: [0, 1])
      }
      #expect(take[0] == take[1], "the output is not the input with the disk full")
      let stopped = try RecordingTests.ctl(["record", "stop"], env)["stopped"] as? [[String: Any]] ?? []
      #expect(livemic.interrupt() == 0)
      let all = EventStreamTests.events(events)
      let failed = all.filter { $0["event"] as? String == "record-failed" }
      #expect(failed.count >= 2, "\(failed)")
      #expect(
        failed.allSatisfy {
          ($0["error"] as? String ?? "").hasSuffix("stopped: the disk is full (No space left on device)")
        },
        "\(failed)")
      var reported: [String: Int] = [:]
      for entry in failed + stopped {
        if let path = entry["path"] as? String, let frames = entry["frames"] as? Int {
          reported[path] = frames
        }
      }
      print("[measured] full disk: frames written per file \(reported)")
      #expect(reported.count == 4, "\(reported)")
      #expect(Self.expectEveryFileOpens(disk, reported: reported) == 4)
    }

    @Test(
      "a recording whose folder vanishes stops in one sentence and an event; the others and the audio go on")
    func vanishedFolder() throws {
      let folder = Paths.temporaryFolder("vanish")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let events = folder.appendingPathComponent("events.jsonl")
      let (server, generator, capture, livemic) = try RecordingTests.rig(
        ["--events", events.path], captureSeconds: 20, environment: env)
      defer {
        generator.close()
        capture.close()
        server.stop()
      }
      let gone = folder.appendingPathComponent("gone")
      let kept = folder.appendingPathComponent("kept")
      _ = try RecordingTests.ctl(
        ["record", "start", "--format", "flac", gone.appendingPathComponent("deep").path + "/"], env)
      _ = try RecordingTests.ctl(["record", "start", "--format", "wav", kept.path + "/"], env)
      usleep(500_000)
      try FileManager.default.removeItem(at: gone)
      #expect(livemic.waitForLog("vanished", seconds: 5), "\(livemic.log)")
      let status = try RecordingTests.ctl(["status"], env)
      #expect((status["recordings"] as? [[String: Any]])?.count == 1, "\(status)")
      let witness = Witness.rig(capture, signal: .frameCode, client: "lmrec", environment: env)
      let take = try retaking("the output after the folder vanished") {
        try witness.take(frames: 24000, channels: [0, 1])
      }
      #expect(take[0] == take[1], "the output is not the input after the folder vanished")
      #expect(livemic.interrupt() == 0)
      let failed = EventStreamTests.events(events).filter { $0["event"] as? String == "record-failed" }
      #expect(
        failed.count == 1 && (failed.first?["error"] as? String ?? "").contains("vanished"), "\(failed)")
      #expect(Self.expectEveryFileOpens(kept, reported: Self.loggedFrames(livemic.log)) == 1)
    }

    @Test(
      "SIGINT and SIGTERM: recordings in every format are finalized, open and hold every frame written",
      arguments: [SIGINT, SIGTERM])
    func stoppedBySignal(_ signal: Int32) throws {
      let folder = Paths.temporaryFolder("signal")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let takes = folder.appendingPathComponent("takes")
      let (server, generator, capture, livemic) = try RecordingTests.rig(
        ["--record", takes.path, "--record-format", "flac"], captureSeconds: 10, environment: env)
      defer {
        generator.close()
        capture.close()
        server.stop()
      }
      for format in ["wav", "ogg", "mp3"] {
        _ = try RecordingTests.ctl(["record", "start", "--format", format, takes.path + "/"], env)
      }
      #expect(
        waitUntil(seconds: 10) {
          let recordings = (try? RecordingTests.ctl(["status"], env))?["recordings"] as? [[String: Any]] ?? []
          return recordings.count == 4 && recordings.allSatisfy { $0["frames"] as? Int ?? 0 >= 48000 }
        })
      kill(livemic.process.processIdentifier, signal)
      #expect(waitUntil(seconds: 10) { !livemic.process.isRunning })
      livemic.process.waitUntilExit()
      #expect(livemic.process.terminationStatus == 0, "\(livemic.log)")
      let reported = Self.loggedFrames(livemic.log)
      #expect(reported.count == 4, "\(livemic.log)")
      #expect(Self.expectEveryFileOpens(takes, reported: reported) == 4)
    }
  }
}
