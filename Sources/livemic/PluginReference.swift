import Foundation
import LV2Host
import LiveMicPresets

/// Text for `livemic plugins` and `livemic plugins show`. Never real-time.
public enum PluginReference {
  /// Installed plugins whose URI, name or class contains `filter` (case-insensitive): one line
  /// each, or a JSON array.
  public static func list(filter: String?, json: Bool, world: LV2World = ChainBuilder.world) -> String {
    let needle = filter?.lowercased()
    let plugins = world.allPlugins().filter { p in
      guard let needle else { return true }
      return [p.uri, p.name, p.className].contains { $0.lowercased().contains(needle) }
    }
    if json {
      let rows = plugins.map { p in
        ListEntry(
          uri: p.uri, name: p.name, className: p.className, audioInputs: p.audioInputs,
          audioOutputs: p.audioOutputs, canHost: p.canHost, reason: p.unsupportedReason)
      }
      return encode(rows) + "\n"
    }
    var text = ""
    for p in plugins {
      let audio = "\(p.audioInputs)→\(p.audioOutputs)"
      text += "\(p.uri)\n    \(p.name) [\(p.className), audio \(audio)]"
      text += p.unsupportedReason.map { " — cannot host: \($0)\n" } ?? "\n"
    }
    if plugins.isEmpty { text = "no installed LV2 plugin matches" + (filter.map { " '\($0)'" } ?? "") + "\n" }
    return text
  }

  /// One plugin's ports, presets, features and latency.
  public static func show(uri: String, json: Bool, world: LV2World = ChainBuilder.world) throws(PluginError)
    -> String
  {
    guard let p = world.info(uri: uri) else { throw .unknownURI(uri) }
    if json { return encode(p) + "\n" }
    var text = "\(p.name)\n  URI:      \(p.uri)\n  class:    \(p.className)\n"
    text += "  audio:    \(p.audioInputs) in, \(p.audioOutputs) out"
    text +=
      p.instancesOnStereoChain == 2
      ? " (runs as two instances on the stereo chain, one on a mono input)\n" : "\n"
    text += "  hostable: " + (p.unsupportedReason.map { "no: \($0)" } ?? "yes") + "\n"
    text +=
      "  latency:  "
      + (p.latencyPort.map { "reported on port \($0) (\(p.ports[$0].symbol))" } ?? "none declared") + "\n"
    text +=
      "  required features: "
      + (p.requiredFeatures.isEmpty ? "none" : p.requiredFeatures.joined(separator: ", ")) + "\n"
    text +=
      "  optional features: "
      + (p.optionalFeatures.isEmpty ? "none" : p.optionalFeatures.joined(separator: ", ")) + "\n"
    text += "  ports:\n"
    for port in p.ports {
      let direction = port.isInput ? "in" : "out"
      text += "    \(port.index) \(port.symbol) (\(port.kind.rawValue) \(direction)) \"\(port.name)\""
      if port.kind == .control {
        text += " range \(fmt(port.minimum)) to \(fmt(port.maximum)), default \(fmt(port.defaultValue))"
        if let unit = port.unit { text += " \(unit)" }
        var props: [String] = []
        if port.toggled { props.append("toggled") }
        if port.integer { props.append("integer") }
        if port.enumeration { props.append("enumeration") }
        if port.logarithmic { props.append("logarithmic") }
        if port.reportsLatency { props.append("reports latency") }
        if !props.isEmpty { text += " [\(props.joined(separator: ", "))]" }
        if !port.scalePoints.isEmpty {
          text += " {" + port.scalePoints.map { "\(fmt($0.value))=\($0.label)" }.joined(separator: ", ") + "}"
        }
      }
      text += "\n"
    }
    text += "  presets:" + (p.presets.isEmpty ? " none\n" : "\n")
    for preset in p.presets { text += "    \(preset.label)  <\(preset.uri)>\n" }
    return text
  }

  private struct ListEntry: Encodable {
    let uri: String
    let name: String
    let className: String
    let audioInputs: Int
    let audioOutputs: Int
    let canHost: Bool
    let reason: String?

    enum CodingKeys: String, CodingKey {
      case uri, name, className, audioInputs, audioOutputs, canHost, reason
    }

    /// Every key in every row: `reason` is null when the plugin can be hosted.
    func encode(to encoder: any Encoder) throws {
      var c = encoder.container(keyedBy: CodingKeys.self)
      try c.encode(uri, forKey: .uri)
      try c.encode(name, forKey: .name)
      try c.encode(className, forKey: .className)
      try c.encode(audioInputs, forKey: .audioInputs)
      try c.encode(audioOutputs, forKey: .audioOutputs)
      try c.encode(canHost, forKey: .canHost)
      try c.encode(reason, forKey: .reason)
    }
  }

  private static func encode<T: Encodable>(_ value: T) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
  }

  private static func fmt(_ v: Float) -> String { format(v) }
}
