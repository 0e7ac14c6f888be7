import Foundation
import Testing

extension EndToEnd {
  /// LiveMic locks its memory (`mlockall` with `MCL_FUTURE`), so every thread stack it maps is
  /// resident at once. With the default 8 MiB stacks, control connections served at the same
  /// time (each has a thread) grew the resident size by 8 MiB apiece, and glibc keeps freed
  /// stacks for reuse: the 10-restart test once saw a lasting 8.4 MB step when two `ctl`
  /// calls overlapped. Here the test holds the overlap itself: 6 connections open at once.
  @Suite("Thread stacks under mlockall", .serialized)
  struct ThreadStackTests {
    @Test(
      "six control connections at once add at most 16 MB of resident memory (8 MiB stacks: 55 MB), and none once closed"
    )
    func concurrentConnections() throws {
      let rig = try LiveRig(period: 64) { _ in ["--no-connect"] }
      defer { rig.stop() }
      let livemic = rig.livemic
      #expect(livemic.log.contains("memory locked"), "\(livemic.log)")
      let pid = livemic.process.processIdentifier
      let socket = rig.socketPath
      // Every connection answered once: its serving thread exists.
      func round() throws -> Int {
        let connections = try (0..<6).map { _ in try SocketLines(socket) }
        for c in connections {
          c.send(#"{"cmd":"status"}"#)
          #expect(c.lines(for: 2, count: 1).count == 1)
        }
        return ReconnectTests.residentKilobytes(pid)
      }
      let before = ReconnectTests.residentKilobytes(pid)
      let threads = rig.threadCount ?? 0
      let during = try round()
      // The threads end with their connections.
      #expect(
        waitUntil(seconds: 5) { (rig.threadCount ?? 0) <= threads },
        "\(rig.threadCount ?? 0) threads, \(threads) before the connections")
      let again = try round()
      print("[measured] resident memory: \(before) kB, with 6 connections \(during) kB, again \(again) kB")
      #expect(during - before < 16_000, "6 connections added \(during - before) kB")
      #expect(again - during < 2_000, "the same 6 again added \(again - during) kB")
    }
  }
}
