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
