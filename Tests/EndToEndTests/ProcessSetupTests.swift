import Foundation
import Testing

extension EndToEnd {
  /// Issue 14, "process setup hardening": memory locked before activation (or one sentence
  /// saying which limit to raise), flush-to-zero and denormals-are-zero on the process thread,
  /// and freewheeling reported as an event.
  @Suite("Process setup", .serialized)
  struct ProcessSetupTests {
    @Test(
      "memory is locked (or the limit named), the process thread flushes denormals, the guard counts nothing")
    func memoryAndDenormals() throws {
      let folder = Paths.temporaryFolder("setup")
      defer { try? FileManager.default.removeItem(at: folder) }
      let env = ["XDG_RUNTIME_DIR": folder.path]
      let counters = folder.appendingPathComponent("rtguard.txt")
      let server = try JackServer(period: 64)
      let livemic = try LiveMicProcess(
        ["-s", server.name, "-n", "lmsetup", "--no-connect"], guardOutput: counters, environment: env)
      #expect(livemic.waitForLog("latency capture-to-playback"), "\(livemic.log)")
      if geteuid() == 0 {
        #expect(livemic.log.contains("memory locked (mlockall)"), "\(livemic.log)")
      } else {
        #expect(livemic.log.contains("memory not locked"), "\(livemic.log)")
      }
      var status: [String: Any] = [:]
      #expect(
        waitUntil(seconds: 5) {
          let answer = try? runLiveMic(["ctl", "-n", "lmsetup", "--json", "status"], environment: env)
          status = jsonObject(answer?.stdout ?? "")
          return (status["cycles"] as? Int ?? 0) > 0
        })
      #expect(status["denormals_flushed"] as? Bool == true, "\(status)")
      #expect(livemic.interrupt() == 0)
      RealtimeGuard.expectNothingCounted(counters)
      server.stop()
    }
  }
}
