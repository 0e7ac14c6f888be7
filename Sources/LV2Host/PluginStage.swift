import CLilv
import DSP
import Foundation
import Synchronization

/// A plugin entry of a chain, as a preset or `--plugin` describes it.
///
/// Thread: any (value type).
public struct PluginDescription: Sendable, Equatable {
  /// The stage id (the first part of its parameter keys).
  public var id: String
  public var uri: String
  /// Initial control values by port symbol.
  public var values: [String: Float]
  /// An LV2 preset to apply, by URI or label.
  public var preset: String?
  /// A saved plugin state (a `state.ttl` written by `PluginStage.saveState`), applied after
  /// the preset.
  public var statePath: String?
  public var bypassed: Bool

  public init(
    id: String, uri: String, values: [String: Float] = [:], preset: String? = nil, bypassed: Bool = false
  ) {
    self.id = id
    self.uri = uri
    self.values = values
    self.preset = preset
    self.bypassed = bypassed
  }
}

/// An LV2 plugin in the chain: one instance (stereo, or mono in / stereo out) or two (a mono
/// plugin, one per channel), instantiated, configured and activated off the audio thread.
///
/// Thread: created and destroyed off the audio thread; `process` on the audio thread.
public final class PluginStage: ChainStage, @unchecked Sendable {
  public let id: String
  public let info: PluginInfo
  /// The parameters this stage adds to the chain, in order: control inputs, `bypass`, then
  /// control outputs (read-only).
  public let parameterSpecs: [(ParameterSpec, Float)]
  /// Set by `ChainAssembly` through `bind(firstParameter:)`.
  private(set) var firstParameter = 0

  let instances: [UnsafeMutablePointer<LilvInstance>]
  let features: [HostFeatures]
  let capacity: Int
  let sampleRate: Double
  /// Per instance, one Float per port (control values; unused for other ports).
  let controls: [UnsafeMutablePointer<Float>]
  /// Per instance: the audio input and output buffers, in port order.
  let audioIn: [[UnsafeMutablePointer<Float>]]
  let audioOut: [[UnsafeMutablePointer<Float>]]
  /// Per instance: atom input / output port buffers and their byte capacities.
  let atomIn: [[(UnsafeMutableRawPointer, Int)]]
  let atomOut: [[(UnsafeMutableRawPointer, Int)]]
  let controlInputs: [Int]
  let controlOutputs: [Int]
  /// Per control input: whether it is smoothed (continuous) or applied at once.
  let smoothed: UnsafeMutablePointer<Bool>
  let current: UnsafeMutablePointer<Float>
  /// The control values the audio thread last applied, one atomic per control input (as Float
  /// bit patterns), for `saveState` on another thread; `current` is the audio thread's own.
  let appliedControls: UnsafeMutablePointer<Atomic<UInt32>>
  /// The `lv2:latency` output port, or -1; its value is published to `reportedLatency` by the
  /// audio thread after each run, for `latencyFrames` on other threads.
  let latencyPort: Int
  let reportedLatency: Atomic<UInt32>
  let dryLeft: UnsafeMutablePointer<Float>
  let dryRight: UnsafeMutablePointer<Float>
  var bypassMix: Float
  /// The control smoothing coefficient for blocks of `smoothingFrames` (recomputed on change).
  var smoothingAlpha: Float = 1
  var smoothingFrames = 0
  let bypassStep: Float
  let sequenceType: UInt32
  let chunkType: UInt32
  /// The same storage as flat pointers, for the audio thread (no array access, no retains).
  let rt: RealtimeView
  private let otherBuffers: [UnsafeMutablePointer<Float>]
  private let world: LV2World

