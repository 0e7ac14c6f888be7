import Foundation
import Testing

extension EndToEnd {
  /// `ctl stream start` to a FIFO whose reader quits and comes back, twice: each reader gets
  /// audio, every close and reopening is an event, and the counts add up.
  @Suite("A stream that outlives its readers", .serialized)
  struct StreamRestartTests {
    /// Opens `fifo` for reading (waiting for the writer), reads `bytes`, closes it.
    static func read(_ fifo: String, bytes: Int) -> Data {
      guard let handle = FileHandle(forReadingAtPath: fifo) else { return Data() }
      defer { try? handle.close() }
      var data = Data()
      while data.count < bytes {
        guard let chunk = try? handle.read(upToCount: bytes - data.count), !chunk.isEmpty else { break }
        data.append(chunk)
      }
      return data
    }

    static func count(_ name: String, _ events: URL) -> Int {
      EventStreamTests.events(events).filter { $0["event"] as? String == name }.count
    }

    @Test("a FIFO reader that quits and comes back twice gets audio each time; written + dropped = delivered")
    func readerComesBackTwice() throws {
      let folder = Paths.temporaryFolder("restream")
      defer { try? FileManager.default.removeItem(at: folder) }
      let events = folder.appendingPathComponent("events.jsonl")
      let fifo = folder.appendingPathComponent("live.f32").path
      #expect(mkfifo(fifo, 0o600) == 0)
      let rig = try RecordingTests.rig(["--events", events.path], captureSeconds: 4, folder: folder)
      defer { rig.stop() }
      let livemic = rig.livemic
      let second = 48000 * 8  // one second of interleaved float32 stereo
      let started = try rig.json(["stream", "start", fifo, "--format", "f32"])
      #expect(started["ok"] as? Bool == true, "\(started)")
      let again = try rig.json(["stream", "start", fifo])
      #expect(again["ok"] as? Bool == false, "a second stream must be refused: \(again)")
      var received: [Data] = []
      for round in 0..<2 {
        received.append(Self.read(fifo, bytes: second))
        #expect(
          waitUntil(seconds: 10) { Self.count("stream-closed", events) == round + 1 },
          "no stream-closed after reader \(round + 1): \(livemic.log)")
      }
      // The third reader stays while the stream stops, and reads to its end.
      let tail = ReceivedBytes()
      let reader = Thread { tail.set(FileHandle(forReadingAtPath: fifo)?.readDataToEndOfFile() ?? Data()) }
      reader.start()
      #expect(waitUntil(seconds: 10) { Self.count("stream-opened", events) == 3 }, "\(livemic.log)")
      // Half a second of audio to the third reader, by LiveMic's own cycles.
      rig.waitForAudio(seconds: 0.5)
      let stopped = try rig.json(["stream", "stop"])
      let summary = stopped["stopped"] as? [String: Any] ?? [:]
      #expect(waitUntil(seconds: 5) { tail.data != nil }, "the last reader saw no end of stream")
      let (frames, dropped, delivered) = (
        summary["frames"] as? Int ?? -1, summary["dropped_frames"] as? Int ?? -1,
        summary["delivered_frames"] as? Int ?? -2
      )
      print(
        "[measured] stream with three readers: \(frames) frames written, \(dropped) dropped, \(delivered) delivered"
      )
      #expect(frames + dropped == delivered, "\(summary)")
      #expect(summary["reopened"] as? Int == 2, "\(summary)")
      for (i, data) in (received + [tail.data ?? Data()]).enumerated() {
        let channels = stereoFloats(data)
        #expect(channels[0].count >= 48000 / 2, "reader \(i + 1) got \(channels[0].count) frames")
        #expect(channels[0].contains { $0 != 0 }, "reader \(i + 1) got silence")
      }
      let read = received.reduce(0) { $0 + $1.count } + (tail.data?.count ?? 0)
      #expect(frames * 8 >= read, "more read (\(read) bytes) than written (\(frames) frames)")
      #expect(livemic.interrupt() == 0)
      #expect(Self.count("stream-started", events) == 1 && Self.count("stream-stopped", events) == 1)
    }
  }
}
