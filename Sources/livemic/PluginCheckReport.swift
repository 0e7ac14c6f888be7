import Foundation
import LiveMicPresets

/// What the real-time guard (Tests/Support/rtguard, preloaded with `--guard`) counted in a
/// child's process callback.
///
/// Thread: any (value type).
struct GuardCounts: Equatable, Sendable {
  var cycles = 0
  var malloc = 0
  var free = 0
  var lock = 0
  var wait = 0
  var io = 0
  var sleep = 0
  /// The first call counted (`none` when nothing was).
  var first = "none"

  /// Nothing a real-time thread must not do.
  var clean: Bool { malloc == 0 && free == 0 && lock == 0 && wait == 0 && io == 0 && sleep == 0 }

  /// Reads rtguard's one line (`cycles=… malloc=… free=… lock=… wait=… io=… sleep=… first=…`);
  /// nil when there is no such line.
  init?(line: String) {
    var fields: [String: String] = [:]
    for word in line.split(whereSeparator: \.isWhitespace) {
      let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
      if parts.count == 2 { fields[parts[0]] = parts[1] }
    }
    guard let cycles = fields["cycles"].flatMap(Int.init) else { return nil }
    self.cycles = cycles
    func count(_ key: String) -> Int { fields[key].flatMap(Int.init) ?? 0 }
    (malloc, free, lock, wait, io, sleep) = (
      count("malloc"), count("free"), count("lock"), count("wait"), count("io"), count("sleep")
    )
    first = fields["first"] ?? "none"
  }

  /// `clean`, or `unsafe: malloc=N free=N lock=N wait=N io=N sleep=N (first: NAME)`.
  var text: String {
    clean
      ? "clean"
      : "unsafe: malloc=\(malloc) free=\(free) lock=\(lock) wait=\(wait) io=\(io) sleep=\(sleep) (first: \(first))"
  }

  var json: JSONValue {
    [
      "cycles": .int(cycles), "malloc": .int(malloc), "free": .int(free), "lock": .int(lock),
      "wait": .int(wait), "io": .int(io), "sleep": .int(sleep), "first": .string(first),
      "clean": .bool(clean),
    ]
  }
}

/// One plugin's result in `livemic plugins check`.
///
/// Thread: any (value type).
struct CheckEntry: Sendable {
  enum Outcome: Equatable, Sendable {
    /// Hosted and rendered noise to a sound (its peak in dBFS).
    case hosted(peakDb: Double)
    /// Hosted, but the output stayed below `PluginCheck.silenceDb`.
    case noSound(peakDb: Double)
    /// Hosted, but blocks of its output were not finite.
    case nonFinite(blocks: Int, of: Int)
    /// LiveMic refuses it (the reason, one sentence).
    case refused(String)
    /// It could not be made or run (one sentence).
    case failed(String)
    case crashed(signal: Int32)
    case timedOut(seconds: Double)

    /// The outcome's name in the JSON and the summary.
    var key: String {
      switch self {
      case .hosted: return "hosted"
      case .noSound: return "no-sound"
      case .nonFinite: return "non-finite"
      case .refused: return "refused"
      case .failed: return "failed"
      case .crashed: return "crashed"
      case .timedOut: return "timed-out"
      }
    }

    var text: String {
      switch self {
      case .hosted(let peak): return "hosted (peak \(PluginCheck.decibels(peak)) dBFS)"
      case .noSound(let peak):
        return "no sound: the output peaked at \(PluginCheck.decibels(peak)) dBFS over "
          + "\(PluginCheck.format(PluginCheckChild.seconds)) s of noise"
      case .nonFinite(let blocks, let total): return "non-finite output in \(blocks) of \(total) blocks"
      case .refused(let reason): return "refused: \(reason)"
      case .failed(let reason): return "failed: \(reason)"
      case .crashed(let signal):
        return "crashed: signal \(signal)" + (strsignal(signal).map { " (\(String(cString: $0)))" } ?? "")
      case .timedOut(let seconds):
        return "timed out: no result within \(PluginCheck.format(seconds)) s, killed"
      }
    }

    /// Whether the plugin ran in the callback (so the guard's counts mean something).
    var ran: Bool {
      switch self {
      case .hosted, .noSound, .nonFinite: return true
      default: return false
      }
    }
  }

  let uri: String
  let name: String
  let outcome: Outcome
  /// The guard's counts, for a plugin that ran under it.
  let counts: GuardCounts?
  let seconds: Double

  /// `URI — OUTCOME[, clean | , unsafe: …]`.
  var line: String {
    "\(uri) — \(outcome.text)" + (outcome.ran ? counts.map { ", \($0.text)" } ?? "" : "")
  }

  var json: JSONValue {
    var object: JSONObject = [
      "uri": .string(uri), "name": .string(name), "outcome": .string(outcome.key), "reason": .null,
      "signal": .null, "peakDb": .null, "guard": .null,
      "seconds": .number((seconds * 100).rounded() / 100),
    ]
    switch outcome {
    case .hosted(let peak), .noSound(let peak): object["peakDb"] = peak.isFinite ? .number(peak) : .null
    case .refused(let reason), .failed(let reason): object["reason"] = .string(reason)
    case .crashed(let signal): object["signal"] = .int(signal)
    case .nonFinite, .timedOut: break
    }
    if outcome.ran, let counts { object["guard"] = counts.json }
    return .object(object)
  }
}

extension PluginCheck {
  /// The last line: how many plugins, how long, and the count of each outcome (and, under the
  /// guard, how many of those that ran were clean or unsafe).
  static func summary(_ entries: [CheckEntry], seconds: Double, guarded: Bool) -> String {
    func count(_ key: String) -> Int { entries.filter { $0.outcome.key == key }.count }
    let ran = entries.filter { $0.outcome.ran }
    let unsafe = ran.filter { !($0.counts?.clean ?? true) }.count
    var text = "\(entries.count) plugins checked in \(Int(seconds.rounded())) s: \(count("hosted")) hosted"
    text += ", \(count("no-sound")) no sound, \(count("non-finite")) non-finite, \(count("refused")) refused"
    text += ", \(count("failed")) failed, \(count("crashed")) crashed, \(count("timed-out")) timed out"
    if guarded {
      let unguarded = ran.filter { $0.counts == nil }.count
      text += "; of the \(ran.count) that ran, \(ran.count - unsafe - unguarded) clean, \(unsafe) unsafe"
      if unguarded > 0 { text += ", \(unguarded) without guard counts" }
    }
    return text
  }

  /// A magnitude in dBFS with one decimal (`-inf` for silence).
  static func decibels(_ db: Double) -> String {
    db.isFinite ? String(format: "%.1f", db) : "-inf"
  }

  /// A number of seconds without needless decimals.
  static func format(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
  }
}
