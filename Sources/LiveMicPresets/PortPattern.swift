#if canImport(Glibc)
  import Glibc
#endif

/// A port-name pattern as `jack_get_ports` takes it (routes: `--route-out`, a preset's
/// `"route"`, `ctl route default`): a POSIX extended regular expression. JACK compiles it
/// itself and, when it cannot, matches nothing without a word, so a route that can never be
/// taken looked like a working one; patterns are checked here first.
///
/// Thread: any.
public enum PortPattern {
  /// Why `pattern` is not a POSIX extended regular expression (the C library's words, e.g.
  /// "Unmatched ( or \\("), or nil when it is one.
  public static func problem(_ pattern: String) -> String? {
    var regex = regex_t()
    let code = regcomp(&regex, pattern, REG_EXTENDED | REG_NOSUB)
    guard code != 0 else {
      regfree(&regex)
      return nil
    }
    var words = [CChar](repeating: 0, count: 256)
    _ = regerror(code, &regex, &words, words.count)
    return String(decoding: words.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Why `pattern` is refused, in words a message can carry after a key or an option, or nil
  /// when it is a pattern.
  public static func reason(_ pattern: String) -> String? {
    problem(pattern).map {
      "'\(pattern)' is not a port-name pattern (a POSIX extended regular expression: \($0))"
    }
  }

  /// The one-sentence complaint about `pattern` given as `what` (an option), or nil when it is
  /// a pattern.
  public static func complaint(_ pattern: String, as what: String) -> String? {
    reason(pattern).map { "\(what) \($0)" }
  }
}
