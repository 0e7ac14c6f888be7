import DSP

/// Why a plugin stage could not be made. Each message is one sentence.
public enum PluginError: CodedError, Equatable {
  case unknownURI(String)
  case unsupported(uri: String, reason: String)
  case instantiation(uri: String)
  case unknownPreset(uri: String, preset: String, available: [String])
  case unknownControl(id: String, symbol: String, known: [String])
  case outOfRange(id: String, symbol: String, value: Float, range: ClosedRange<Float>)
  case unreadableState(path: String)
  case unknownProperty(id: String, name: String, known: [String])
  case badPropertyValue(id: String, name: String, reason: String)

  public var description: String {
    switch self {
    case .unknownURI(let uri):
      return "no LV2 plugin with URI '\(uri)' is installed ('livemic plugins' lists them)"
    case .unsupported(let uri, let reason):
      return "LiveMic cannot host '\(uri)': \(reason)"
    case .instantiation(let uri):
      return "the plugin '\(uri)' failed to instantiate"
    case .unknownPreset(let uri, let preset, let available):
      return "the plugin '\(uri)' has no preset '\(preset)'"
        + (available.isEmpty ? " (it has none)" : " (it has: \(available.joined(separator: ", ")))")
    case .unknownControl(let id, let symbol, let known):
      return "stage '\(id)' has no control '\(symbol)' (it has: \(known.joined(separator: ", ")))"
    case .unreadableState(let path):
      return "the plugin state '\(path)' cannot be read or written"
    case .unknownProperty(let id, let name, let known):
      return "stage '\(id)' has no property '\(name)' to set"
        + (known.isEmpty ? " (it takes none)" : " (it takes: \(known.joined(separator: ", ")))")
    case .badPropertyValue(let id, let name, let reason):
      return "the property '\(id).\(name)' \(reason)"
    case .outOfRange(let id, let symbol, let value, let range):
      return "\(Self.format(value)) is outside the range of '\(id).\(symbol)' "
        + "(\(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)))"
    }
  }

  public var code: String {
    switch self {
    case .unknownURI: return "plugin.unknown-uri"
    case .unsupported: return "plugin.unsupported"
    case .instantiation: return "plugin.instantiation-failed"
    case .unknownPreset: return "plugin.unknown-preset"
    case .unknownControl: return "plugin.unknown-control"
    case .outOfRange: return "plugin.out-of-range"
    case .unreadableState: return "plugin.unreadable-state"
    case .unknownProperty: return "plugin.unknown-property"
    case .badPropertyValue: return "plugin.bad-property-value"
    }
  }

  /// A value without needless decimals (`24`, `0.5`), as the built-in units' messages print it.
  static func format(_ value: Float) -> String {
    value == value.rounded() && abs(value) < 1e7 ? String(Int(value)) : String(value)
  }
}
