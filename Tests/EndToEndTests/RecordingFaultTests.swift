import Foundation
import Testing

extension EndToEnd {
  /// Every file LiveMic leaves opens in a player: recordings no audio reached, recordings cut off
  /// by a full disk, a vanished folder, SIGINT, SIGTERM, and many control clients at once
  /// (docs/recording.md, "Every file opens").
  @Suite("Every recording file opens", .serialized)
  struct RecordingFaultTests {
    static let formats = ["wav", "flac", "ogg", "mp3"]

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
      let events = folder.appendingPathComponent("events.jsonl")
      let takes = folder.appendingPathComponent("takes").path + "/"
      let rig = try LiveRig(folder: folder) { _ in ["--no-connect", "--events", events.path] }
      defer { rig.stop() }
      let livemic = rig.livemic
      // Suspended, the client runs no cycles: no audio reaches a recording (deterministically).
      #expect(try rig.json(["mute", "--mode", "suspend"])["ok"] as? Bool == true)
      #expect(
        waitUntil(seconds: 5) {
          (try? rig.json(["status"]))?["state"] as? String == "suspended"
        })
      for format in Self.formats {
        let started = try rig.json(["record", "start", "--format", format, takes])
        #expect(started["ok"] as? Bool == true, "\(started)")
      }
      let stopped = try rig.json(["record", "stop"])["stopped"] as? [[String: Any]] ?? []
      #expect(stopped.count == 4, "\(stopped)")
      #expect(
        stopped.allSatisfy { $0["removed"] as? Bool == true && $0["frames"] as? Int == 0 }, "\(stopped)")
      #expect(
        RecordingTests.files(URL(fileURLWithPath: takes)).isEmpty,
        "\(RecordingTests.files(URL(fileURLWithPath: takes)))")
      #expect(
        livemic.log.components(separatedBy: "before any audio reached it").count - 1 == 4, "\(livemic.log)")
      // A recording that got audio is kept, and opens with every frame it reports.
      #expect(try rig.json(["unmute"])["ok"] as? Bool == true)
      _ = try rig.json(["record", "start", "--format", "flac", takes])
      #expect(
        waitUntil(seconds: 5) {
          let status = (try? rig.json(["status"])) ?? [:]
          return ((status["recordings"] as? [[String: Any]])?.first?["frames"] as? Int ?? 0) > 4800
        })
      let kept = try rig.json(["record", "stop"])["stopped"] as? [[String: Any]] ?? []
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
      let disk = folder.appendingPathComponent("disk")
      try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
      guard (try runTool("mount", ["-t", "tmpfs", "-o", "size=3m", "livemic-test", disk.path])) != nil else {
        Issue.record("cannot mount a 3 MiB tmpfs at \(disk.path)")
        return
      }
      defer { _ = try? runTool("umount", ["-l", disk.path]) }
      let events = folder.appendingPathComponent("events.jsonl")
      let rig = try RecordingTests.rig(
        ["--events", events.path], captureSeconds: 30, folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      for format in Self.formats {
        let started = try rig.json(["record", "start", "--format", format, disk.path + "/"])
        #expect(started["ok"] as? Bool == true, "\(started)")
      }
      // WAV (384 kB/s) and FLAC of noise (about 290 kB/s) fill 3 MiB within seconds.
      #expect(
        waitUntil(seconds: 20) {
          livemic.log.components(separatedBy: "stopped: the disk is full").count - 1 >= 2
        },
        "\(livemic.log)")
      // The audio goes on, bit for bit.
      let witness = rig.witness(capture, generators: [(0, .frameCode)])
      let take = try retaking("the output with the disk full") {
        try witness.take(frames: 24000, channels: [0, 1])
      }
      #expect(take[0] == take[1], "the output is not the input with the disk full")
      let stopped = try rig.json(["record", "stop"])["stopped"] as? [[String: Any]] ?? []
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
      let events = folder.appendingPathComponent("events.jsonl")
      let rig = try RecordingTests.rig(
        ["--events", events.path], captureSeconds: 20, folder: folder)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      let gone = folder.appendingPathComponent("gone")
      let kept = folder.appendingPathComponent("kept")
      _ = try rig.json(
        ["record", "start", "--format", "flac", gone.appendingPathComponent("deep").path + "/"])
      _ = try rig.json(["record", "start", "--format", "wav", kept.path + "/"])
      // Both recordings under way, and the start ramp over before the take, by LiveMic's cycles.
      rig.waitForAudio()
      try FileManager.default.removeItem(at: gone)
      #expect(livemic.waitForLog("vanished", seconds: 5), "\(livemic.log)")
      let status = try rig.json(["status"])
      #expect((status["recordings"] as? [[String: Any]])?.count == 1, "\(status)")
      let witness = rig.witness(capture, generators: [(0, .frameCode)])
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
      let takes = folder.appendingPathComponent("takes")
      let rig = try RecordingTests.rig(
        ["--record", takes.path, "--record-format", "flac"], captureSeconds: 10, folder: folder)
      defer { rig.stop() }
      let livemic = rig.livemic
      for format in ["wav", "ogg", "mp3"] {
        _ = try rig.json(["record", "start", "--format", format, takes.path + "/"])
      }
      #expect(
        waitUntil(seconds: 10) {
          let recordings = (try? rig.json(["status"]))?["recordings"] as? [[String: Any]] ?? []
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
