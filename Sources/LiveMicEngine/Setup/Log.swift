import CJack

#if canImport(Glibc)
  import Glibc
#endif

/// LiveMic's log: one line per message on standard error, prefixed with `livemic:`.
///
/// Thread: any thread except the audio thread (it writes to a file descriptor).
public enum Log {
  /// Writes one line.
  public static func info(_ message: String) {
    let line = "livemic: \(message)\n"
    line.utf8CString.withUnsafeBufferPointer { buffer in
      _ = write(2, buffer.baseAddress, buffer.count - 1)
    }
  }

  /// Writes one line prefixed with `error:`.
  public static func error(_ message: String) { info("error: \(message)") }
}

/// Routes libjack's own messages into LiveMic's log, and drops them while `quiet` is set (the
/// supervisor sets it while it polls for a restarted server, when every failed attempt would
/// print four lines).
public enum JackMessages {
  nonisolated(unsafe) static var quiet = false

  /// Installs the handlers. Call once, before opening a client.
  public static func install() {
    jack_set_error_function { message in
      guard !JackMessages.quiet, let message else { return }
      Log.info("jack: " + String(cString: message))
    }
    jack_set_info_function { _ in }
  }

  /// Silences libjack's messages (true) or lets them through (false).
  public static func setQuiet(_ value: Bool) { quiet = value }
}
