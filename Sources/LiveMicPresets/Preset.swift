import DSP
import Foundation
import LV2Host

/// One entry of a chain: a built-in unit or an LV2 plugin.
///
/// Thread: any (value type).
public enum ChainEntry: Sendable, Equatable {
  case unit(StageDescription)
  case plugin(PluginDescription)

  /// The stage id (the first part of its parameter keys).
  public var id: String {
    switch self {
    case .unit(let d): return d.id
    case .plugin(let d): return d.id
    }
  }

  /// The built-in unit's description, if this is one.
  public var unit: StageDescription? {
    if case .unit(let d) = self { return d }
    return nil
  }

  /// The LV2 plugin's description, if this is one.
  public var plugin: PluginDescription? {
    if case .plugin(let d) = self { return d }
    return nil
  }
}

/// A preset: a named chain of stages with their parameters, read from a JSON file.
///
/// Format (see README "Presets"):
/// `{"name": "...", "description": "...", "volume": 0.3,
///   "chain": [{"unit": "eq", "id": "eq", "bypass": false, "params": {"bass_db": 2}},
///             {"lv2": "URI", "id": "amp", "params": {"gain": 3}, "preset": "label"}, ...]}`
/// Thread: any (value type).
public struct Preset: Sendable, Equatable {
  public var name: String
  public var description: String
  /// Output volume (0–1); sets `output.volume`.
  public var volume: Float?
  /// The stages in order. An `output` stage is appended when the chain has none.
  public var chain: [ChainEntry]
  /// Where it was read from (nil for built-in values).
  public var path: String?
  /// Output routing preference list (`"route": {"out": [pattern, ...]}`), most preferred first.
  public var routeOut: [String] = []
  /// Input routing preference list (`"route": {"in": [pattern, ...]}`).
  public var routeIn: [String] = []
  /// MIDI CC mappings (`"midi": [{"cc": 7, "channel": 1, "key": "output.volume"}]`).
  public var midi: [MidiMapping] = []
  /// Processing-mode requests by stage id (`"mode"`, `"plugins"`, `"plugin_params"`).
  public var modes: [String: ModeRequest] = [:]
  /// How each `denoise`, `leveler`, `aec` and `highpass` entry was resolved (`resolveModes`).
  public var resolutions: [ModeResolution] = []
  /// `"plugins": false`: no entry's mode runs an LV2 alternative (its built-in unit runs).
  public var pluginsOff = false
  /// Why LV2 alternatives were off when the modes were resolved (`--no-plugins`, or the
  /// preset's `"plugins": false`); nil when they were on.
  public internal(set) var pluginsOffReason: String?

  public init(
    name: String, description: String, volume: Float?, chain: [ChainEntry], path: String? = nil
  ) {
    self.name = name
    self.description = description
    self.volume = volume
    self.chain = chain
    self.path = path
  }

  /// The entries to build: the chain, with an `output` stage appended when missing and the
  /// preset's volume applied to it.
  public var entries: [ChainEntry] {
    var entries = chain
    let isOutput = { (e: ChainEntry) in e.unit?.type == OutputVolume.typeName }
    if !entries.contains(where: isOutput) {
      entries.append(.unit(StageDescription(id: OutputVolume.typeName, type: OutputVolume.typeName)))
    }
    if let volume, let i = entries.lastIndex(where: isOutput), case .unit(var d) = entries[i] {
      d.values["volume"] = volume
      entries[i] = .unit(d)
    }
    return entries
  }

  /// The built-in units of `entries`, in order.
  public var units: [StageDescription] { entries.compactMap(\.unit) }
}

/// Why a preset could not be used. Each message is one sentence naming the file and key.
public enum PresetError: CodedError, Equatable {
  case notFound(name: String, searched: [String])
  case unreadable(path: String, reason: String)
  case invalid(path: String, key: String, reason: String)

