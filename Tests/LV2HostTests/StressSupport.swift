import Foundation
import Synchronization
import Testing

/// The multi-thread stress tests, one at a time (the machine has two cores; each test keeps
/// both busy).
@Suite(.serialized) struct LV2HostStressTests {}

/// Helpers for the two-thread stress tests.
enum Stress {
  /// Whether the test binary runs under ThreadSanitizer or AddressSanitizer (their runtimes
  /// export these symbols). Sanitized runs use lower counts: TSan slows every memory access
  /// and every intercepted `memcpy` by an order of magnitude.
  static let sanitized = dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil

  /// `plain` in an unsanitized build, `reduced` under a sanitizer; the environment variable
  /// `LV2HOST_STRESS_COUNT` overrides both.
  static func count(_ plain: Int, sanitized reduced: Int) -> Int {
    if let text = ProcessInfo.processInfo.environment["LV2HOST_STRESS_COUNT"], let n = Int(text) { return n }
    return sanitized ? reduced : plain
  }

  /// Runs the bodies on their own threads and returns when all have finished (an atomic
  /// counter, which ThreadSanitizer sees as the synchronization, rather than a semaphore).
  static func run(_ bodies: [@Sendable () -> Void]) {
    let done = Counter()
    for body in bodies {
      let thread = Thread {
        body()
        done.value.add(1, ordering: .releasing)
      }
      thread.start()
    }
    while done.value.load(ordering: .acquiring) < bodies.count { usleep(1000) }
  }

  /// A monotonic clock in seconds.
  static func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
  }
}

final class Counter: Sendable {
  let value = Atomic<Int>(0)
}

/// Memory handed to another thread whose lifetime and exclusive use the test guarantees.
struct UnsafeSendable<T>: @unchecked Sendable {
  let value: T
  init(_ value: T) { self.value = value }
}
