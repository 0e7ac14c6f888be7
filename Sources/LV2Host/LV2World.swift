import CLilv
import Foundation

/// The installed LV2 plugins (lilv's world) and the host's URID map.
///
/// Loading scans every bundle on `LV2_PATH` (lilv's default path when unset), once.
/// Thread: any non-real-time thread. lilv's world is not thread-safe (loading a preset adds to
/// its model while another thread may walk it), so every use of it holds `access`.
public final class LV2World: @unchecked Sendable {
  let world: OpaquePointer
  /// Held around every use of `world` and `nodes` (recursive: the methods call each other).
  let access = NSRecursiveLock()
  /// The URID map every plugin of this world shares.
  public let urids = URIDMap()
  private var nodes: [String: OpaquePointer] = [:]

  public init() {
    world = lilv_world_new()
    lilv_world_load_all(world)
  }

  deinit {
    for node in nodes.values { lilv_node_free(node) }
    lilv_world_free(world)
  }

  /// A cached node for `uri` (owned by the world object).
  func node(_ uri: String) -> OpaquePointer {
    access.lock()
    defer { access.unlock() }
    if let n = nodes[uri] { return n }
    guard let n = lilv_new_uri(world, uri) else {
      preconditionFailure("lilv could not make a node for \(uri)")
    }
    nodes[uri] = n
    return n
  }

  /// The plugin with `uri`, if installed.
  func plugin(_ uri: String) -> OpaquePointer? {
    access.lock()
    defer { access.unlock() }
    guard let all = lilv_world_get_all_plugins(world) else { return nil }
    let n = lilv_new_uri(world, uri)
    defer { lilv_node_free(n) }
    return lilv_plugins_get_by_uri(all, n)
  }

  /// Every installed plugin's description, sorted by name.
  public func allPlugins() -> [PluginInfo] {
    access.lock()
    defer { access.unlock() }
    guard let all = lilv_world_get_all_plugins(world) else { return [] }
    var infos: [PluginInfo] = []
    var i = lilv_plugins_begin(all)
    while !lilv_plugins_is_end(all, i) {
      if let p = lilv_plugins_get(all, i) { infos.append(info(p)) }
      i = lilv_plugins_next(all, i)
    }
    return infos.sorted { ($0.name.lowercased(), $0.uri) < ($1.name.lowercased(), $1.uri) }
  }

  /// The description of the plugin with `uri`, if installed.
  public func info(uri: String) -> PluginInfo? { plugin(uri).map(info) }

  func info(_ p: OpaquePointer) -> PluginInfo {
    access.lock()
    defer { access.unlock() }
    let uri = string(lilv_plugin_get_uri(p)) ?? "?"
    let nameNode = lilv_plugin_get_name(p)
    defer { lilv_node_free(nameNode) }
    let className = lilv_plugin_get_class(p).flatMap { string(lilv_plugin_class_get_label($0)) } ?? "Plugin"
    var ports: [PortInfo] = []
    let count = Int(lilv_plugin_get_num_ports(p))
    var mins = [Float](repeating: .nan, count: count)
    var maxs = [Float](repeating: .nan, count: count)
    var defs = [Float](repeating: .nan, count: count)
    lilv_plugin_get_port_ranges_float(p, &mins, &maxs, &defs)
    for index in 0..<count {
      guard let port = lilv_plugin_get_port_by_index(p, UInt32(index)) else { continue }
      ports.append(portInfo(p, port, index: index, min: mins[index], max: maxs[index], def: defs[index]))
    }
    let required = strings(lilv_plugin_get_required_features(p))
    let optional = strings(lilv_plugin_get_optional_features(p))
    let audioIn = ports.filter { $0.kind == .audio && $0.isInput }.count
    let sidechains = ports.filter { $0.kind == .audio && $0.isInput && $0.isSidechain }.count
    let audioOut = ports.filter { $0.kind == .audio && !$0.isInput }.count
    var reason: String?
    if let missing = required.first(where: {
      !URI.alwaysProvided.contains($0) && !HostSettings.conditional.contains($0)
    }) {
      reason = "it requires the feature \(missing), which LiveMic does not provide"
    } else if let layout = PluginInfo.layoutProblem(
      inputs: audioIn - sidechains, outputs: audioOut, sidechains: sidechains)
    {
      reason = layout
    } else if let odd = ports.first(where: { $0.kind == .unknown && !$0.connectionOptional }) {
      reason = "its port '\(odd.symbol)' is of a type LiveMic does not support"
    }
    return PluginInfo(
      uri: uri, name: string(nameNode) ?? uri, className: className, audioInputs: audioIn,
      audioOutputs: audioOut, ports: ports, presets: presets(p), properties: properties(p),
      requiredFeatures: required, optionalFeatures: optional,
      latencyPort: lilv_plugin_has_latency(p) ? Int(lilv_plugin_get_latency_port_index(p)) : nil,
      unsupportedReason: reason)
  }