  public var description: String {
    switch self {
    case .notFound(let name, let searched):
      return "no preset named '\(name)' (searched \(searched.joined(separator: ", ")); "
        + "'livemic presets' lists them)"
    case .unreadable(let path, let reason):
      return "cannot read preset '\(path)': \(reason)"
    case .invalid(let path, let key, let reason):
      return "preset '\(path)', key '\(key)': \(reason)"
    }
  }

  public var code: String {
    switch self {
    case .notFound: return "preset.not-found"
    case .unreadable: return "preset.unreadable"
    case .invalid: return "preset.invalid"
    }
  }
}

extension Preset {
  /// Parses and validates a preset file's contents: every unit and parameter must exist.
  /// Processing modes are resolved against the installed plugins (or `availability`).
  public static func parse(
    _ data: Data, path: String, availability: ((String) -> PluginAvailability)? = nil,
    pluginsOff: String? = nil
  ) throws(PresetError) -> Preset {
    let document: JSONValue
    do {
      document = try JSONValue.parse(data)
    } catch {
      throw .unreadable(path: path, reason: "it is not valid JSON (\(error.reason))")
    }
    guard let top = document.object else {
      throw .invalid(path: path, key: "(top level)", reason: "expected a JSON object")
    }
    try checkKeys(
      top, allowed: ["name", "description", "volume", "chain", "route", "midi", "plugins"], prefix: "",
      path: path)
    var presetPluginsOff = false
    if let p = top["plugins"] {
      guard let on = p.bool else {
        throw .invalid(
          path: path, key: "plugins", reason: "expected true or false (false: no LV2 alternatives)")
      }
      presetPluginsOff = !on
    }
    let midi = try midiMappings(top["midi"], path: path)
    let (routeOut, routeIn) = try routes(top["route"], path: path)
    guard let name = top["name"]?.string, !name.isEmpty else {
      throw .invalid(path: path, key: "name", reason: "expected a non-empty string")
    }
    var description = ""
    if let d = top["description"] {
      guard let text = d.string else {
        throw .invalid(path: path, key: "description", reason: "expected a string")
      }
      description = text
    }
    var volume: Float?
    if let v = top["volume"] {
      guard let n = v.number, (0...1).contains(n) else {
        throw .invalid(path: path, key: "volume", reason: "expected a number from 0 to 1")
      }
      volume = Float(n)
    }
    guard let entries = top["chain"]?.array else {
      throw .invalid(path: path, key: "chain", reason: "expected an array of stages")
    }
    let (chain, modes) = try chainEntries(entries, path: path)
    var preset = Preset(name: name, description: description, volume: volume, chain: chain, path: path)
    preset.routeOut = routeOut
    preset.routeIn = routeIn
    preset.midi = midi
    preset.modes = modes
    preset.pluginsOff = presetPluginsOff
    do {
      try ChainAssembly.validate(preset.units)
    } catch {
      throw .invalid(path: path, key: "chain", reason: error.description)
    }
    try preset.resolveModes(availability: availability, pluginsOff: pluginsOff)
    return preset
  }

  /// The preset's `midi` list: `{"cc": 0–127, "channel": 1–16 (optional), "key": KEY}` each.
  private static func midiMappings(_ value: JSONValue?, path: String) throws(PresetError) -> [MidiMapping] {
    guard let m = value else { return [] }
    var midi: [MidiMapping] = []
    guard let list = m.array else {
      throw .invalid(
        path: path, key: "midi", reason: "expected an array like [{\"cc\": 7, \"key\": \"output.volume\"}]")
    }
    for (i, item) in list.enumerated() {
      let key = "midi[\(i)]"
      guard let object = item.object else {
        throw .invalid(path: path, key: key, reason: "expected an object")
      }
      try checkKeys(object, allowed: ["cc", "channel", "key"], prefix: key + ".", path: path)
      guard let cc = object["cc"]?.number, cc == cc.rounded(), (0...127).contains(cc) else {
        throw .invalid(path: path, key: "\(key).cc", reason: "expected a controller number from 0 to 127")
      }
      var channel: Int?
      if let c = object["channel"] {
        guard let ch = c.number, ch == ch.rounded(), (1...16).contains(ch) else {
          throw .invalid(path: path, key: "\(key).channel", reason: "expected a MIDI channel from 1 to 16")
        }
        channel = Int(ch)
      }
      guard let target = object["key"]?.string, !target.isEmpty else {
        throw .invalid(
          path: path, key: "\(key).key", reason: "expected a parameter key such as output.volume")
      }
      midi.append(MidiMapping(cc: Int(cc), channel: channel, key: target))
    }
    return midi
  }