  /// Instantiates, configures and activates the plugin. Not real-time.
  public init(
    _ description: PluginDescription, world: LV2World, settings: HostSettings, stateDirectory: String
  ) throws(PluginError) {
    guard let plugin = world.plugin(description.uri), let info = world.info(uri: description.uri) else {
      throw .unknownURI(description.uri)
    }
    if let reason = info.unsupportedReason { throw .unsupported(uri: info.uri, reason: reason) }
    if let missing = info.requiredFeatures.first(where: { !settings.provides($0) }) {
      throw .unsupported(
        uri: info.uri, reason: "it requires the feature \(missing), which LiveMic cannot provide here")
    }
    let inputs = info.ports.filter { $0.kind == .control && $0.isInput }
    for (symbol, value) in description.values.sorted(by: { $0.key < $1.key }) {
      guard let port = inputs.first(where: { $0.symbol == symbol }) else {
        throw .unknownControl(id: description.id, symbol: symbol, known: inputs.map(\.symbol))
      }
      guard value >= port.minimum && value <= port.maximum else {
        throw .outOfRange(
          id: description.id, symbol: symbol, value: value, range: port.minimum...port.maximum)
      }
    }
    self.world = world
    id = description.id
    self.info = info
    capacity = max(settings.maxBlockFrames, 1)
    sampleRate = settings.sampleRate
    sequenceType = world.urids.map(URI.atomSequence)
    chunkType = world.urids.map(URI.atomChunk)
    controlInputs = inputs.map(\.index)
    controlOutputs = info.ports.filter { $0.kind == .control && !$0.isInput }.map(\.index)

    // Instances, each with its own features (worker, log queue) and port storage.
    let count = info.instancesOnStereoChain
    var instances: [UnsafeMutablePointer<LilvInstance>] = []
    var features: [HostFeatures] = []
    var controls: [UnsafeMutablePointer<Float>] = []
    var audioIn: [[UnsafeMutablePointer<Float>]] = []
    var audioOut: [[UnsafeMutablePointer<Float>]] = []
    var atomIn: [[(UnsafeMutableRawPointer, Int)]] = []
    var atomOut: [[(UnsafeMutableRawPointer, Int)]] = []
    var other: [UnsafeMutablePointer<Float>] = []
    for k in 0..<count {
      let f = HostFeatures(world: world, settings: settings, stateDirectory: stateDirectory + "/\(k)")
      guard let instance = lilv_plugin_instantiate(plugin, settings.sampleRate, f.features) else {
        for i in instances { lilv_instance_free(i) }
        throw .instantiation(uri: info.uri)
      }
      let control = UnsafeMutablePointer<Float>.allocate(capacity: max(info.ports.count, 1))
      control.initialize(repeating: 0, count: max(info.ports.count, 1))
      var ins: [UnsafeMutablePointer<Float>] = []
      var outs: [UnsafeMutablePointer<Float>] = []
      var aIn: [(UnsafeMutableRawPointer, Int)] = []
      var aOut: [(UnsafeMutableRawPointer, Int)] = []
      for port in info.ports {
        let index = UInt32(port.index)
        switch port.kind {
        case .control:
          control[port.index] = port.defaultValue
          lilv_instance_connect_port(instance, index, control + port.index)
        case .audio, .cv:
          let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
          buffer.initialize(repeating: 0, count: capacity)
          if port.kind == .audio {
            if port.isInput { ins.append(buffer) } else { outs.append(buffer) }
          } else {
            other.append(buffer)  // CV: silent in, ignored out
          }
          lilv_instance_connect_port(instance, index, buffer)
        case .atom:
          let bytes = max(port.minimumSize ?? 0, 8192)
          let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
          buffer.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
          port.isInput ? aIn.append((buffer, bytes)) : aOut.append((buffer, bytes))
          lilv_instance_connect_port(instance, index, buffer)
        case .unknown:
          lilv_instance_connect_port(instance, index, nil)
        }
      }
      instances.append(instance)
      features.append(f)
      controls.append(control)
      audioIn.append(ins)
      audioOut.append(outs)
      atomIn.append(aIn)
      atomOut.append(aOut)
    }
    self.instances = instances
    self.features = features
    self.controls = controls
    self.audioIn = audioIn
    self.audioOut = audioOut
    self.atomIn = atomIn
    self.atomOut = atomOut
    otherBuffers = other

    // Initial values: defaults, then the plugin's default state, then the LV2 preset, then the
    // values the description names.
    var initial: [String: Float] = [:]
    for port in inputs { initial[port.symbol] = port.defaultValue }
    let restore = StateRestore(
      values: initial, intTypes: [world.urids.map(URI.atomInt), world.urids.map(URI.atomBool)])
    if info.requiredFeatures.contains(URI.loadDefaultState)
      || info.optionalFeatures.contains(URI.loadDefaultState)
    {
      if let state = lilv_state_new_from_world(
        world.world, world.urids.mapFeature, lilv_plugin_get_uri(plugin))
      {
        for k in 0..<count { restore.apply(state, to: instances[k], features: features[k].features) }
        lilv_state_free(state)
      }
    }
    if let name = description.preset {
      guard let preset = info.presets.first(where: { $0.uri == name || $0.label == name }) else {
        Self.free(instances)
        throw .unknownPreset(uri: info.uri, preset: name, available: info.presets.map(\.label))
      }
      let node = world.node(preset.uri)
      lilv_world_load_resource(world.world, node)
      guard let state = lilv_state_new_from_world(world.world, world.urids.mapFeature, node) else {
        Self.free(instances)
        throw .unknownPreset(uri: info.uri, preset: name, available: info.presets.map(\.label))
      }
      for k in 0..<count { restore.apply(state, to: instances[k], features: features[k].features) }
      lilv_state_free(state)
    }
    if let path = description.statePath {
      guard let state = lilv_state_new_from_file(world.world, world.urids.mapFeature, nil, path) else {
        Self.free(instances)
        throw .unreadableState(path: path)
      }
      for k in 0..<count { restore.apply(state, to: instances[k], features: features[k].features) }
      lilv_state_free(state)
    }
    for (symbol, value) in description.values { restore.values[symbol] = value }

    // Parameters: control inputs, bypass, control outputs.
    var specs: [(ParameterSpec, Float)] = []
    smoothed = .allocate(capacity: max(inputs.count, 1))
    current = .allocate(capacity: max(inputs.count, 1))
    appliedControls = .allocate(capacity: max(inputs.count, 1))
    for (i, port) in inputs.enumerated() {
      let spec = Self.spec(for: port)
      let value = spec.sanitize(restore.values[port.symbol] ?? port.defaultValue)
      specs.append((spec, value))
      smoothed[i] = spec.kind == .continuous
      current[i] = value
      (appliedControls + i).initialize(to: Atomic(value.bitPattern))
      for c in controls { c[port.index] = value }
    }
    specs.append((BuiltinUnits.bypassParameter, description.bypassed ? 1 : 0))
    for index in controlOutputs {
      let port = info.ports[index]
      specs.append(
        (
          ParameterSpec(
            port.symbol, unit: port.unit ?? "", range: port.minimum...port.maximum,
            default: port.defaultValue, kind: .output, "Reported by the plugin: \(port.name)."),
          port.defaultValue
        ))
    }
    parameterSpecs = specs
    bypassMix = description.bypassed ? 1 : 0
    latencyPort = info.latencyPort ?? -1
    reportedLatency = Atomic(info.latencyPort.map { controls[0][$0] }?.bitPattern ?? 0)
    bypassStep = Float(1 / max(settings.sampleRate * 0.01, 1))
    dryLeft = .allocate(capacity: capacity)
    dryRight = .allocate(capacity: capacity)

    // Workers, then activation.
    var workers: [Bool] = []
    for (k, instance) in instances.enumerated() {
      if let raw = lilv_instance_get_extension_data(instance, URI.workerInterface) {
        features[k].worker.start(
          interface: raw.assumingMemoryBound(to: LV2_Worker_Interface.self),
          handle: lilv_instance_get_handle(instance))
        workers.append(true)
      } else {
        workers.append(false)
      }
      lilv_instance_activate(instance)
    }
    rt = RealtimeView(
      instances: instances, workers: zip(features, workers).map { $1 ? $0.worker : nil }, controls: controls,
      audioIn: audioIn, audioOut: audioOut, atomIn: atomIn, atomOut: atomOut,
      controlInputs: inputs.map(\.index),
      controlOutputs: info.ports.filter { $0.kind == .control && !$0.isInput }.map(\.index))
  }

