#if canImport(Glibc)
  import Glibc
#endif

/// A value behind a POSIX mutex, for state that threads other than the audio thread share
/// (never take it on the audio thread). Used instead of `Synchronization.Mutex`, whose futex
/// ThreadSanitizer cannot see: under `--sanitize=thread` every access it guards was reported
/// as a race (measured: two threads adding under `Mutex.withLock` reported "Swift access race";
/// a pthread mutex is understood). The value lives behind a pointer, not in a stored `var`:
/// Swift's exclusivity instrumentation of a class's stored property was itself reported as a
/// race under ThreadSanitizer for a `Locked<Void>` (the FFTW plan lock) even with every access
/// under the mutex (`LockedTests`); a plain memory access under a pthread mutex is not.
///
/// Thread: any but the audio thread.
public final class Locked<Value>: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)

  public init(_ value: Value) {
    self.value.initialize(to: value)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
    value.deinitialize(count: 1)
    value.deallocate()
  }

  /// Runs `body` with the value, holding the lock.
  public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value.pointee)
  }

  /// Runs `body` with the value when the lock is free now; nil (without waiting) when it is not.
  public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
    guard pthread_mutex_trylock(mutex) == 0 else { return nil }
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value.pointee)
  }
}