  /// The preset's `route`: `{"out": [PATTERN, …], "in": [PATTERN, …]}`, both optional.
  private static func routes(_ value: JSONValue?, path: String) throws(PresetError) -> ([String], [String]) {
    var routeOut: [String] = []
    var routeIn: [String] = []
    guard let r = value else { return (routeOut, routeIn) }
    guard let route = r.object else {
      throw .invalid(
        path: path, key: "route", reason: "expected an object like {\"out\": [\"pattern\", ...]}")
    }
    try checkKeys(route, allowed: ["in", "out"], prefix: "route.", path: path)
    for direction in ["out", "in"] {
      guard let value = route[direction] else { continue }
      guard let list = value.array, list.allSatisfy({ $0.string != nil }) else {
        throw .invalid(
          path: path, key: "route.\(direction)", reason: "expected an array of port-name patterns")
      }
      if let reason = list.lazy.compactMap({ $0.string.flatMap(PortPattern.reason) }).first {
        throw .invalid(path: path, key: "route.\(direction)", reason: reason)
      }
      if direction == "out" {
        routeOut = list.compactMap(\.string)
      } else {
        routeIn = list.compactMap(\.string)
      }
    }
    return (routeOut, routeIn)
  }

  /// The preset's `chain`: units and plugins in order, each id used once, and the processing
  /// modes the units ask for.
  private static func chainEntries(_ entries: [JSONValue], path: String) throws(PresetError)
    -> ([ChainEntry], [String: ModeRequest])
  {
    var chain: [ChainEntry] = []
    var ids: Set<String> = []
    var modes: [String: ModeRequest] = [:]
    for (i, entry) in entries.enumerated() {
      let key = "chain[\(i)]"
      let parsed: ChainEntry
      if entry.object?["lv2"] != nil {
        parsed = try plugin(entry, key: key, path: path)
        if case .plugin(let d) = parsed {
          if case .stage(let source) = d.sidechain, !ids.contains(source) {
            throw .invalid(
              path: path, key: "\(key).sidechain",
              reason:
                "'\(source)' is not an earlier stage (use \"input\", \"music\" or the id of a stage before it)"
            )
          }
          for (symbol, cv) in d.cv.sorted(by: { $0.key < $1.key }) {
            if case .signal(.stage(let source)) = cv, !ids.contains(source) {
              throw .invalid(
                path: path, key: "\(key).cv.\(symbol)",
                reason:
                  "'\(source)' is not an earlier stage (use a number, \"input\", \"music\" or an earlier stage's id)"
              )
            }
          }
        }
      } else {
        let (description, request) = try stage(entry, key: key, path: path)
        parsed = .unit(description)
        if let request { modes[description.id] = request }
      }
      guard ids.insert(parsed.id).inserted else {
        throw .invalid(
          path: path, key: "\(key).id",
          reason: "stage id '\(parsed.id)' is used twice; give each stage its own id")
      }
      chain.append(parsed)
    }
    return (chain, modes)
  }

