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
    var stages: [[String: Any]] = []
    for entry in entries {
      switch entry {
      case .unit(let d):
        guard let unit = BuiltinUnits.type(named: d.type), chain.parameter("\(d.id).bypass") != nil else {
          continue
        }
        var params: [String: Double] = [:]
        // Read-only reports (gain reduction, late frames) are not settings: left out.
        for spec in unit.parameters {
          if case .output = spec.kind { continue }
          params[spec.name] = value("\(d.id).\(spec.name)")
        }
        var object: [String: Any] = [
          "unit": d.type, "id": d.id, "bypass": (value("\(d.id).bypass") ?? 0) >= 0.5, "params": params,
        ]
        // A built-in unit that runs for a mode keeps asking for it (a WebRTC unit is its own type).
        if let mode = modes.first(where: { $0.id == d.id && $0.unit == d.type }) {
          if mode.requested != ProcessingModes.defaultMode(for: d.type) {
            object["mode"] = mode.requested.rawValue
          }
          if let list = mode.request.plugins { object["plugins"] = list }
          if !mode.request.pluginParams.isEmpty { object["plugin_params"] = mode.request.pluginParams }
        }
        stages.append(object)
      case .plugin(let d):
        guard let stage = plugins.first(where: { $0.id == d.id }) else { continue }  // left out
        var params: [String: Double] = [:]
        for port in stage.info.ports where port.kind == .control && port.isInput {
          params[port.symbol] = value("\(d.id).\(port.symbol)")
        }
        var object: [String: Any] = [
          "lv2": d.uri, "id": d.id, "bypass": (value("\(d.id).bypass") ?? 0) >= 0.5, "params": params,
        ]
        if stage.hasState {
          let directory = folder + "/\(name).state/\(d.id)"
          do { _ = try stage.saveState(to: directory) } catch { throw PresetWriteError(error.description) }
          object["state"] = "\(name).state/\(d.id)/state.ttl"
        }
        stages.append(object)
      }
    }
    var preset: [String: Any] = [
      "name": name,
      "description": "Saved from a running LiveMic on \(ISO8601DateFormatter().string(from: Date())).",
      "chain": stages,
    ]
    if let volume = value("output.volume") { preset["volume"] = volume }
    var routes: [String: [String]] = [:]
    if !route.isEmpty { routes["out"] = route }
    if !inputRoute.isEmpty { routes["in"] = inputRoute }
    if !routes.isEmpty { preset["route"] = routes }
    if !midi.isEmpty {
      preset["midi"] = midi.map { m -> [String: Any] in
        var o: [String: Any] = ["cc": m.cc, "key": m.key]
        if let ch = m.channel { o["channel"] = ch }
        return o
      }
    }
    guard
      let data = try? JSONSerialization.data(
        withJSONObject: preset, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]),
      FileManager.default.createFile(atPath: path, contents: data + Data("\n".utf8))
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
