import DSP
import Foundation
import LV2Host

/// Writes the running chain as a preset: every stage in order with every parameter's current
/// value, bypass states, the output volume and route, and each plugin's own state (as
/// `NAME.state/ID/state.ttl` beside the preset), and the processing mode a built-in unit runs
/// for when it is not its unit's default (`modes`). Never real-time.
public enum PresetWriter {
  /// Saves to `nameOrPath` (a name goes into the user's preset folder) and returns the path.
  public static func save(
    _ nameOrPath: String, entries: [ChainEntry], chain: VoiceChain, plugins: [PluginStage], route: [String],
    inputRoute: [String] = [], midi: [MidiMapping] = [], modes: [ModeResolution] = []
  ) throws(PresetWriteError) -> String {
    let path: String
    if nameOrPath.contains("/") || nameOrPath.hasSuffix(".json") {
      path = nameOrPath
    } else {
      guard let folder = PresetLibrary.defaultFolders().first else {
        throw PresetWriteError("no preset folder is known")
      }
      path = folder + "/\(nameOrPath).json"
    }
    let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    let folder = (path as NSString).deletingLastPathComponent
    do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
      throw PresetWriteError("cannot create the folder '\(folder)'")
    }
    let value = { (key: String) in chain.parameter(key).map { Double(chain.targets.value($0.index)) } }
    var stages: [JSONValue] = []
    for entry in entries {
      switch entry {
      case .unit(let d):
        guard let unit = BuiltinUnits.type(named: d.type), chain.parameter("\(d.id).bypass") != nil else {
          continue
        }
        var params = JSONObject()
        // Read-only reports (gain reduction, late frames) are not settings: left out.
        for spec in unit.parameters {
          if case .output = spec.kind { continue }
          params[spec.name] = value("\(d.id).\(spec.name)").map(JSONValue.number)
        }
        var object: JSONObject = [
          "unit": .string(d.type), "id": .string(d.id),
          "bypass": .bool((value("\(d.id).bypass") ?? 0) >= 0.5),
        ]
        // A built-in unit that runs for a mode keeps asking for it (a WebRTC unit is its own type).
        if let mode = modes.first(where: { $0.id == d.id && $0.unit == d.type }) {
          if mode.requested != ProcessingModes.defaultMode(for: d.type) {
            object["mode"] = .string(mode.requested.rawValue)
          }
          if let list = mode.request.plugins { object["plugins"] = JSONValue(list) }
          if !mode.request.pluginParams.isEmpty {
            object["plugin_params"] = JSONValue(mode.request.pluginParams)
          }
        }
        object["params"] = .object(params)
        stages.append(.object(object))
      case .plugin(let d):
        guard let stage = plugins.first(where: { $0.id == d.id }) else { continue }  // left out
        var params = JSONObject()
        for port in stage.info.ports where port.kind == .control && port.isInput {
          params[port.symbol] = value("\(d.id).\(port.symbol)").map(JSONValue.number)
        }
        var object: JSONObject = [
          "lv2": .string(d.uri), "id": .string(d.id), "bypass": .bool((value("\(d.id).bypass") ?? 0) >= 0.5),
          "params": .object(params),
        ]
        if !d.midi { object["midi"] = .bool(false) }
        if d.onMusic { object["on"] = .string("music") }
        if stage.info.sidechainInputs > 0 { object["sidechain"] = .string(d.sidechain.description) }
        if !d.cv.isEmpty {
          object["cv"] = .object(
            JSONObject(
              d.cv.sorted { $0.key < $1.key }.map { symbol, source in
                switch source {
                case .constant(let value): return (symbol, .number(Double(value)))
                case .signal(let signal): return (symbol, .string(signal.description))
                }
              }))
        }
        // The properties as the plugin last reported them (its patch:Set answers).
        let writable = Set(stage.info.properties.filter(\.writable).map(\.name))
        let reported = stage.propertyValues().filter { writable.contains($0.key) }
        if !reported.isEmpty {
          object["properties"] = .object(
            JSONObject(reported.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.text)) }))
        }
        if stage.hasState {
          let directory = folder + "/\(name).state/\(d.id)"
          do { _ = try stage.saveState(to: directory) } catch { throw PresetWriteError(error.description) }
          object["state"] = .string("\(name).state/\(d.id)/state.ttl")
        }
        stages.append(.object(object))
      }
    }
    var preset: JSONObject = [
      "name": .string(name),
      "description": .string(
        "Saved from a running LiveMic on \(ISO8601DateFormatter().string(from: Date()))."),
    ]
    if let volume = value("output.volume") { preset["volume"] = .number(volume) }
    var routes = JSONObject()
    if !route.isEmpty { routes["out"] = JSONValue(route) }
    if !inputRoute.isEmpty { routes["in"] = JSONValue(inputRoute) }
    if !routes.isEmpty { preset["route"] = .object(routes) }
    if !midi.isEmpty {
      preset["midi"] = .array(
        midi.map { m in
          var o: JSONObject = ["cc": .int(m.cc)]
          if let ch = m.channel { o["channel"] = .int(ch) }
          o["key"] = .string(m.key)
          return .object(o)
        })
    }
    preset["chain"] = .array(stages)
    guard FileManager.default.createFile(atPath: path, contents: Data((preset.encoded(.pretty) + "\n").utf8))
    else { throw PresetWriteError("cannot write the preset '\(path)'") }
    return path
  }
}

/// Why a preset could not be written; the message is one sentence.
public struct PresetWriteError: CodedError {
  public let description: String
  public var code: String { "preset.unwritable" }
  init(_ description: String) { self.description = description }
}