  deinit {
    // The worker thread is joined first: it calls the plugin's `work`, which must not run
    // during or after `deactivate`.
    for (k, instance) in instances.enumerated() {
      features[k].worker.stop()
      lilv_instance_deactivate(instance)
      lilv_instance_free(instance)
    }
    for c in controls { c.deallocate() }
    for list in audioIn + audioOut { for b in list { b.deallocate() } }
    for b in otherBuffers { b.deallocate() }
    for list in atomIn + atomOut { for (b, _) in list { b.deallocate() } }
    rt.deallocate()
    smoothed.deallocate()
    current.deallocate()
    appliedControls.deinitialize(count: controlInputs.count)
    appliedControls.deallocate()
    dryLeft.deallocate()
    dryRight.deallocate()
  }

  private static func free(_ instances: [UnsafeMutablePointer<LilvInstance>]) {
    for i in instances { lilv_instance_free(i) }
  }

  /// The chain parameter for a control input port: toggles, enumerations (scale points with
  /// `lv2:enumeration`) and integers apply at once; the rest is smoothed.
  static func spec(for port: PortInfo) -> ParameterSpec {
    let kind: ParameterKind
    if port.toggled {
      kind = .toggle
    } else if port.enumeration && !port.scalePoints.isEmpty {
      kind = .choice(port.scalePoints.map(\.value))
    } else if port.integer {
      kind = .integer
    } else {
      kind = .continuous
    }
    let range = port.toggled ? Float(0)...1 : port.minimum...port.maximum
    return ParameterSpec(
      port.symbol, unit: port.unit ?? "", range: range, default: port.defaultValue, kind: kind,
      port.name.isEmpty ? "\(port.symbol)." : "\(port.name).")
  }

