import DSP
import Foundation
import LiveMicEngine

/// The control socket's commands, run on the supervisor's thread (see docs/control.md).
extension LiveSession {
  /// Answers one request with one JSON line: `{"ok": true, ...}` or `{"ok": false, "error": ...}`.
  func answer(_ request: [String: JSONValue], client: JackClient, state: ProcessState) -> String {
    let command = request["cmd"]?.string ?? ""
    do throws(ControlError) {
      let result: [String: Any]
      switch command {
      case "status": result = status(client, state)
      case "get": result = try get(request)
      case "set": result = try set(request)
      case "preset": result = try preset(request, client, state)
      case "mute": result = try mute(request, client, state)
      case "unmute": result = unmute(client, state)
      case "route": result = try routeCommand(request, client, state)
      case "connections": result = ["connections": connections(client)]
      case "learn": result = try learn(request, state)
      case "meters": result = currentMeters(state).fields
      case "record": result = try record(request, client)
      case "loudness": result = try loudnessCommand(request)
      default:
        throw ControlError(
          "unknown command '\(command)' (commands: status, get, set, preset, mute, unmute, route, connections, meters, learn, record, loudness, subscribe, unsubscribe)"
        )
      }
      return Self.encode(["ok": true].merging(result) { a, _ in a })
    } catch {
      return ControlServer.error(error.message)
    }
  }

  /// Waits (up to 10 s) for a MIDI controller to move on `midi_in` and maps it to the key.
  private func learn(_ request: [String: JSONValue], _ state: ProcessState) throws(ControlError) -> [String:
    Any]
  {
    guard let key = request["key"]?.string else { throw ControlError("\"learn\" needs a \"key\" string") }
    guard let p = chain.parameter(key), p.spec.kind != .output else {
      throw ControlError("'\(key)' is not a settable parameter of the running chain")
    }
    let before = state.midi.lastMoved.load(ordering: .relaxed) >> 16
    let deadline = DispatchTime.now() + .seconds(10)
    while DispatchTime.now() < deadline {
      let moved = state.midi.lastMoved.load(ordering: .relaxed)
      if moved >> 16 != before {
        let (channel, cc) = (Int(moved >> 8 & 0xFF), Int(moved & 0x7F))
        let mapping = MidiMapping(cc: cc, channel: channel + 1, key: key)
        midiMappings.removeAll { $0.cc == cc && ($0.channel == nil || $0.channel == channel + 1) }
        midiMappings.append(mapping)
        bindMidi(state)
        Log.info("MIDI CC \(cc) on channel \(channel + 1) now sets '\(key)'")
        return ["cc": cc, "channel": channel + 1, "key": key]
      }
      usleep(5000)
    }
    throw ControlError("no MIDI controller moved on midi_in within 10 s")
  }

  private func status(_ client: JackClient, _ state: ProcessState) -> [String: Any] {
    let stages: [[String: Any]] = chain.stages.map { stage in
      let bypass = chain.parameter("\(stage.id).bypass").map { chain.targets.value($0.index) >= 0.5 } ?? false
      var fields: [String: Any] = ["id": stage.id, "bypassed": bypass, "latency_frames": stage.latencyFrames]
      if let mode = modes.first(where: { $0.id == stage.id }) { fields.merge(mode.fields) { a, _ in a } }
      return fields
    }
    return [
      "client": client.name, "server": serverLabel, "sample_rate": Int(client.sampleRate),
      "buffer_frames": Int(client.events.bufferFrames.load(ordering: .relaxed)),
      "latency_frames": chain.latencyFrames, "xruns": Int(client.events.xruns.load(ordering: .relaxed)),
      "dsp_load_percent": Double(client.cpuLoadPercent), "preset": presetName,
      "muted": muteMode != nil || muted,
      "mute_mode": muteMode ?? (muted ? "ramp" : "none"),
      "cycles": Int(state.cycles.load(ordering: .relaxed)),
      "missed_cycles": Int(state.missedCycles.load(ordering: .relaxed)), "chain": stages,
    ].merging(tapStatus) { a, _ in a }.merging(loudnessStatus) { a, _ in a }
  }

  private func get(_ request: [String: JSONValue]) throws(ControlError) -> [String: Any] {
    if let key = request["key"] {
      guard let name = key.string else { throw ControlError("\"key\" must be a string") }
      guard let p = chain.parameter(name) else {
        throw ControlError("'\(name)' is not a parameter of the running chain")
      }
      return ["values": [name: Double(chain.targets.value(p.index))]]
    }
    var values: [String: Double] = [:]
    for p in chain.parameters { values[p.key] = Double(chain.targets.value(p.index)) }
    return ["values": values]
  }