  private static func checkKeys(
    _ object: JSONObject, allowed: [String], prefix: String, path: String
  ) throws(PresetError) {
    if let extra = object.keys.sorted().first(where: { !allowed.contains($0) }) {
      throw .invalid(
        path: path, key: prefix + extra,
        reason: "unknown key (allowed: \(allowed.sorted().joined(separator: ", ")))")
    }
  }

  /// The `id` (default `defaultId`) and `bypass` (default false) every chain entry may have.
  private static func idAndBypass(
    _ object: JSONObject, defaultId: String, key: String, path: String
  ) throws(PresetError) -> (String, Bool) {
    var id = defaultId
    if let i = object["id"] {
      guard let text = i.string else {
        throw .invalid(path: path, key: "\(key).id", reason: "expected a string")
      }
      id = text
    }
    var bypassed = false
    if let b = object["bypass"] {
      guard let flag = b.bool else {
        throw .invalid(path: path, key: "\(key).bypass", reason: "expected true or false")
      }
      bypassed = flag
    }
    return (id, bypassed)
  }

  /// An LV2 entry: `{"lv2": URI, "id": ..., "params": {symbol: value}, "preset": ..., "bypass": ...}`.
  /// Symbols and ranges are checked when the plugin is instantiated (it needs the plugin's data).
  private static func plugin(_ entry: JSONValue, key: String, path: String) throws(PresetError) -> ChainEntry
  {
    let object = entry.object ?? [:]
    try checkKeys(
      object,
      allowed: [
        "lv2", "id", "bypass", "params", "preset", "state", "midi", "properties", "sidechain", "cv", "on",
      ],
      prefix: key + ".",
      path: path)
    var statePath: String?
    if let st = object["state"] {
      guard let text = st.string, !text.isEmpty else {
        throw .invalid(path: path, key: "\(key).state", reason: "expected the path of a saved plugin state")
      }
      // Relative to the preset file's folder.
      statePath =
        text.hasPrefix("/")
        ? text : ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(text)
    }
    guard let uri = object["lv2"]?.string, !uri.isEmpty else {
      throw .invalid(path: path, key: "\(key).lv2", reason: "expected the plugin's URI")
    }
    let (id, bypassed) = try idAndBypass(
      object, defaultId: PluginIdentifiers.suggestedId(for: uri), key: key, path: path)
    var preset: String?
    if let p = object["preset"] {
      guard let text = p.string else {
        throw .invalid(path: path, key: "\(key).preset", reason: "expected a preset URI or label")
      }
      preset = text
    }
    var values: [String: Float] = [:]
    if let p = object["params"] {
      guard let params = p.object else {
        throw .invalid(
          path: path, key: "\(key).params", reason: "expected an object of control values by port symbol")
      }
      for (name, raw) in params {
        guard let value = raw.number.map(Float.init) ?? raw.bool.map({ $0 ? 1 : 0 }) else {
          throw .invalid(path: path, key: "\(key).params.\(name)", reason: "expected a number")
        }
        values[name] = value
      }
    }
    var description = PluginDescription(id: id, uri: uri, values: values, preset: preset, bypassed: bypassed)
    description.statePath = statePath
    if let m = object["midi"] {
      guard let flag = m.bool else {
        throw .invalid(
          path: path, key: "\(key).midi", reason: "expected true or false (whether the plugin gets MIDI)")
      }
      description.midi = flag
    }
    if let c = object["cv"] {
      guard let inputs = c.object else {
        throw .invalid(
          path: path, key: "\(key).cv", reason: "expected an object of CV sources by port symbol")
      }
      for (symbol, raw) in inputs {
        if let number = raw.number {
          description.cv[symbol] = .constant(Float(number))
        } else if let text = raw.string, !text.isEmpty {
          description.cv[symbol] = .signal(SignalSource(text))
        } else {
          throw .invalid(
            path: path, key: "\(key).cv.\(symbol)",
            reason: "expected a number, \"input\", \"music\" or the id of an earlier stage")
        }
      }
    }
    if let on = object["on"] {
      guard let text = on.string, text == "voice" || text == "music" else {
        throw .invalid(
          path: path, key: "\(key).on",
          reason: "expected \"voice\" (the default) or \"music\" (the music bed)")
      }
      description.onMusic = text == "music"
      // On the music, the key is the voice unless the entry says otherwise.
      if description.onMusic { description.sidechain = .voice }
    }
    if let sc = object["sidechain"] {
      guard let text = sc.string, !text.isEmpty else {
        throw .invalid(
          path: path, key: "\(key).sidechain",
          reason: "expected \"input\", \"music\" or the id of an earlier stage")
      }
      description.sidechain = SignalSource(text)
    }
    if let p = object["properties"] {
      guard let properties = p.object else {
        throw .invalid(
          path: path, key: "\(key).properties", reason: "expected an object of property values by name")
      }
      for (name, raw) in properties {
        guard
          let text = raw.string ?? raw.number.map({ format(Float($0)) })
            ?? raw.bool.map({ $0 ? "true" : "false" })
        else {
          throw .invalid(
            path: path, key: "\(key).properties.\(name)", reason: "expected a string, number or true/false")
        }
        description.properties[name] = text
      }
      description.propertiesFolder = (path as NSString).deletingLastPathComponent
    }
    return .plugin(description)
  }

