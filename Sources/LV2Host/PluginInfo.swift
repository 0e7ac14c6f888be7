/// What a plugin port is.
public enum PortKind: String, Sendable, Codable {
  case audio, control, atom, cv, unknown
}

/// One port of a plugin, as its description says.
///
/// Thread: any (value type).
public struct PortInfo: Sendable, Codable, Equatable {
  public var index: Int
  public var symbol: String
  public var name: String
  public var kind: PortKind
  public var isInput: Bool
  public var minimum: Float
  public var maximum: Float
  public var defaultValue: Float
  /// The unit's symbol (`dB`, `Hz`, `ms`) when the port declares one.
  public var unit: String?
  public var toggled: Bool
  public var integer: Bool
  public var logarithmic: Bool
  /// Labelled values, for enumeration ports (and any port with scale points).
  public var scalePoints: [ScalePoint]
  public var enumeration: Bool
  /// The control output that reports the plugin's latency in frames.
  public var reportsLatency: Bool
  public var connectionOptional: Bool
  /// Minimum buffer size (bytes) an atom port asks for.
  public var minimumSize: Int?
  /// An atom port that takes or gives MIDI events (`atom:supports midi:MidiEvent`).
  public var supportsMidi: Bool = false
  /// An atom input that takes messages (`lv2:designation lv2:control`, or `atom:supports
  /// patch:Message`): where `patch:Set` and `patch:Get` go.
  public var takesMessages: Bool = false
  /// An audio input that carries a key signal, not the signal processed (`lv2:isSideChain`, a
  /// port group that is `pg:sideChainOf` another, or a port named as one: "sidechain", `sc_…`).
  public var isSidechain: Bool = false

  public struct ScalePoint: Sendable, Codable, Equatable {
    public var label: String
    public var value: Float
  }
}

/// A property a plugin lets the host set with `patch:Set` messages (`patch:writable`) or
/// reports (`patch:readable`): a file to load, a string, a number.
///
/// Thread: any (value type).
public struct PropertyInfo: Sendable, Codable, Equatable {
  public var uri: String
  /// The short name in parameter keys (`ID.NAME`): the URI's fragment or last path part.
  public var name: String
  public var label: String
  /// The value's atom type (`rdfs:range`): `atom:Path`, `atom:String`, `atom:Float`, …
  public var range: String
  public var writable: Bool
}

/// An LV2 preset of a plugin.
public struct PresetInfo: Sendable, Codable, Equatable {
  public var uri: String
  public var label: String
}

/// Everything `livemic plugins` shows about an installed plugin.
///
/// Thread: any (value type).
public struct PluginInfo: Sendable, Codable, Equatable {
  public var uri: String
  public var name: String
  public var className: String
  public var audioInputs: Int
  public var audioOutputs: Int
  public var ports: [PortInfo]
  public var presets: [PresetInfo]
  /// The properties set and read through messages (`patch:writable`, `patch:readable`).
  public var properties: [PropertyInfo] = []
  public var requiredFeatures: [String]
  public var optionalFeatures: [String]
  /// Index of the latency-reporting control output, if any.
  public var latencyPort: Int?
  /// Nil when LiveMic can host it; otherwise the one reason it cannot (one sentence).
  public var unsupportedReason: String?

  public var canHost: Bool { unsupportedReason == nil }

  /// Whether the plugin has an atom input that takes MIDI.
  public var takesMidi: Bool { ports.contains { $0.kind == .atom && $0.isInput && $0.supportsMidi } }

  /// The sidechain (key) inputs among `audioInputs` (`PortInfo.isSidechain`).
  public var sidechainInputs: Int { ports.filter { $0.kind == .audio && $0.isInput && $0.isSidechain }.count }
  /// The audio inputs that carry the processed signal.
  public var mainInputs: Int { audioInputs - sidechainInputs }

  /// An instrument: no audio input (a synth played by MIDI); its output is added to the chain's.
  public var isInstrument: Bool { mainInputs == 0 }

  /// How many instances run on the stereo chain: a mono plugin runs as two.
  public var instancesOnStereoChain: Int { mainInputs == 1 && audioOutputs == 1 ? 2 : 1 }

  /// The channel rule for a layout, or nil when the layout is supported.
  static func layoutProblem(inputs: Int, outputs: Int, sidechains: Int = 0) -> String? {
    if sidechains > 0 {
      guard sidechains <= 2 * max(inputs, 1) else {
        return "it has \(sidechains) sidechain inputs, and LiveMic feeds at most two per instance"
      }
      if inputs == 0 {
        return
          "it has sidechain inputs but no main audio input, and LiveMic hosts sidechain plugins that process "
          + "the chain's signal"
      }
    }
    switch (inputs, outputs) {
    case (1, 1), (1, 2), (2, 2), (0, 1), (0, 2): return nil
    case (0, 0):
      return
        "it has no audio ports (a MIDI or control utility), so it would do nothing in LiveMic's audio chain"
    default:
      return "it has \(inputs) audio input(s) and \(outputs) output(s), and LiveMic's stereo chain hosts "
        + "1→1 (run as two instances), 1→2 and 2→2 plugins, and instruments (0→1, 0→2) whose output it adds"
    }
  }
}

/// Stage ids for plugins.
public enum PluginIdentifiers {
  /// A readable id from a URI: its last path or fragment part, lower-cased, with anything but
  /// letters, digits, `_` and `-` replaced by `_` (`http://lv2plug.in/plugins/eg-amp` → `eg-amp`,
  /// `http://gareus.org/oss/lv2/dpl#stereo` → `dpl_stereo`).
  public static func suggestedId(for uri: String) -> String {
    var parts = uri.split(whereSeparator: { $0 == "/" }).map(String.init)
    var last = parts.popLast() ?? "plugin"
    if let hash = last.firstIndex(of: "#") {
      last = last[..<hash] + "_" + last[last.index(after: hash)...]
    }
    var id = String(last.lowercased().map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" ? $0 : "_" })
    if !(id.first?.isLetter ?? false) { id = "lv2_" + id }
    return id
  }
}
