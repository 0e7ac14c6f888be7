#if canImport(Glibc)
  import Glibc
#endif

/// A value behind a POSIX mutex, for state that threads other than the audio thread share
/// (never take it on the audio thread). Used instead of `Synchronization.Mutex`, whose futex
/// ThreadSanitizer cannot see: under `--sanitize=thread` every access it guards was reported
/// as a race (measured: two threads adding under `Mutex.withLock` reported "Swift access race";
/// a pthread mutex is understood).
///
/// Thread: any but the audio thread.
public final class Locked<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private var value: Value

  public init(_ value: Value) {
    self.value = value
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
  }

  /// Runs `body` with the value, holding the lock.
  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }

  /// Runs `body` with the value when the lock is free now; nil (without waiting) when it is not.
  public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
    guard pthread_mutex_trylock(mutex) == 0 else { return nil }
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
