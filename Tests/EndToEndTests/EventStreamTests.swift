import Foundation
import Testing

extension EndToEnd {
  @Suite("Event stream and xrun reporting", .serialized)
  struct EventStreamTests {
    /// The JSON objects of an event file, one per line (each must parse).
    static func events(_ file: URL) -> [[String: Any]] {
      let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
      return text.split(separator: "\n").map { line in
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8))
        #expect(object != nil, "not JSON: \(line)")
        return object as? [String: Any] ?? [:]
      }
    }

    @Test(
      "a client that sleeps in its callback causes xruns; the stream reports them with counts",
      .notOnPipeWire(
        "PipeWire 0.3.65's dummy driver does not report a late client to JACK clients as an xrun"
          + " (no xrun callback), so there is nothing to count"))
    func xrunsAreReported() throws {
      let folder = Paths.temporaryFolder("events")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("events.jsonl")
      let rig = try LiveRig(
        period: 64, clients: [LiveRig.Client(name: "lmsleeper", captureChannels: 1)], folder: folder
      ) { _ in ["--no-connect", "--events", file.path] }
      defer { rig.stop() }
      let (sleeper, livemic) = (rig.client("lmsleeper"), rig.livemic)
      sleeper.sleepMicroseconds.store(4000, ordering: .relaxed)
      usleep(1_000_000)
      sleeper.sleepMicroseconds.store(0, ordering: .relaxed)
      #expect(waitUntil(seconds: 5) { Self.events(file).contains { $0["event"] as? String == "xrun" } })
      #expect(livemic.interrupt() == 0)
      let events = Self.events(file)
      let names = events.compactMap { $0["event"] as? String }
      #expect(
        names.first == "started" && names.contains("preset-loaded") && names.last == "stopped", "\(names)")
      let xrun = events.first { $0["event"] as? String == "xrun" } ?? [:]
      #expect((xrun["total"] as? Int ?? 0) >= 1 && (xrun["new"] as? Int ?? 0) >= 1, "\(xrun)")
      #expect(xrun["last_minute"] != nil && xrun["delay_us"] != nil && xrun["dsp_load_percent"] != nil)
      #expect(livemic.log.contains("xruns:"))
    }

    @Test("server-lost and reconnected events, with the time the reconnection took")
    func reconnectEvents() throws {
      let folder = Paths.temporaryFolder("events")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("events.jsonl")
      let rig = try LiveRig(period: 64, folder: folder) { _ in ["--no-connect", "--events", file.path] }
      defer { rig.stop() }
      let livemic = rig.livemic
      try rig.server.killAndRestart(period: 128)
      #expect(livemic.waitForLog("reconnected to"), "\(livemic.log)")
      #expect(livemic.interrupt() == 0)
      let events = Self.events(file)
      let names = events.compactMap { $0["event"] as? String }
      #expect(names.contains("server-lost") && names.contains("reconnected"), "\(names)")
      let reconnected = events.first { $0["event"] as? String == "reconnected" } ?? [:]
      #expect(
        (reconnected["ms"] as? Double ?? -1) >= 0 && reconnected["buffer_frames"] as? Int == 128,
        "\(reconnected)")
    }
  }
}
