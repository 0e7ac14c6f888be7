import DSP
import Foundation
import LV2Host

/// How a `denoise`, `leveler`, `aec` or `highpass` chain entry is implemented (see
/// docs/voice.md, "Processing modes").
///
/// Thread: any (value type).
public enum ProcessingMode: String, Sendable, CaseIterable {
  /// The built-in unit (the default).
  case builtin
  /// The first installed LV2 plugin of the entry's preference list; an error when none is.
  case plugin
  /// The first installed LV2 plugin of the list, else the built-in unit.
  case automatic
  /// WebRTC's audio processing (`denoise`, `aec` and `leveler`: the `webrtc-*` units).
  case webrtc
}

/// What a chain entry asked for: `"mode"`, `"plugins"` (a preference list of LV2 URIs, most
/// preferred first; nil: the shipped list) and `"plugin_params"` (control values by port
/// symbol, used only when a plugin runs).
///
/// Thread: any (value type).
public struct ModeRequest: Sendable, Equatable {
  public var mode: ProcessingMode
  public var plugins: [String]?
  public var pluginParams: [String: Float]

  public init(mode: ProcessingMode = .builtin, plugins: [String]? = nil, pluginParams: [String: Float] = [:])
  {
    self.mode = mode
    self.plugins = plugins
    self.pluginParams = pluginParams
  }
}

/// Whether a plugin can be used, as the resolution sees it.
public enum PluginAvailability: Sendable, Equatable {
  case installed
  case notInstalled
  case cannotHost(String)
}

/// How one entry's mode was resolved: requested mode, effective implementation and why.
///
/// Thread: any (value type).
public struct ModeResolution: Sendable, Equatable {
  /// The stage id and its built-in unit type.
  public let id: String
  public let unit: String
  public let requested: ProcessingMode
  /// `builtin`, or the URI of the plugin that runs.
  public let effective: String
  /// One sentence.
  public let reason: String
  /// Built-in parameter name → plugin port symbol, when a plugin runs.
  public let parameterMap: [String: String]
  /// The entry as the preset wrote it, and what it asked for: what `ctl mode` resolves again.
  public let stage: StageDescription
  public let request: ModeRequest

  init(
    _ stage: StageDescription, request: ModeRequest, effective: String, reason: String,
    parameterMap: [String: String] = [:]
  ) {
    (id, unit, requested) = (stage.id, stage.type, request.mode)
    (self.effective, self.reason, self.parameterMap) = (effective, reason, parameterMap)
    (self.stage, self.request) = (stage, request)
  }

  /// The same stage run by its built-in unit after its plugin could not be made (`automatic`).
  public func fellBack(because reason: String) -> ModeResolution {
    ModeResolution(
      stage, request: request, effective: "builtin",
      reason: "mode 'automatic': \(effective) could not be made (\(reason)), so the built-in unit runs")
  }

  /// The status fields of the stage (`livemic ctl status`).
  public var fields: JSONObject {
    ["mode": .string(requested.rawValue), "implementation": .string(effective), "why": .string(reason)]
  }
}

/// Why a mode request cannot be met. Each message is one sentence.
public enum ModeError: CodedError, Equatable {
  case noPluginInstalled(id: String, tried: [String])
  case modesNotSupported(unit: String)
  case noWebRTC(unit: String)
  case noStage(id: String)

  public var description: String {
    switch self {
    case .noPluginInstalled(let id, let tried):
      return tried.isEmpty
        ? "stage '\(id)' asks for mode 'plugin' but its plugin list is empty; list LV2 URIs in \"plugins\" or use mode 'automatic'"
        : "stage '\(id)' asks for mode 'plugin' but none of its plugins can be used (\(tried.joined(separator: "; "))); "
          + "install one or use mode 'automatic'"
    case .modesNotSupported(let unit):
      return "unit '\(unit)' has no processing modes (only "
        + ProcessingModes.units.joined(separator: ", ") + " do)"
    case .noWebRTC(let unit):
      return "unit '\(unit)' has no WebRTC engine (only "
        + ProcessingModes.webrtcUnits.keys.sorted().joined(separator: ", ")
        + " do)"
    case .noStage(let id):
      return "the running chain has no stage '\(id)' ('livemic ctl status' lists its stages)"
    }
  }