  /// Called by the chain builder with the index of this stage's first parameter.
  public func bind(firstParameter: Int) { self.firstParameter = firstParameter }

  public func prepare(sampleRate: Double, maxFrames: Int) {}

  /// Plugins keep their own state; there is nothing to clear without re-activating.
  /// - Realtime: safe
  public func reset() {}

  /// The latency the plugin reports on its `lv2:latency` output, in frames (as of its last
  /// run; 0 for a value that is not a finite, non-negative frame count). Any thread.
  public var latencyFrames: Int {
    guard latencyPort >= 0 else { return 0 }
    let frames = Float(bitPattern: reportedLatency.load(ordering: .relaxed)).rounded()
    return frames.isFinite && frames > 0 ? Int(min(frames, 16_777_216)) : 0
  }

  /// Whether the plugin keeps state beyond its control ports (it has the state interface).
  public var hasState: Bool { lilv_instance_get_extension_data(instances[0], URI.stateInterface) != nil }

  /// Saves the plugin's state (its own, plus the control values) as `state.ttl` in `directory`
  /// and returns that file's path. Off the audio thread, while the plugin runs, as hosts do.
  public func saveState(to directory: String) throws(PluginError) -> String {
    guard let plugin = world.plugin(info.uri) else { throw .unknownURI(info.uri) }
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let values = PortValues(
      symbols: info.ports.filter { $0.kind == .control && $0.isInput }.map(\.symbol), source: appliedControls)
    values.load()
    let box = Unmanaged.passRetained(values)
    defer { box.release() }
    values.floatType = world.urids.map(URI.atomFloat)
    guard
      let state = lilv_state_new_from_instance(
        plugin, instances[0], world.urids.mapFeature, nil, directory, directory, directory,
        { symbol, userData, size, type in
          guard let symbol, let userData else { return nil }
          let values = Unmanaged<PortValues>.fromOpaque(userData).takeUnretainedValue()
          guard let i = values.index[String(cString: symbol)] else { return nil }
          size?.pointee = 4
          type?.pointee = values.floatType
          return UnsafeRawPointer(values.storage + i)
        }, box.toOpaque(), 0, features[0].features)
    else { throw .unreadableState(path: directory) }
    defer { lilv_state_free(state) }
    guard
      lilv_state_save(
        world.world, world.urids.mapFeature, world.urids.unmapFeature, state, nil, directory, "state.ttl")
        == 0
    else { throw .unreadableState(path: directory + "/state.ttl") }
    return directory + "/state.ttl"
  }

  /// Log lines the plugin instances wrote since the last call. Off the audio thread.
  public func drainLog() -> [String] { features.flatMap { $0.drainLog(map: world.urids) } }
}

/// A plugin stage's audio-thread storage as plain pointers and counts.
struct RealtimeView {
  let instance0: UnsafeMutablePointer<LilvInstance>
  let instance1: UnsafeMutablePointer<LilvInstance>?
  let worker0: Unmanaged<PluginWorker>?
  let worker1: Unmanaged<PluginWorker>?
  let controls0: UnsafeMutablePointer<Float>
  let controls1: UnsafeMutablePointer<Float>?
  /// Audio buffers: for two mono instances, instance 0 is left and instance 1 right; for a
  /// mono-in plugin `inputRight` is nil (it gets the mean of both channels).
  let inputLeft: UnsafeMutablePointer<Float>
  let inputRight: UnsafeMutablePointer<Float>?
  let outputLeft: UnsafeMutablePointer<Float>
  let outputRight: UnsafeMutablePointer<Float>
  let atomInputs: UnsafeMutablePointer<UnsafeMutableRawPointer>
  let atomInputCount: Int
  let atomOutputs: UnsafeMutablePointer<(UnsafeMutableRawPointer, Int)>
  let atomOutputCount: Int
  let controlInputs: UnsafeMutablePointer<Int>
  let controlInputCount: Int
  let controlOutputs: UnsafeMutablePointer<Int>
  let controlOutputCount: Int

