import Foundation
import Testing

@testable import DSP

/// `Locked` under contention from fresh threads, as the chain builders use it: the FFTW plan
/// lock (a `Locked<Void>` made lazily by the first feedback suppressor) and a counter. Under
/// `--sanitize=thread` (scripts/test) a report here is a failure: a clean-clone run once
/// reported a "Swift access race" on the plan lock while two chains were prepared at once.
@Suite struct LockedTests {
  @Test("eight threads make and free feedback detectors at once; a counter under the lock loses nothing")
  func contention() {
    let counter = Locked(0)
    let group = DispatchGroup()
    for _ in 0..<8 {
      group.enter()
      Thread.detachNewThread {
        for _ in 0..<40 {
          _ = HowlDetector(sampleRate: 48000)
          counter.withLock { $0 += 1 }
        }
        group.leave()
      }
    }
    group.wait()
    #expect(counter.withLock { $0 } == 320)
  }
}