  private static func stage(_ entry: JSONValue, key: String, path: String) throws(PresetError)
    -> (StageDescription, ModeRequest?)
  {
    guard let object = entry.object else {
      throw .invalid(path: path, key: key, reason: "expected an object like {\"unit\": \"eq\"}")
    }
    try checkKeys(
      object, allowed: ["unit", "id", "bypass", "params", "mode", "plugins", "plugin_params"],
      prefix: key + ".",
      path: path)
    let known = BuiltinUnits.typeNames.joined(separator: ", ")
    guard let type = object["unit"]?.string else {
      throw .invalid(path: path, key: "\(key).unit", reason: "expected a unit name (one of \(known))")
    }
    guard let unit = BuiltinUnits.type(named: type) else {
      throw .invalid(path: path, key: "\(key).unit", reason: "unknown unit '\(type)' (known: \(known))")
    }
    let (id, bypassed) = try idAndBypass(object, defaultId: type, key: key, path: path)
    let request = try modeRequest(object, type: type, key: key, path: path)
    if request != nil && !ProcessingModes.units.contains(type) {
      throw .invalid(
        path: path, key: "\(key).mode", reason: ModeError.modesNotSupported(unit: type).description)
    }
    var values: [String: Float] = [:]
    if let p = object["params"] {
      guard let params = p.object else {
        throw .invalid(path: path, key: "\(key).params", reason: "expected an object of parameter values")
      }
      for (name, raw) in params.sorted(by: { $0.key < $1.key }) {
        let paramKey = "\(key).params.\(name)"
        guard let spec = unit.parameters.first(where: { $0.name == name }) else {
          let names = unit.parameters.map(\.name).joined(separator: ", ")
          throw .invalid(
            path: path, key: paramKey, reason: "unit '\(type)' has no parameter '\(name)' (it has: \(names))")
        }
        guard let value = raw.number.map(Float.init) ?? raw.bool.map({ $0 ? 1 : 0 }) else {
          throw .invalid(path: path, key: paramKey, reason: "expected a number")
        }
        guard value >= spec.minimum && value <= spec.maximum else {
          throw .invalid(
            path: path, key: paramKey,
            reason: "\(format(value)) is outside the range \(format(spec.minimum)) to \(format(spec.maximum))"
          )
        }
        values[name] = value
      }
    }
    return (StageDescription(id: id, type: type, values: values, bypassed: bypassed), request)
  }
}

/// Formats a parameter value without needless decimals (`80`, `0.3`).
public func format(_ value: Float) -> String {
  value == value.rounded() && abs(value) < 1e7 ? String(Int(value)) : String(value)
}
