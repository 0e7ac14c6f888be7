import DSP
import Foundation
import LiveMicPresets

/// Presets that follow the output device (EasyEffects' autoload): an ordered list of rules, each
/// a regular expression over the playback port names the output goes to and the preset to load
/// there, and a fallback for any other target.
///
/// File (`--autoload FILE`, else `$XDG_CONFIG_HOME/livemic/autoload.json` when it exists):
/// `{"autoload": [{"target": "USB.*Headset", "preset": "voice"}, {"target": "hall:", "preset":
/// "hearing"}], "fallback": "voice"}`. Every preset named must load when the file is read.
///
/// Thread: any (value type).
public struct AutoloadRules {
  struct Rule {
    let target: String
    let pattern: NSRegularExpression
    let preset: String
  }

  let path: String
  let rules: [Rule]
  let fallback: String?

  /// The preset for an output going to `targets` (full port names): the first rule matching any
  /// of them, else the fallback; with what decided it (nil: nothing applies).
  func preset(for targets: [String]) -> (preset: String, because: String)? {
    for rule in rules {
      let matched = targets.first { target in
        rule.pattern.firstMatch(in: target, range: NSRange(target.startIndex..., in: target)) != nil
      }
      if let matched { return (rule.preset, "'\(matched)' matches '\(rule.target)'") }
    }
    guard let fallback else { return nil }
    return (fallback, targets.isEmpty ? "no output target: the fallback" : "no rule matches: the fallback")
  }

  /// The default file, `$XDG_CONFIG_HOME/livemic/autoload.json` (`~/.config/...`).
  static var defaultPath: String {
    let config =
      ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
      ?? (NSHomeDirectory() + "/.config")
    return config + "/livemic/autoload.json"
  }

  /// The rules of `--autoload` (`path`), else of the default file when it exists; nil when there
  /// are none.
  static func load(_ path: String?, library: PresetLibrary = PresetLibrary()) throws(AutoloadError)
    -> AutoloadRules?
  {
    let file = path ?? defaultPath
    if path == nil && !FileManager.default.fileExists(atPath: file) { return nil }
    guard let data = FileManager.default.contents(atPath: file) else { throw .unreadable(path: file) }
    return try parse(data, path: file, library: library)
  }

  static func parse(_ data: Data, path: String, library: PresetLibrary) throws(AutoloadError) -> AutoloadRules
  {
    guard let top = (try? JSONValue.parse(data))?.object else {
      throw .invalid(path: path, reason: "it is not a JSON object")
    }
    let unknown = Set(top.keys).subtracting(["autoload", "fallback"])
    if let key = unknown.sorted().first { throw .invalid(path: path, reason: "unknown key '\(key)'") }
    guard let list = top["autoload"]?.array, list.allSatisfy({ $0.object != nil }) else {
      throw .invalid(
        path: path, reason: "\"autoload\" must be a list of {\"target\": REGEX, \"preset\": NAME}")
    }
    var rules: [Rule] = []
    for (i, entry) in list.enumerated() {
      guard let target = entry["target"]?.string, let preset = entry["preset"]?.string,
        entry.object?.count == 2
      else {
        throw .invalid(path: path, reason: "autoload[\(i)] must be {\"target\": REGEX, \"preset\": NAME}")
      }
      guard let pattern = try? NSRegularExpression(pattern: target) else {
        throw .invalid(path: path, reason: "autoload[\(i)].target '\(target)' is not a regular expression")
      }
      rules.append(Rule(target: target, pattern: pattern, preset: preset))
    }
    let fallback = top["fallback"]?.string
    if top["fallback"] != nil && fallback == nil {
      throw .invalid(path: path, reason: "\"fallback\" must be a preset name")
    }
    for name in rules.map(\.preset) + (fallback.map { [$0] } ?? []) {
      do { _ = try library.load(name) } catch {
        throw .invalid(path: path, reason: "preset '\(name)' cannot be loaded (\(error.description))")
      }
    }
    return AutoloadRules(path: path, rules: rules, fallback: fallback)
  }
}

/// Why the autoload rules cannot be used; each message is one sentence.
public enum AutoloadError: CodedError, Equatable {
  case unreadable(path: String)
  case invalid(path: String, reason: String)

  public var description: String {
    switch self {
    case .unreadable(let path): return "the autoload file '\(path)' cannot be read"
    case .invalid(let path, let reason): return "the autoload file '\(path)' cannot be used: \(reason)"
    }
  }

  public var code: String {
    switch self {
    case .unreadable: return "autoload.unreadable"
    case .invalid: return "autoload.invalid"
    }
  }
}
