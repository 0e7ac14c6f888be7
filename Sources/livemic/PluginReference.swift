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
      let rows: [JSONValue] = plugins.map { p in
        [
          "uri": .string(p.uri), "name": .string(p.name), "className": .string(p.className),
          "audioInputs": .int(p.audioInputs), "audioOutputs": .int(p.audioOutputs),
          "canHost": .bool(p.canHost),
          "reason": JSONValue(p.unsupportedReason),
        ]
      }
      return JSONValue.array(rows).encoded(.pretty) + "\n"
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
    if json { return Self.json(p).encoded(.pretty) + "\n" }
    var text = "\(p.name)\n  URI:      \(p.uri)\n  class:    \(p.className)\n"
    text += "  audio:    \(p.audioInputs) in, \(p.audioOutputs) out"
    text +=
      p.instancesOnStereoChain == 2
      ? " (runs as two instances on the stereo chain, one on a mono input)\n"
      : p.isInstrument ? " (an instrument: its output is added to the chain's)\n" : "\n"
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
      if port.kind == .atom && port.supportsMidi { text += " [MIDI]" }
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
    if !p.properties.isEmpty {
      text += "  properties (set with \"properties\" in a preset entry or ctl set ID.NAME VALUE):\n"
      for property in p.properties {
        let type = property.range.split(separator: "#").last.map(String.init) ?? property.range
        text +=
          "    \(property.name) \"\(property.label)\" (\(type), \(property.writable ? "writable" : "read-only"))"
        text += "  <\(property.uri)>\n"
      }
    }
    return text
  }

  /// A plugin's whole description for `plugins show --json` (absent optionals left out).
  static func json(_ p: PluginInfo) -> JSONValue {
    var object: JSONObject = [
      "uri": .string(p.uri), "name": .string(p.name), "className": .string(p.className),
      "audioInputs": .int(p.audioInputs), "audioOutputs": .int(p.audioOutputs),
      "ports": .array(p.ports.map(json)),
      "presets": .array(p.presets.map { ["uri": .string($0.uri), "label": .string($0.label)] }),
      "requiredFeatures": JSONValue(p.requiredFeatures), "optionalFeatures": JSONValue(p.optionalFeatures),
    ]
    object["properties"] = .array(
      p.properties.map {
        [
          "uri": .string($0.uri), "name": .string($0.name), "label": .string($0.label),
          "range": .string($0.range),
          "writable": .bool($0.writable),
        ]
      })
    if let latency = p.latencyPort { object["latencyPort"] = .int(latency) }
    if let reason = p.unsupportedReason { object["unsupportedReason"] = .string(reason) }
    return .object(object)
  }

  /// One port of `plugins show --json`.
  static func json(_ port: PortInfo) -> JSONValue {
    var object: JSONObject = [
      "index": .int(port.index), "symbol": .string(port.symbol), "name": .string(port.name),
      "kind": .string(port.kind.rawValue), "isInput": .bool(port.isInput), "minimum": JSONValue(port.minimum),
      "maximum": JSONValue(port.maximum), "defaultValue": JSONValue(port.defaultValue),
    ]
    if let unit = port.unit { object["unit"] = .string(unit) }
    object["toggled"] = .bool(port.toggled)
    object["integer"] = .bool(port.integer)
    object["logarithmic"] = .bool(port.logarithmic)
    object["scalePoints"] = .array(
      port.scalePoints.map { ["label": .string($0.label), "value": JSONValue($0.value)] })
    object["enumeration"] = .bool(port.enumeration)
    object["reportsLatency"] = .bool(port.reportsLatency)
    object["supportsMidi"] = .bool(port.supportsMidi)
    object["connectionOptional"] = .bool(port.connectionOptional)
    if let size = port.minimumSize { object["minimumSize"] = .int(size) }
    return .object(object)
  }

  private static func fmt(_ v: Float) -> String { format(v) }
}