  public var code: String {
    switch self {
    case .noPluginInstalled: return "mode.no-plugin-installed"
    case .modesNotSupported: return "mode.not-supported"
    case .noWebRTC: return "mode.no-webrtc"
    case .noStage: return "mode.no-stage"
    }
  }
}

/// The shipped plugin lists, the parameter mappings and the resolution itself. Never real-time.
public enum ProcessingModes {
  /// The units that have a mode.
  public static let units = ["denoise", "leveler", "aec", "highpass"]

  /// The mode of an entry that names none. The voice units (`denoise`, `leveler`, `aec`) are
  /// `automatic`: a usable plugin of their list runs, else the built-in unit (Debian packages
  /// none of their plugins, so there the built-in units run as before). `highpass` stays
  /// `builtin`: Debian's x42-plugins brings fil4, whose 2nd-order high-pass has no `slope_db`,
  /// and `automatic` would swap the filter and its parameter names on every machine with it.
  public static func defaultMode(for unit: String) -> ProcessingMode {
    unit == "highpass" ? .builtin : .automatic
  }

  /// The preference list used when an entry gives none. Debian 12 packages a high-pass (x42's
  /// fil4, in x42-plugins) and a loudness leveler (LSP Autogain, in lsp-plugins-lv2), but no
  /// denoising or echo-cancelling LV2 plugin: those lists name well-known plugins from outside
  /// Debian.
  public static let defaultPlugins: [String: [String]] = [
    "highpass": ["http://gareus.org/oss/lv2/fil4#stereo", "http://gareus.org/oss/lv2/fil4#mono"],
    "leveler": ["http://lsp-plug.in/plugins/lv2/autogain_stereo"],
    "denoise": [
      "https://github.com/werman/noise-suppression-for-voice#stereo",
      "https://github.com/lucianodato/noise-repellent#adaptive-stereo",
    ],
    "aec": [],
  ]

  /// How a plugin is set up for a unit: built-in parameter → port symbol, and fixed control
  /// values (for fil4: its high-pass section switched on).
  struct Mapping {
    let parameters: [String: String]
    let fixed: [String: Float]
  }

  static let mappings: [String: Mapping] = {
    let fil4 = Mapping(parameters: ["freq_hz": "HPfreq"], fixed: ["HighPass": 1])
    return ["http://gareus.org/oss/lv2/fil4#stereo": fil4, "http://gareus.org/oss/lv2/fil4#mono": fil4]
  }()

  /// What `automatic` runs when no plugin of the list can be used, where it is not the built-in
  /// unit: `aec` runs WebRTC's canceller (after speexdsp's adaptive filter), which cancels a
  /// music bed by 36–38 dB after 2 s in EchoRoomTests' room against speexdsp's 12–20 dB (it
  /// adds 33 ms of latency against 10 ms; `"mode": "builtin"` chooses the quicker one).
  public static let automaticEngine: [String: ProcessingMode] = ["aec": .webrtc]

  /// `automatic` without a usable plugin: the unit's automatic engine, or its built-in unit.
  static func automaticFallback(
    _ stage: StageDescription, request: ModeRequest, because why: String
  ) throws(ModeError) -> (ChainEntry, ModeResolution)? {
    guard automaticEngine[stage.type] == .webrtc else { return nil }
    let (entry, webrtc) = try webrtc(stage, request: request)
    let reason =
      "mode 'automatic': \(why), so WebRTC's engine runs (\(webrtcUnits[stage.type] ?? "")): "
      + "it cancels a music bed better than the built-in unit ('builtin' adds less latency)"
    return (entry, ModeResolution(stage, request: request, effective: webrtc.effective, reason: reason))
  }

