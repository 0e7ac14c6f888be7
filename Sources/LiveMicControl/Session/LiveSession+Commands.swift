import DSP
import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets

/// The control socket's commands, run on the supervisor's thread (see docs/control.md).
extension LiveSession {
  /// Answers one request with one JSON line: `{"ok": true, ...}` or `{"ok": false, "error": ...}`.
  func answer(_ request: JSONObject, client: JackClient, state: ProcessState) -> String {
    let name = request["cmd"]?.string ?? ""
    do throws(ControlError) {
      let result: JSONObject
      switch ControlProtocol.Command(rawValue: name) {
      case .status: result = status(client, state)
      case .get: result = try get(request)
      case .set: result = try set(request)
      case .preset: result = try preset(request, client, state)
      case .mode: result = try modeCommand(request, client, state)
      case .mute: result = mute(try Self.muteMode(request), client, state)
      case .unmute: result = unmute(client, state)
      case .route: result = try routeCommand(request, client, state)
      case .connections: result = ["connections": connections(client)]
      case .meters: result = currentMeters(state).fields
      case .record: result = try recorder.record(request, client.host)
      case .loudness: result = try recorder.loudnessCommand(request)
      case .stream: result = try recorder.streamCommand(request, client.host, audioRunning: !suspended)
      case .learn, .subscribe, .unsubscribe, nil:
        // learn is answered by the supervisor's loop, subscriptions by the connection's thread.
        throw ControlError(
          "unknown command '\(name)' (commands: \(ControlProtocol.commandList))",
          code: "control.unknown-command")
      }
      return ControlServer.answer(result)
    } catch {
      return ControlServer.error(error.message, code: error.code)
    }
  }

  /// `last_missed_cycle` of `status`: the latest gap in the server's frame times (its frame
  /// time, frames missing, and its number in `missed_cycles`), and `recent_missed_cycles`, the
  /// last `MissedCycleHistory.capacity` of them; absent before the first.
  private static func missedCycleStatus(_ state: ProcessState) -> JSONObject {
    guard let gap = MissedCycle(packed: state.lastMissedCycle.load(ordering: .relaxed)) else { return [:] }
    let count = state.missedCycles.load(ordering: .relaxed)
    let fields = { (gap: MissedCycle) -> JSONValue in
      [
        "expected_frame_time": .int(gap.expectedFrameTime), "missing_frames": .int(gap.missingFrames),
        "number": .int(gap.number(countAfter: count)),
      ]
    }
    // Only the gaps of the last `capacity` numbers (older slots were overwritten or are stale).
    let recent = state.recentMissedCycles.gaps.filter {
      let number = $0.number(countAfter: count)
      return number <= count && number + UInt64(MissedCycleHistory.capacity) > count
    }
    .sorted { $0.number(countAfter: count) < $1.number(countAfter: count) }
    return ["last_missed_cycle": fields(gap), "recent_missed_cycles": .array(recent.map(fields))]
  }

  private func status(_ client: JackClient, _ state: ProcessState) -> JSONObject {
    let chain = running.chain
    let stages: [JSONValue] = chain.stages.map { stage in
      let bypass = chain.parameter("\(stage.id).bypass").map { chain.targets.value($0.index) >= 0.5 } ?? false
      var fields: JSONObject = [
        "id": .string(stage.id), "bypassed": .bool(bypass), "latency_frames": .int(stage.latencyFrames),
      ]
      if let mode = running.modes.first(where: { $0.id == stage.id }) { fields.merge(mode.fields) }
      return .object(fields)
    }
    var fields: JSONObject = [
      "client": .string(client.name), "server": .string(serverLabel),
      "sample_rate": .number(client.sampleRate),
      "buffer_frames": .int(client.events.bufferFrames.load(ordering: .relaxed)),
      "latency_frames": .int(chain.latencyFrames),
      "xruns": .int(client.events.xruns.load(ordering: .relaxed)),
      "dsp_load_percent": .number(Double(client.cpuLoadPercent)), "preset": .string(running.presetName),
      "cycles": .int(state.cycles.load(ordering: .relaxed)),
      "missed_cycles": .int(state.missedCycles.load(ordering: .relaxed)), "chain": .array(stages),
      "denormals_flushed": .bool(state.denormalsFlushed.load(ordering: .relaxed)),
      "freewheeling": .bool(client.events.freewheeling.load(ordering: .relaxed)),
      "memory": ProcessMemory.status,
    ]
    for part in [stateStatus, Self.missedCycleStatus(state), recorder.tapStatus, recorder.loudnessStatus] {
      fields.merge(part)
    }
    return fields
  }

