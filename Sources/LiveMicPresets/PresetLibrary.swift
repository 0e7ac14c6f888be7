import DSP
import Foundation
import LV2Host

/// Finds presets: `$XDG_CONFIG_HOME/livemic/presets` (default `~/.config/livemic/presets`), then
/// `livemic/presets` in each of `$XDG_DATA_DIRS` (default `/usr/local/share:/usr/share`:
/// distribution and community presets), then `$LIVEMIC_PRESETS_DIR`, then the shipped folder
/// found relative to the binary; a name with a `/` or ending in `.json` is a path.
///
/// Thread: any thread but the audio thread (it reads files).
public struct PresetLibrary: Sendable {
  /// The folders searched, in order.
  public let folders: [String]
  /// Why no preset loaded here may run an LV2 alternative (`--no-plugins`); nil: they may.
  public var pluginsOff: String?

  public init(folders: [String]? = nil) {
    self.folders = folders ?? Self.defaultFolders()
  }

  /// The user folder, the data folders, `$LIVEMIC_PRESETS_DIR` if set, then the shipped
  /// presets; each folder once (the first place it comes).
  public static func defaultFolders(
    environment env: [String: String] = ProcessInfo.processInfo.environment
  ) -> [String] {
    let config =
      env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
      ?? (NSHomeDirectory() + "/.config")
    var folders = [config + "/livemic/presets"]
    let data = env["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
    for dir in data.split(separator: ":") where !dir.isEmpty { folders.append(dir + "/livemic/presets") }
    if let dir = env["LIVEMIC_PRESETS_DIR"], !dir.isEmpty { folders.append(dir) }
    if let installed = installedFolder() { folders.append(installed) }
    var seen = Set<String>()
    return folders.filter { seen.insert(URL(fileURLWithPath: $0).standardizedFileURL.path).inserted }
  }

  /// The `presets/` folder shipped with this binary: next to the package root for a
  /// `.build/<config>/livemic` build, or `<prefix>/share/livemic/presets` for an install.
  static func installedFolder() -> String? {
    let exe = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
    let real =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      .map { URL(fileURLWithPath: $0) } ?? exe
    var dir = real.deletingLastPathComponent()
    for _ in 0..<5 {
      for candidate in ["presets", "share/livemic/presets"] {
        let path = dir.appendingPathComponent(candidate).path
        if FileManager.default.fileExists(atPath: path + "/voice.json") { return path }
      }
      dir = dir.deletingLastPathComponent()
    }
    return nil
  }

  /// Loads a preset by name or path.
  public func load(_ nameOrPath: String) throws(PresetError) -> Preset {
    let path: String
    if nameOrPath.contains("/") || nameOrPath.hasSuffix(".json") {
      path = nameOrPath
    } else if let found = folders.lazy.map({ "\($0)/\(nameOrPath).json" })
      .first(where: { FileManager.default.fileExists(atPath: $0) })
    {
      path = found
    } else {
      throw .notFound(name: nameOrPath, searched: folders)
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      let exists = FileManager.default.fileExists(atPath: path)
      throw .unreadable(path: path, reason: exists ? "permission denied" : "no such file")
    }
    return try Preset.parse(data, path: path, pluginsOff: pluginsOff)
  }

  /// Every preset found, first folder winning on a name clash, sorted by name. Files that do
  /// not parse are returned as errors, not dropped.
  public func all() -> [(name: String, result: Result<Preset, PresetError>)] {
    var seen: Set<String> = []
    var found: [(String, Result<Preset, PresetError>)] = []
    for folder in folders {
      let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
      for file in files.sorted() where file.hasSuffix(".json") {
        let name = String(file.dropLast(5))
        guard seen.insert(name).inserted else { continue }
        found.append((name, Result { () throws(PresetError) in try load("\(folder)/\(file)") }))
      }
    }
    return found.sorted { $0.0 < $1.0 }
  }
}

/// A `-c KEY=VALUE` override.
///
/// Thread: any (value type).
public struct ParameterOverride: Sendable, Equatable {
  public let key: String
  public let value: Float

