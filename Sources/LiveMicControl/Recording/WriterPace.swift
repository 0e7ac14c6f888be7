#if canImport(Glibc)
  import Glibc
#endif

/// How long the tap consumers' threads (recordings, the stream, the loudness meter) rest once
/// they have emptied their rings: 20 ms, or 1 ms while JACK freewheels. Freewheeling, the server
/// runs cycles as fast as the graph allows, with no deadline to pace them (150 to 250 times real
/// time on the test machine), so one 20 ms rest brought seconds of audio and the rings (about
/// 5.5 s) overflowed; the audio thread never waits for a writer, so the writers keep up instead
/// (with larger rings meanwhile: `LiveSession.freewheelRingSeconds`). A change of pace wakes
/// every resting thread at once.
///
/// Thread: `setFreewheeling` on the supervisor; `rest` on the consumers' threads; never the
/// audio thread.
final class WriterPace: @unchecked Sendable {
  /// The rest in real time, and while JACK freewheels.
  static let normalMicroseconds = 20_000
  static let freewheelMicroseconds = 1_000

  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
  /// Under `mutex`: the pace, and how often it changed (a resting thread wakes on a change).
  private var fast = false
  private var changes: UInt64 = 0

  init() {
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    condition.initialize(to: pthread_cond_t())
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deinitialize(count: 1)
    mutex.deinitialize(count: 1)
    condition.deallocate()
    mutex.deallocate()
  }

  /// True while the writers rest 1 ms (JACK freewheels).
  var isFreewheeling: Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return fast
  }

  /// Sets the pace for JACK freewheeling (`on`) or running in real time, waking the resting
  /// threads when it changes.
  func setFreewheeling(_ on: Bool) {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    guard fast != on else { return }
    fast = on
    changes &+= 1
    pthread_cond_broadcast(condition)
  }

  /// Rests for the current pace's interval, or less when the pace changes meanwhile.
  func rest() {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    let seen = changes
    let nanoseconds = (fast ? Self.freewheelMicroseconds : Self.normalMicroseconds) * 1000
    var deadline = timespec()
    clock_gettime(CLOCK_MONOTONIC, &deadline)
    deadline.tv_nsec += nanoseconds
    if deadline.tv_nsec >= 1_000_000_000 {
      deadline.tv_sec += 1
      deadline.tv_nsec -= 1_000_000_000
    }
    while changes == seen {
      if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return }
    }
  }
}
