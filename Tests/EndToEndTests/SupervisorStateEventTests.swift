import Foundation
import Testing

extension EndToEnd {
  /// Issue 14, "one explicit supervisor state": every change of state is one log line and one
  /// `state-changed` event (from, to, reason), through mutes, a server restart and the stop.
  @Suite("Supervisor state changes", .serialized)
  struct SupervisorStateEventTests {
    @Test("mute modes, an unmute, a server restart while suspended and the stop are state-changed events")
    func stateChanges() throws {
      let folder = Paths.temporaryFolder("state")
      defer { try? FileManager.default.removeItem(at: folder) }
      let file = folder.appendingPathComponent("events.jsonl")
      let rig = try LiveRig(period: 64, folder: folder) { _ in ["--no-connect", "--events", file.path] }
      defer { rig.stop() }
      let livemic = rig.livemic
      func ctl(_ arguments: String...) throws {
        let answer = try rig.ctl(arguments)
        #expect(answer.status == 0, "ctl \(arguments): \(answer.stderr)")
      }
      try ctl("mute", "--mode", "input")
      try ctl("mute", "--mode", "input")  // no change: no event
      try ctl("mute", "--mode", "suspend")
      try ctl("unmute")
      try ctl("mute", "--mode", "suspend")
      // Suspended, the client watches its server by itself (on PipeWire: a connection of its
      // own to the daemon). Several of its probes go by with the server there: no false loss.
      Thread.sleep(forTimeInterval: 3)
      #expect(!livemic.log.contains("went away"), "a loss while the server stayed: \(livemic.log)")
      try rig.server.killAndRestart()
      #expect(livemic.waitForLog("reconnected to"), "\(livemic.log)")
      let object = try rig.json(["status"])
      #expect(object["state"] as? String == "suspended", "still suspended after the restart: \(object)")
      #expect(livemic.interrupt() == 0)
      let changes = EventStreamTests.events(file).filter { $0["event"] as? String == "state-changed" }
      let seen = changes.map { "\($0["from"] ?? "?")→\($0["to"] ?? "?") \($0["mute_mode"] ?? "?")" }
      #expect(
        seen == [
          "running→muted input", "muted→suspended suspend", "suspended→running none",
          "running→suspended suspend",
          "suspended→reconnecting suspend", "reconnecting→suspended suspend", "suspended→stopping suspend",
        ], "\(seen)")
      let reasons = changes.compactMap { $0["reason"] as? String }
      #expect(reasons.count == changes.count && reasons.allSatisfy { !$0.isEmpty }, "\(changes)")
      #expect(reasons.first == "control" && reasons[4] == "the server went away", "\(reasons)")
      #expect(livemic.log.contains("state: running → muted, mode input (control)"), "\(livemic.log)")
      #expect(livemic.log.contains("state: reconnecting → suspended, mode suspend (the server is back)"))
    }
  }
}