  /// The plugin's `patch:writable` and `patch:readable` properties (a readable one that is also
  /// writable is listed once), each with its label and range.
  private func properties(_ p: OpaquePointer) -> [PropertyInfo] {
    var result: [PropertyInfo] = []
    for (predicate, writable) in [(URI.patchWritable, true), (URI.patchReadable, false)] {
      for uri in strings(lilv_world_find_nodes(world, lilv_plugin_get_uri(p), node(predicate), nil))
      where !result.contains(where: { $0.uri == uri }) {
        let subject = node(uri)
        func value(_ predicate: String) -> String? {
          guard let n = lilv_world_get(world, subject, node(predicate), nil) else { return nil }
          defer { lilv_node_free(n) }
          return string(n)
        }
        let name = uri.split(whereSeparator: { $0 == "#" || $0 == "/" }).last.map(String.init) ?? uri
        result.append(
          PropertyInfo(
            uri: uri, name: name, label: value(URI.rdfsLabel) ?? name, range: value(URI.rdfsRange) ?? "",
            writable: writable))
      }
    }
    return result.sorted { $0.name < $1.name }
  }

  private func portInfo(
    _ p: OpaquePointer, _ port: OpaquePointer, index: Int, min: Float, max: Float, def: Float
  ) -> PortInfo {
    func isA(_ uri: String) -> Bool { lilv_port_is_a(p, port, node(uri)) }
    func has(_ uri: String) -> Bool { lilv_port_has_property(p, port, node(uri)) }
    let kind: PortKind =
      isA(URI.audioPort)
      ? .audio
      : isA(URI.controlPort) ? .control : isA(URI.atomPort) ? .atom : isA(URI.cvPort) ? .cv : .unknown
    let nameNode = lilv_port_get_name(p, port)
    defer { lilv_node_free(nameNode) }
    var points: [PortInfo.ScalePoint] = []
    if let sps = lilv_port_get_scale_points(p, port) {
      var i = lilv_scale_points_begin(sps)
      while !lilv_scale_points_is_end(sps, i) {
        if let sp = lilv_scale_points_get(sps, i) {
          points.append(
            .init(
              label: string(lilv_scale_point_get_label(sp)) ?? "",
              value: lilv_node_as_float(lilv_scale_point_get_value(sp))))
        }
        i = lilv_scale_points_next(sps, i)
      }
      lilv_scale_points_free(sps)
    }
    points.sort { $0.value < $1.value }
    var unit: String?
    if let u = lilv_port_get(p, port, node(URI.unitsUnit)) {
      defer { lilv_node_free(u) }
      if let symbol = lilv_world_get(world, u, node(URI.unitsSymbol), nil) {
        unit = string(symbol)
        lilv_node_free(symbol)
      } else if let text = string(u) {
        unit = text.split(separator: "#").last.map(String.init)
      }
    }
    var minimumSize: Int?
    if let size = lilv_port_get(p, port, node(URI.minimumSize)) {
      minimumSize = Int(lilv_node_as_int(size))
      lilv_node_free(size)
    }
    var (supportsMidi, takesMessages) = (false, false)
    if kind == .atom, let supports = lilv_port_get_value(p, port, node(URI.atomSupports)) {
      supportsMidi = lilv_nodes_contains(supports, node(URI.midiEvent))
      takesMessages = lilv_nodes_contains(supports, node(URI.patchMessage))
      lilv_nodes_free(supports)
    }
    if kind == .atom, let designation = lilv_port_get(p, port, node(URI.designation)) {
      takesMessages = takesMessages || string(designation) == URI.lv2Control
      lilv_node_free(designation)
    }
    var isSidechain = false
    if kind == .audio && isA(URI.inputPort) {
      isSidechain = has(URI.isSideChain)
      if !isSidechain, let group = lilv_port_get(p, port, node(URI.portGroup)) {
        if let main = lilv_world_get(world, group, node(URI.sideChainOf), nil) {
          isSidechain = true
          lilv_node_free(main)
        }
        lilv_node_free(group)
      }
      if !isSidechain {
        let symbol = (string(lilv_port_get_symbol(p, port)) ?? "").lowercased()
        let label = (string(nameNode) ?? "").lowercased()
        isSidechain =
          symbol.contains("sidechain") || symbol.hasPrefix("sc_") || label.contains("sidechain")
          || label.contains("side chain") || label.contains("side-chain")
      }
    }
    let toggled = has(URI.toggled)
    var lo = min.isNaN ? 0 : min
    var hi = max.isNaN ? (toggled ? 1 : lo + 1) : max
    if hi < lo { swap(&lo, &hi) }
    let d = def.isNaN ? lo : Swift.min(Swift.max(def, lo), hi)
    let latency = has(URI.reportsLatency) || lilv_port_has_property(p, port, node(URI.reportsLatency))
    return PortInfo(
      index: index, symbol: string(lilv_port_get_symbol(p, port)) ?? "port\(index)",
      name: string(nameNode) ?? "", kind: kind, isInput: isA(URI.inputPort), minimum: lo, maximum: hi,
      defaultValue: d, unit: unit, toggled: toggled, integer: has(URI.integer),
      logarithmic: has(URI.logarithmic),
      scalePoints: points, enumeration: has(URI.enumeration), reportsLatency: latency,
      connectionOptional: has(URI.connectionOptional), minimumSize: minimumSize, supportsMidi: supportsMidi,
      takesMessages: takesMessages && isA(URI.inputPort), isSidechain: isSidechain)
  }