  func get(_ request: JSONObject) throws(ControlError) -> JSONObject {
    let chain = running.chain
    if let key = request["key"] {
      guard let name = key.string else { throw ControlError("\"key\" must be a string") }
      guard let p = chain.parameter(name) else {
        if let (stage, property) = pluginProperty(name),
          stage.info.properties.contains(where: { $0.name == property })
        {
          guard let value = stage.propertyValues()[property] else {
            throw ControlError("the plugin of '\(stage.id)' has not reported '\(property)' yet")
          }
          return ["values": [name: .string(value.text)]]
        }
        throw ControlError("'\(name)' is not a parameter of the running chain")
      }
      return ["values": [name: .number(Double(chain.targets.value(p.index)))]]
    }
    var values: [String: Double] = [:]
    for p in chain.parameters { values[p.key] = Double(chain.targets.value(p.index)) }
    var properties: [String: String] = [:]
    for stage in running.plugins {
      for (name, value) in stage.propertyValues() { properties["\(stage.id).\(name)"] = value.text }
    }
    var answer: JSONObject = ["values": JSONValue(values)]
    if !properties.isEmpty { answer["properties"] = JSONValue(properties) }
    guard try request.flag("describe") else { return answer }
    answer["parameters"] = .array(chain.parameters.map { Self.describe($0, chain) })
    return answer
  }

  /// One parameter as `get` with `"describe": true` gives it (the descriptions `livemic params`
  /// prints): key, stage, name, unit, range, default, kind (`continuous`, `toggle`, `integer`,
  /// `choice` with its `choices`, `output` for a read-only report), summary and value.
  static func describe(_ p: VoiceChain.Parameter, _ chain: VoiceChain) -> JSONValue {
    let (stage, name) = p.key.split(separator: ".", maxSplits: 1).map(String.init).splitPair
    var fields: JSONObject = [
      "key": .string(p.key), "stage": .string(stage), "name": .string(name), "unit": .string(p.spec.unit),
      "min": .number(Double(p.spec.minimum)), "max": .number(Double(p.spec.maximum)),
      "default": .number(Double(p.spec.defaultValue)),
    ]
    switch p.spec.kind {
    case .continuous: fields["kind"] = "continuous"
    case .toggle: fields["kind"] = "toggle"
    case .integer: fields["kind"] = "integer"
    case .output: fields["kind"] = "output"
    case .choice(let options):
      fields["kind"] = "choice"
      fields["choices"] = .array(options.map { .number(Double($0)) })
    }
    fields["summary"] = .string(p.spec.summary)
    fields["value"] = .number(Double(chain.targets.value(p.index)))
    return .object(fields)
  }

  func set(_ request: JSONObject) throws(ControlError) -> JSONObject {
    let chain = running.chain
    guard let key = request["key"]?.string else { throw ControlError("\"set\" needs a \"key\" string") }
    guard let p = chain.parameter(key) else {
      if let (stage, property) = pluginProperty(key) {
        return try setProperty(key, stage, property, request["value"])
      }
      throw ControlError("'\(key)' is not a parameter of the running chain")
    }
    guard p.spec.kind != .output else {
      throw ControlError("'\(key)' is read-only (a value the stage reports)")
    }
    guard let raw = request["value"] else { throw ControlError("\"set\" needs a \"value\"") }
    // true/false only for on/off parameters: `true` for the output volume meant its maximum.
    let onOff = p.spec.kind == .toggle ? raw.bool.map({ $0 ? Float(1) : 0 }) : nil
    guard let value = raw.number.map(Float.init) ?? onOff else {
      throw ControlError(
        "the value of '\(key)' must be a number" + (p.spec.kind == .toggle ? " (or true/false)" : ""))
    }
    guard value.isFinite, value >= p.spec.minimum, value <= p.spec.maximum else {
      throw ControlError(
        "\(format(value)) is outside the range of '\(key)' (\(format(p.spec.minimum)) to \(format(p.spec.maximum)))"
      )
    }
    let used = chain.set(key, value) ?? value
    // Every door's pages and subscribers see the change at once (the web page's controls).
    stream.emit("value-changed", ["key": .string(key), "value": .number(Double(used))])
    return ["key": .string(key), "value": .number(Double(used))]
  }