  /// The WebRTC unit of each unit that has one.
  public static let webrtcUnits: [String: String] = [
    "denoise": WebRTCDenoise.typeName, "aec": WebRTCEchoCanceller.typeName, "leveler": WebRTCLeveler.typeName,
  ]

  /// Mode `webrtc`: the stage as its WebRTC unit, with the values that unit has.
  static func webrtc(_ stage: StageDescription, request: ModeRequest) throws(ModeError) -> (
    ChainEntry, ModeResolution
  ) {
    guard let type = webrtcUnits[stage.type], let unit = BuiltinUnits.type(named: type) else {
      throw .noWebRTC(unit: stage.type)
    }
    let names = Set(unit.parameters.map(\.name))
    var converted = stage
    converted.type = type
    converted.values = stage.values.filter { names.contains($0.key) }
    let unused = stage.values.keys.filter { !names.contains($0) }.sorted()
    var reason = "mode 'webrtc' runs WebRTC's audio processing (\(type))"
    if !unused.isEmpty {
      reason += "; \(unused.joined(separator: ", ")) has no counterpart there and is not used"
    }
    let resolution = ModeResolution(stage, request: request, effective: "webrtc", reason: reason)
    return (.unit(converted), resolution)
  }

  /// Availability through the installed plugins.
  public static func availability(in world: LV2World) -> @Sendable (String) -> PluginAvailability {
    { uri in
      guard let info = world.info(uri: uri) else { return .notInstalled }
      return info.unsupportedReason.map { .cannotHost($0) } ?? .installed
    }
  }

  /// Resolves `stage`'s request: the entry to build (the unit itself, or an LV2 entry with the
  /// same id, bypass state and mapped values) and what was decided, with why.
  public static func resolve(
    _ stage: StageDescription, request: ModeRequest, availability: (String) -> PluginAvailability,
    pluginsOff: String? = nil
  ) throws(ModeError) -> (ChainEntry, ModeResolution) {
    let builtin = { (reason: String) in
      (
        ChainEntry.unit(stage),
        ModeResolution(stage, request: request, effective: "builtin", reason: reason)
      )
    }
    if request.mode == .builtin { return builtin("mode 'builtin' runs the built-in unit") }
    if request.mode == .webrtc { return try webrtc(stage, request: request) }
    if let pluginsOff {
      if request.mode == .automatic,
        let engine = try automaticFallback(
          stage, request: request, because: "plugins are off (\(pluginsOff))")
      {
        return engine
      }
      return builtin(
        "mode '\(request.mode.rawValue)': plugins are off (\(pluginsOff)), so the built-in unit runs")
    }
    let list = request.plugins ?? defaultPlugins[stage.type] ?? []
    var refused: [String] = []
    for uri in list {
      switch availability(uri) {
      case .notInstalled:
        refused.append("\(uri) is not installed")
      case .cannotHost(let why):
        refused.append("\(uri) cannot be hosted: \(why)")
      case .installed:
        let mapping = mappings[uri] ?? Mapping(parameters: [:], fixed: [:])
        var values = mapping.fixed
        var unmapped: [String] = []
        for (name, value) in stage.values.sorted(by: { $0.key < $1.key }) {
          if let symbol = mapping.parameters[name] { values[symbol] = value } else { unmapped.append(name) }
        }
        values.merge(request.pluginParams) { _, explicit in explicit }
        var plugin = PluginDescription(id: stage.id, uri: uri, values: values, bypassed: stage.bypassed)
        if request.mode == .automatic { plugin.fallback = stage }
        var reason =
          refused.isEmpty
          ? "mode '\(request.mode.rawValue)': \(uri) is the first plugin of the list and is installed"
          : "mode '\(request.mode.rawValue)': \(uri) is the first installed plugin of the list ("
            + refused.joined(separator: "; ") + ")"
        if !unmapped.isEmpty {
          reason += "; \(unmapped.joined(separator: ", ")) has no counterpart in the plugin and is not used"
        }
        let resolution = ModeResolution(
          stage, request: request, effective: uri, reason: reason, parameterMap: mapping.parameters)
        return (.plugin(plugin), resolution)
      }
    }
    if request.mode == .plugin { throw .noPluginInstalled(id: stage.id, tried: refused) }
    let why =
      list.isEmpty
      ? "no plugin is listed for '\(stage.type)' (Debian packages none)"
      : "no plugin of the list can be used (\(refused.joined(separator: "; ")))"
    if let engine = try automaticFallback(stage, request: request, because: why) { return engine }
    if list.isEmpty {
      return builtin(
        "mode 'automatic': no plugin is listed for '\(stage.type)' (Debian packages none), so the built-in unit runs"
      )
    }
    return builtin(
      "mode 'automatic': no plugin of the list can be used (\(refused.joined(separator: "; "))), so the built-in unit runs"
    )
  }
}

