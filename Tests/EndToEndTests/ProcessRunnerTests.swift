import Foundation
import Synchronization
import Testing

extension EndToEnd {
  /// The test support's process runner, which every command-line test stands on.
  @Suite("Process runner")
  struct ProcessRunnerTests {
    /// A child that writes more than a pipe holds (64 KiB) to standard error before it writes to
    /// standard output must not deadlock the runner: it has to read both pipes at once.
    @Test("a child writing 1 MiB to stderr and then stdout finishes, with both streams whole")
    func largeStandardError() throws {
      let finished = DispatchSemaphore(value: 0)
      let result = Mutex<(Int32, String, String)?>(nil)
      Thread.detachNewThread {
        let run = try? runToEnd(
          URL(fileURLWithPath: "/bin/sh"),
          ["-c", "head -c 1048576 /dev/zero | tr '\\0' e >&2; head -c 1048576 /dev/zero | tr '\\0' o"],
          environment: ProcessInfo.processInfo.environment)
        result.withLock { $0 = run }
        finished.signal()
      }
      #expect(
        finished.wait(timeout: .now() + 20) == .success,
        "the runner is stuck: it reads one pipe to its end first")
      let (status, stdout, stderr) = try #require(result.withLock { $0 })
      #expect(status == 0)
      #expect(stdout.utf8.count == 1 << 20 && stdout.allSatisfy { $0 == "o" })
      #expect(stderr.utf8.count == 1 << 20 && stderr.allSatisfy { $0 == "e" })
    }
  }
}
