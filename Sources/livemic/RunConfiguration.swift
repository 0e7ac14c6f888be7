import Foundation
import LiveMicPresets

/// The run's configuration file: `--config FILE`, else `$XDG_CONFIG_HOME/livemic/livemic.json`
/// (`~/.config/livemic/livemic.json`) when it exists; `--no-config` reads none.
///
/// A JSON object whose keys are `livemic run`'s long options without their dashes, e.g.
/// `{"preset": "hearing", "web": "0.0.0.0:8080", "route-out": ["USB.*", "system:"],
/// "start-muted": true}`. A string or number is the option's value, `true` gives a flag and
/// `false` leaves it out, an array repeats the option (the port lists `connect-in`,
/// `connect-out`, `connect-music` and `connect-monitor` join theirs with commas). The file's
/// options come before the command line's, so the command line wins (and adds to repeatable
/// options such as `set`, `plugin` and `route-out`).
///
/// Thread: any (a pure function of the file and the words).
enum RunConfiguration {
  /// Options that take a value, by key.
  static let valueKeys: Set<String> = [
    "name", "server", "preset", "set", "inputs", "connect-in", "connect-out", "connect-music",
    "connect-monitor", "loudness-target", "plugin", "autoload", "osc", "osc-host", "web", "midi-cc",
    "events", "route-out", "route-in", "on-route-loss", "record", "autorecord", "record-format",
    "stream-out", "stream-format",
  ]
  /// Options that are flags, by key.
  static let flagKeys: Set<String> = [
    "no-connect", "music", "monitor", "watch", "no-plugins", "start-muted",
  ]
  /// Options whose value is a comma-separated port list.
  static let portListKeys: Set<String> = ["connect-in", "connect-out", "connect-music", "connect-monitor"]

  /// The default file.
  static var defaultPath: String {
    let config =
      ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
      ?? (NSHomeDirectory() + "/.config")
    return config + "/livemic/livemic.json"
  }

  /// The run's words with the configuration's options first and `--config`/`--no-config` taken
  /// out. A command line asking only for help or the version reads no file.
  static func expand(_ words: [String], defaultPath: String = defaultPath) throws(UsageError) -> [String] {
    var rest: [String] = []
    var path: String?
    var skip = false
    var index = 0
    while index < words.count {
      let word = words[index]
      if word == "--" {
        rest += words[index...]
        break
      }
      if word == "--config" {
        guard index + 1 < words.count else { throw UsageError(message: "--config needs a value") }
        path = words[index + 1]
        index += 2
        continue
      }
      if word.hasPrefix("--config=") {
        path = String(word.dropFirst("--config=".count))
        index += 1
        continue
      }
      if word == "--no-config" {
        skip = true
      } else {
        rest.append(word)
      }
      index += 1
    }
    if skip && path != nil { throw UsageError(message: "--config and --no-config cannot go together") }
    if skip || rest.contains(where: { ["-h", "--help", "--version"].contains($0) }) { return rest }
    let file = path ?? defaultPath
    if path == nil && !FileManager.default.fileExists(atPath: file) { return rest }
    return try Self.words(fromFile: file) + rest
  }

  /// The options a configuration file gives, as command-line words.
  static func words(fromFile file: String) throws(UsageError) -> [String] {
    guard let data = FileManager.default.contents(atPath: file) else {
      throw UsageError(message: "the configuration '\(file)' cannot be read")
    }
    let document: JSONValue
    do { document = try JSONValue.parse(data) } catch {
      throw UsageError(message: "the configuration '\(file)' is not valid JSON (\(error.reason))")
    }
    guard let object = document.object else {
      throw UsageError(message: "the configuration '\(file)' must be a JSON object of run options")
    }
    return try words(from: object, file: file)
  }

  /// The options of a configuration object, in its order, as command-line words.
  static func words(from object: JSONObject, file: String) throws(UsageError) -> [String] {
    var words: [String] = []
    for (key, value) in object {
      let place = "the configuration '\(file)', key '\(key)'"
      if flagKeys.contains(key) {
        guard let on = value.bool else { throw UsageError(message: "\(place): expected true or false") }
        if on { words.append("--" + key) }
        continue
      }
      guard valueKeys.contains(key) else {
        throw UsageError(message: "\(place) is not an option of 'livemic run' (see 'livemic run --help')")
      }
      let items = value.array ?? [value]
      var texts: [String] = []
      for item in items {
        guard let text = scalar(item) else {
          throw UsageError(message: "\(place): expected a string, a number or an array of them")
        }
        texts.append(text)
      }
      if portListKeys.contains(key) {
        words += ["--" + key, texts.joined(separator: ",")]
      } else {
        for text in texts { words += ["--" + key, text] }
      }
    }
    return words
  }

  /// A string as it is, a number as the command line would spell it.
  private static func scalar(_ value: JSONValue) -> String? {
    if let text = value.string { return text }
    if let n = value.integer { return String(n) }
    if let x = value.number { return String(x) }
    return nil
  }
}