  /// The plugin stage and property name of a key `ID.NAME` whose stage is a running plugin
  /// with properties (`PluginInfo.properties`).
  private func pluginProperty(_ key: String) -> (PluginStage, String)? {
    let (id, name) = key.split(separator: ".", maxSplits: 1).map(String.init).splitPair
    guard let stage = running.plugins.first(where: { $0.id == id }), !stage.info.properties.isEmpty else {
      return nil
    }
    return (stage, name)
  }

  /// `set` of a plugin property: a `patch:Set` with the value as text (a string, or a number or
  /// true/false written out), loaded by the plugin in its own time.
  private func setProperty(_ key: String, _ stage: PluginStage, _ name: String, _ raw: JSONValue?)
    throws(ControlError) -> JSONObject
  {
    guard let raw else { throw ControlError("\"set\" needs a \"value\"") }
    guard
      let text = raw.string ?? raw.number.map({ format(Float($0)) })
        ?? raw.bool.map({ $0 ? "true" : "false" })
    else { throw ControlError("the value of '\(key)' must be a string, a number or true/false") }
    do {
      let value = try stage.setProperty(name, text: text)
      stream.emit("property-set", ["key": .string(key), "value": .string(value.text)])
      return ["key": .string(key), "value": .string(value.text)]
    } catch {
      throw ControlError(error.description)
    }
  }

  private func preset(_ request: JSONObject, _ client: JackClient, _ state: ProcessState)
    throws(ControlError) -> JSONObject
  {
    guard let action = request["action"]?.string.flatMap(ControlProtocol.PresetAction.init(rawValue:)) else {
      throw ControlError("\"preset\" needs \"action\": \"load\", \"save\" or \"list\"")
    }
    if action == .list {
      let presets: [JSONValue] = PresetLibrary().all().map { entry in
        var fields: JSONObject = ["name": .string(entry.name)]
        switch entry.result {
        case .success(let preset): fields["description"] = .string(preset.description)
        case .failure(let error): fields["error"] = .string(error.description)
        }
        return .object(fields)
      }
      return ["presets": .array(presets), "preset": .string(running.presetName)]
    }
    guard let name = request["name"]?.string, !name.isEmpty else {
      throw ControlError("\"preset \(action.rawValue)\" needs a \"name\" string")
    }
    if action == .save {
      let path: String
      do {
        path = try PresetWriter.save(
          name, entries: running.entries, chain: running.chain, plugins: running.plugins,
          route: route?.patterns ?? [], inputRoute: inputRoute?.patterns ?? [], midi: running.midiMappings,
          modes: running.modes)
      } catch { throw ControlError(error) }
      Log.info("preset saved to '\(path)'")
      return ["path": .string(path)]
    }
    let previous = options.preset
    options.preset = name
    if let failure = reloadPreset(client, state: state, reason: "control") {
      options.preset = previous
      throw ControlError(failure)
    }
    return ["preset": .string(running.presetName)]
  }

  /// The mode of a `mute` request (default `ramp`).
  static func muteMode(_ request: JSONObject) throws(ControlError) -> MuteMode {
    let name = try request.text("mode", or: MuteMode.ramp.rawValue)
    guard let mode = MuteMode(rawValue: name) else {
      throw ControlError("mute mode '\(name)' is not one of ramp, input, suspend")
    }
    return mode
  }

  /// Every connection of LiveMic's ports (`connections`, and `route`'s answers).
  func connections(_ client: JackClient) -> JSONValue {
    var result: [String: [String]] = [:]
    for (port, _) in client.allPortNames { result[port] = client.connections(of: port) }
    return JSONValue(result)
  }

}

extension [String] {
  /// The first two elements (the second empty when there is none).
  fileprivate var splitPair: (String, String) { (first ?? "", count > 1 ? self[1] : "") }
}