  private func set(_ request: [String: JSONValue]) throws(ControlError) -> [String: Any] {
    guard let key = request["key"]?.string else { throw ControlError("\"set\" needs a \"key\" string") }
    guard let p = chain.parameter(key) else {
      throw ControlError("'\(key)' is not a parameter of the running chain")
    }
    guard p.spec.kind != .output else {
      throw ControlError("'\(key)' is read-only (a value the stage reports)")
    }
    guard let raw = request["value"] else { throw ControlError("\"set\" needs a \"value\"") }
    guard let value = raw.number.map(Float.init) ?? raw.bool.map({ $0 ? 1 : 0 }) else {
      throw ControlError("the value of '\(key)' must be a number (or true/false)")
    }
    guard value.isFinite, value >= p.spec.minimum, value <= p.spec.maximum else {
      throw ControlError(
        "\(format(value)) is outside the range of '\(key)' (\(format(p.spec.minimum)) to \(format(p.spec.maximum)))"
      )
    }
    let used = chain.set(key, value) ?? value
    return ["key": key, "value": Double(used)]
  }

  private func preset(_ request: [String: JSONValue], _ client: JackClient, _ state: ProcessState)
    throws(ControlError) -> [String: Any]
  {
    let action = request["action"]?.string ?? ""
    guard action == "load" || action == "save" else {
      throw ControlError("\"preset\" needs \"action\": \"load\" or \"save\"")
    }
    guard let name = request["name"]?.string, !name.isEmpty else {
      throw ControlError("\"preset \(action)\" needs a \"name\" string")
    }
    if action == "save" {
      let path = try PresetWriter.save(
        name, entries: entries, chain: chain, plugins: plugins, route: route?.patterns ?? [],
        inputRoute: inputRoute?.patterns ?? [], midi: midiMappings)
      Log.info("preset saved to '\(path)'")
      return ["path": path]
    }
    let previous = options.preset
    options.preset = name
    if let failure = reloadPreset(client, state: state, reason: "control") {
      options.preset = previous
      throw ControlError(failure)
    }
    return ["preset": presetName]
  }

  private func mute(_ request: [String: JSONValue], _ client: JackClient, _ state: ProcessState)
    throws(ControlError) -> [String: Any]
  {
    let mode = request["mode"]?.string ?? "ramp"
    guard ["ramp", "bypass", "suspend"].contains(mode) else {
      throw ControlError("mute mode '\(mode)' is not one of ramp, bypass, suspend")
    }
    if let current = muteMode, current != mode { _ = unmute(client, state) }
    guard muteMode == nil else { return ["muted": true, "mode": mode] }
    switch mode {
    case "bypass":
      state.dryTarget.store(1, ordering: .relaxed)  // the dry input, crossfaded, at the volume
    case "suspend":
      state.ramp.fadeOut()
      _ = waitUntilSilent(state)
      book.record(client)
      suspended = true
      client.deactivate()
    default:
      state.ramp.fadeOut()
    }
    muteMode = mode
    muted = mode != "bypass"
    Log.info("output muted (control, mode \(mode))")
    stream.emit("muted", ["reason": .string("control"), "mode": .string(mode)])
    return ["muted": true, "mode": mode]
  }

  func unmute(_ client: JackClient, _ state: ProcessState) -> [String: Any] {
    switch muteMode {
    case "bypass":
      state.dryTarget.store(0, ordering: .relaxed)
    case "suspend":
      state.ramp.rewind()
      state.ramp.fadeIn()
      do { try client.reactivate() } catch { Log.error(error.description) }
      suspended = false
      book.restore(client)
      route?.apply(client, book: book)
      inputRoute?.apply(client, book: book)
    default:
      if muted { state.ramp.fadeIn() }
    }
    if muteMode != nil || muted {
      Log.info("output unmuted (control; ramping up over 1 s)")
      stream.emit("unmuted", ["reason": .string("control")])
    }
    muteMode = nil
    muted = false
    return ["muted": false]
  }

  private func connections(_ client: JackClient) -> [String: [String]] {
    var result: [String: [String]] = [:]
    for (port, _) in client.allPortNames { result[port] = client.connections(of: port) }
    return result
  }

  static func encode(_ object: [String: Any]) -> String {
    guard
      let data = try? JSONSerialization.data(
        withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    else { return ControlServer.error("internal error: the response could not be encoded") }
    return String(decoding: data, as: UTF8.self)
  }
}

/// A control request that cannot be done; the message is one sentence.
struct ControlError: Error {
  let message: String
  init(_ message: String) { self.message = message }
}
