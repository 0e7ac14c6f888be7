#if canImport(Glibc)
  import Glibc
#endif

/// Locks the process's memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`) so a page fault cannot
/// stall the audio thread, when the memory-lock limit allows it.
///
/// Thread: setup only (the supervisor, before the first activation).
public enum MemoryLock {
  /// What `lockAll` did.
  public enum Outcome: Equatable, Sendable {
    case locked
    /// Not locked: with a finite limit, `MCL_FUTURE` would make every allocation past it fail,
    /// so LiveMic does not try. The limit in KiB.
    case limited(kibibytes: UInt64)
    /// `mlockall` refused (errno).
    case refused(errno: Int32)
  }

  nonisolated(unsafe) private static var done: Outcome?

  /// Locks memory once per process; later calls return the first outcome. Root (which has
  /// CAP_IPC_LOCK) or an unlimited `RLIMIT_MEMLOCK` may lock; any other limit is left alone.
  @discardableResult
  public static func lockAll() -> Outcome {
    if let done { return done }
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit)
    let outcome: Outcome
    if geteuid() != 0 && limit.rlim_cur != rlim_t.max {
      outcome = .limited(kibibytes: UInt64(limit.rlim_cur) / 1024)
    } else if mlockall(MCL_CURRENT | MCL_FUTURE) == 0 {
      outcome = .locked
    } else {
      outcome = .refused(errno: errno)
    }
    done = outcome
    return outcome
  }

  /// One sentence for the log.
  public static func describe(_ outcome: Outcome) -> String {
    switch outcome {
    case .locked: return "memory locked (mlockall): page faults cannot stall the audio thread"
    case .limited(let kib):
      return "memory not locked: the memlock limit is \(kib) KiB; to lock it, raise it to unlimited "
        + "(e.g. '@audio - memlock unlimited' in /etc/security/limits.d/audio.conf, then log in again)"
    case .refused(let e):
      return "memory not locked: mlockall refused (\(String(cString: strerror(e)))); running without it"
    }
  }
}
