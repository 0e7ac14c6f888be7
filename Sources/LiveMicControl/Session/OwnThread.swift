import Foundation

extension Thread {
  /// The stack of LiveMic's own threads (the supervisor's helpers, the doors, the writers):
  /// LiveMic locks its memory (`mlockall` with `MCL_FUTURE`), so every stack is resident as soon
  /// as it is mapped, and glibc keeps a finished thread's stack for reuse. With the default
  /// 8 MiB, six control connections served at once added 55 MB that stayed
  /// (`ThreadStackTests`). None of these threads recurses deeply; 1 MiB leaves room for the
  /// sanitizers' larger frames (the TSan and ASan runs).
  static let ownStackBytes = 1 << 20

  /// A started thread of LiveMic's own running `body`, named `name`, with `ownStackBytes` of
  /// stack. Not real-time.
  @discardableResult
  static func startOwn(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
    // The system thread's name (`top -H`, `ps -L`, a debugger): Linux takes at most 15 bytes and
    // refuses a longer one, and the process is already `livemic`.
    let short = name.hasPrefix("livemic-") ? String(name.dropFirst("livemic-".count)) : name
    let systemName = String(decoding: short.utf8.prefix(15), as: UTF8.self)
    let thread = Thread {
      // Set on the thread itself: only then does Foundation name the system thread too.
      Thread.current.name = systemName
      body()
    }
    thread.name = name
    thread.stackSize = ownStackBytes
    thread.start()
    return thread
  }
}
