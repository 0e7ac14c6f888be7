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
      let rig = try LiveRig(period: 64, guarded: true) { _ in ["--no-connect"] }
      defer { rig.stop() }
      let livemic = rig.livemic
      if geteuid() == 0 {
        #expect(livemic.log.contains("memory locked (mlockall)"), "\(livemic.log)")
      } else {
        #expect(livemic.log.contains("memory not locked"), "\(livemic.log)")
      }
      var status: [String: Any] = [:]
      #expect(
        waitUntil(seconds: 5) {
          status = rig.status() ?? [:]
          return (status["cycles"] as? Int ?? 0) > 0
        })
      #expect(status["denormals_flushed"] as? Bool == true, "\(status)")
      rig.stop()
      rig.expectNothingCounted()
    }
  }
}