  /// Parses `KEY=VALUE`; VALUE is a number or on/off/true/false.
  public init(parsing text: String) throws(OverrideError) {
    guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
      throw .malformed(text)
    }
    key = String(text[..<eq]).trimmingCharacters(in: .whitespaces)
    let raw = String(text[text.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
    switch raw.lowercased() {
    case "on", "true", "yes": value = 1
    case "off", "false", "no": value = 0
    default:
      guard let v = Float(raw), v.isFinite else { throw .badValue(key: key, value: raw) }
      value = v
    }
  }

  public init(key: String, value: Float) {
    self.key = key
    self.value = value
  }
}

/// Why an override was refused. Each message is one sentence.
public enum OverrideError: CodedError, Equatable {
  case malformed(String)
  case badValue(key: String, value: String)
  case unknownKey(String)
  case unknownStage(key: String, stage: String, stages: [String])
  case outOfRange(key: String, value: Float, range: ClosedRange<Float>)

  public var description: String {
    switch self {
    case .malformed(let text):
      return "'\(text)' is not KEY=VALUE (for example -c eq.bass_db=3)"
    case .badValue(let key, let value):
      return "'\(value)' for '\(key)' is not a number (or on/off)"
    case .unknownKey(let key):
      return "'\(key)' is not a parameter key: keys are STAGE.PARAMETER (see 'livemic params')"
    case .unknownStage(let key, let stage, let stages):
      return "'\(key)' names no parameter: the chain has no such parameter in stage '\(stage)'"
        + " (stages: \(stages.joined(separator: ", ")))"
    case .outOfRange(let key, let value, let range):
      return
        "\(format(value)) is outside the range of '\(key)' (\(format(range.lowerBound)) to \(format(range.upperBound)))"
    }
  }

  public var code: String {
    switch self {
    case .malformed: return "override.malformed"
    case .badValue: return "override.bad-value"
    case .unknownKey: return "override.unknown-key"
    case .unknownStage: return "override.unknown-stage"
    case .outOfRange: return "override.out-of-range"
    }
  }
}

extension Preset {
  /// The entries with `overrides` applied (so they are the initial values, not smoothed to).
  /// A plugin's controls are checked when it is instantiated.
  public func stages(applying overrides: [ParameterOverride]) throws(OverrideError) -> [ChainEntry] {
    var entries = self.entries
    for o in overrides {
      guard let dot = o.key.lastIndex(of: "."), dot != o.key.startIndex else { throw .unknownKey(o.key) }
      let id = String(o.key[..<dot])
      let name = String(o.key[o.key.index(after: dot)...])
      guard let i = entries.firstIndex(where: { $0.id == id }) else {
        throw .unknownStage(key: o.key, stage: id, stages: entries.map(\.id))
      }
      switch entries[i] {
      case .plugin(var d):
        if name == BuiltinUnits.bypassParameter.name {
          d.bypassed = o.value >= 0.5
        } else {
          // A mode-resolved plugin also takes the built-in unit's names it has a mapping for.
          d.values[resolution(of: id)?.parameterMap[name] ?? name] = o.value
        }
        entries[i] = .plugin(d)
      case .unit(var d):
        guard let unit = BuiltinUnits.type(named: d.type) else { continue }
        if name == BuiltinUnits.bypassParameter.name {
          d.bypassed = o.value >= 0.5
        } else {
          guard let spec = unit.parameters.first(where: { $0.name == name }) else {
            throw .unknownStage(key: o.key, stage: id, stages: entries.map(\.id))
          }
          guard o.value >= spec.minimum && o.value <= spec.maximum else {
            throw .outOfRange(key: o.key, value: o.value, range: spec.minimum...spec.maximum)
          }
          d.values[name] = o.value
        }
        entries[i] = .unit(d)
      }
    }
    return entries
  }
}