  init(
    instances: [UnsafeMutablePointer<LilvInstance>], workers: [PluginWorker?],
    controls: [UnsafeMutablePointer<Float>],
    audioIn: [[UnsafeMutablePointer<Float>]], audioOut: [[UnsafeMutablePointer<Float>]],
    atomIn: [[(UnsafeMutableRawPointer, Int)]], atomOut: [[(UnsafeMutableRawPointer, Int)]],
    controlInputs inputs: [Int], controlOutputs outputs: [Int]
  ) {
    let two = instances.count == 2
    instance0 = instances[0]
    instance1 = two ? instances[1] : nil
    worker0 = workers[0].map { Unmanaged.passUnretained($0) }
    worker1 = two ? workers[1].map { Unmanaged.passUnretained($0) } : nil
    controls0 = controls[0]
    controls1 = two ? controls[1] : nil
    if two {
      (inputLeft, inputRight) = (audioIn[0][0], audioIn[1][0])
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[1][0])
    } else {
      inputLeft = audioIn[0][0]
      inputRight = audioIn[0].count > 1 ? audioIn[0][1] : nil
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[0][1])
    }
    let ins = atomIn.flatMap { $0.map(\.0) }
    atomInputCount = ins.count
    atomInputs = .allocate(capacity: max(ins.count, 1))
    for (i, p) in ins.enumerated() { atomInputs[i] = p }
    let outs = atomOut.flatMap { $0 }
    atomOutputCount = outs.count
    atomOutputs = .allocate(capacity: max(outs.count, 1))
    for (i, p) in outs.enumerated() { (atomOutputs + i).initialize(to: p) }
    controlInputCount = inputs.count
    controlInputs = .allocate(capacity: max(controlInputCount, 1))
    for (i, p) in inputs.enumerated() { controlInputs[i] = p }
    controlOutputCount = outputs.count
    controlOutputs = .allocate(capacity: max(controlOutputCount, 1))
    for (i, p) in outputs.enumerated() { controlOutputs[i] = p }
  }

  func deallocate() {
    atomInputs.deallocate()
    atomOutputs.deallocate()
    controlInputs.deallocate()
    controlOutputs.deallocate()
  }
}

/// Control values by symbol, in stable storage for lilv's port-value callback.
final class PortValues {
  var index: [String: Int] = [:]
  let storage: UnsafeMutablePointer<Float>
  private let count: Int
  private let source: UnsafeMutablePointer<Atomic<UInt32>>
  var floatType: UInt32 = 0

  /// `symbols` in control-input order; `source` the stage's applied values in the same order.
  init(symbols: [String], source: UnsafeMutablePointer<Atomic<UInt32>>) {
    count = symbols.count
    storage = .allocate(capacity: max(count, 1))
    self.source = source
    for (i, symbol) in symbols.enumerated() { index[symbol] = i }
  }

  /// Copies the values the audio thread last applied (each one atomically; together they may
  /// span two cycles while a control is being smoothed).
  func load() {
    for i in 0..<count { storage[i] = Float(bitPattern: source[i].load(ordering: .relaxed)) }
  }

  deinit { storage.deallocate() }
}

/// Applies an LV2 state (preset) to an instance, collecting port values by symbol.
final class StateRestore {
  var values: [String: Float]
  private let intTypes: Set<UInt32>

  init(values: [String: Float], intTypes: Set<UInt32>) {
    self.values = values
    self.intTypes = intTypes
  }

  func apply(
    _ state: OpaquePointer, to instance: UnsafeMutablePointer<LilvInstance>,
    features: UnsafePointer<UnsafePointer<LV2_Feature>?>
  ) {
    lilv_state_restore(
      state, instance,
      { symbol, userData, value, size, type in
        guard let symbol, let userData, let value else { return }
        let restore = Unmanaged<StateRestore>.fromOpaque(userData).takeUnretainedValue()
        let v: Float
        switch size {
        case 4 where restore.isInt(type): v = Float(value.load(as: Int32.self))
        case 4: v = value.load(as: Float.self)
        case 8: v = Float(value.load(as: Double.self))
        default: return
        }
        restore.values[String(cString: symbol)] = v
      }, Unmanaged.passUnretained(self).toOpaque(), 0, features)
  }

  func isInt(_ type: UInt32) -> Bool { intTypes.contains(type) }
}