extension Preset {
  /// Resolves every entry's processing mode (`modes`), replacing the entries that get a plugin
  /// and recording each decision in `resolutions`. Availability is asked only for entries whose
  /// mode is not `builtin`.
  public mutating func resolveModes(
    availability: ((String) -> PluginAvailability)? = nil, pluginsOff requested: String? = nil
  ) throws(PresetError) {
    let pluginsOff = requested ?? (self.pluginsOff ? "\"plugins\": false in the preset" : nil)
    var resolutions: [ModeResolution] = []
    var lookup = availability
    for (i, entry) in chain.enumerated() {
      guard let stage = entry.unit, ProcessingModes.units.contains(stage.type) else { continue }
      let request = modes[stage.id] ?? ModeRequest(mode: ProcessingModes.defaultMode(for: stage.type))
      if request.mode != .builtin && request.mode != .webrtc && pluginsOff == nil && lookup == nil {
        lookup = ProcessingModes.availability(in: ChainBuilder.world)
      }
      do {
        let (resolved, resolution) = try ProcessingModes.resolve(
          stage, request: request, availability: lookup ?? { _ in .notInstalled }, pluginsOff: pluginsOff)
        chain[i] = resolved
        resolutions.append(resolution)
      } catch {
        throw .invalid(path: path ?? name, key: "chain[\(i)].mode", reason: error.description)
      }
    }
    self.resolutions = resolutions
    pluginsOffReason = pluginsOff
  }

  /// The resolution of stage `id`, if it has a mode.
  public func resolution(of id: String) -> ModeResolution? { resolutions.first { $0.id == id } }

  /// Parses an entry's `mode`, `plugins` and `plugin_params` (nil when it has none of them).
  static func modeRequest(_ object: JSONObject, type: String, key: String, path: String)
    throws(PresetError) -> ModeRequest?
  {
    guard object["mode"] != nil || object["plugins"] != nil || object["plugin_params"] != nil else {
      return nil
    }
    var request = ModeRequest(mode: ProcessingModes.defaultMode(for: type))
    if let m = object["mode"] {
      guard let text = m.string, let mode = ProcessingMode(rawValue: text) else {
        throw .invalid(
          path: path, key: "\(key).mode",
          reason: "expected \"builtin\", \"plugin\", \"automatic\" or \"webrtc\"")
      }
      request.mode = mode
    }
    if let p = object["plugins"] {
      guard let list = p.array, list.allSatisfy({ !($0.string ?? "").isEmpty }) else {
        throw .invalid(path: path, key: "\(key).plugins", reason: "expected an array of LV2 plugin URIs")
      }
      request.plugins = list.compactMap(\.string)
    }
    if let p = object["plugin_params"] {
      guard let params = p.object else {
        throw .invalid(
          path: path, key: "\(key).plugin_params",
          reason: "expected an object of control values by port symbol")
      }
      for (symbol, raw) in params {
        guard let value = raw.number.map(Float.init) ?? raw.bool.map({ $0 ? 1 : 0 }) else {
          throw .invalid(path: path, key: "\(key).plugin_params.\(symbol)", reason: "expected a number")
        }
        request.pluginParams[symbol] = value
      }
    }
    return request
  }
}