  private func presets(_ p: OpaquePointer) -> [PresetInfo] {
    guard let related = lilv_plugin_get_related(p, node(URI.presetClass)) else { return [] }
    defer { lilv_nodes_free(related) }
    var result: [PresetInfo] = []
    var i = lilv_nodes_begin(related)
    while !lilv_nodes_is_end(related, i) {
      if let preset = lilv_nodes_get(related, i) {
        lilv_world_load_resource(world, preset)
        var label = string(preset) ?? ""
        if let l = lilv_world_get(world, preset, node(URI.rdfsLabel), nil) {
          label = string(l) ?? label
          lilv_node_free(l)
        }
        result.append(PresetInfo(uri: string(preset) ?? "", label: label))
      }
      i = lilv_nodes_next(related, i)
    }
    return result.sorted { $0.label < $1.label }
  }

  func string(_ n: OpaquePointer?) -> String? {
    guard let n, let s = lilv_node_as_string(n) else { return nil }
    return String(cString: s)
  }

  private func strings(_ nodes: UnsafeMutableRawPointer?) -> [String] {
    guard let nodes else { return [] }
    defer { lilv_nodes_free(nodes) }
    var result: [String] = []
    var i = lilv_nodes_begin(nodes)
    while !lilv_nodes_is_end(nodes, i) {
      if let s = string(lilv_nodes_get(nodes, i)) { result.append(s) }
      i = lilv_nodes_next(nodes, i)
    }
    return result
  }
}
