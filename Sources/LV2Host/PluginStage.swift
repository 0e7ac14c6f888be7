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
  /// Whether the plugin gets the MIDI that reaches `midi_in` (when it has a MIDI input):
  /// the preset entry's `"midi"`, default true.
  public var midi = true
  /// Properties to set with `patch:Set` once the plugin runs, by name (or URI): text read as
  /// the property's type (`"ir": "hall.wav"`).
  public var properties: [String: String] = [:]
  /// The folder a relative path among `properties` is relative to (the preset file's).
  public var propertiesFolder: String?
  /// What feeds the plugin's sidechain inputs, when it has any (the preset entry's
  /// `"sidechain"`; default: the chain's input).
  public var sidechain: SignalSource = .input
  /// Whether the plugin processes the music bed instead of the voice (the entry's `"on":
  /// "music"`; its sidechain then defaults to the voice as it reaches the plugin).
  public var onMusic = false
  /// What feeds each CV input, by port symbol (the preset entry's `"cv"`); an input not named
  /// keeps its port's default.
  public var cv: [String: CVSource] = [:]
  /// The built-in unit to run instead when the plugin cannot be made (an `automatic` mode's
  /// choice; nil: the stage is left out).
  public var fallback: StageDescription?

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
public final class PluginStage: Stage, @unchecked Sendable {
  public let info: PluginInfo
  /// The parameters this stage adds to the chain, in order: control inputs, `bypass`, then
  /// control outputs (read-only): the (left) instance's, then, for a mono plugin on the stereo
  /// chain, the right instance's as `SYMBOL_right` (the left's again while one instance serves
  /// both channels).
  public let parameterSpecs: [(ParameterSpec, Float)]
  /// Set by `ChainAssembly` through `bind(firstParameter:)`.
  var firstParameter: Int { live.pointee.firstParameter }

  /// The instances, their features and port storage.
  let storage: PluginInstances
  var instances: [UnsafeMutablePointer<LilvInstance>] { storage.instances }
  var features: [HostFeatures] { storage.features }
  let capacity: Int
  let sampleRate: Double
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
  /// What the audio thread changes from one run to the next, behind a pointer: a stored `var`
  /// of this class would cost a dynamic exclusivity check on every access.
  struct LiveState {
    var firstParameter = 0
    /// The bypass crossfade's position (1: bypassed).
    var bypassMix: Float
    /// The control smoothing coefficient for the chunk's length.
    var smoothing: Smoothing.Coefficient
    /// The chain's MIDI events (`attach(midi:)`), for a stage that takes MIDI.
    var midi: Unmanaged<MidiEvents>?
    /// The sidechain's feed (`attach(feeds:)`), for a plugin with sidechain inputs.
    var sidechainFeed: Unmanaged<SignalFeed>?
  }
  let live: UnsafeMutablePointer<LiveState>
  let bypassStep: Float
  let sequenceType: UInt32
  let chunkType: UInt32
  let midiEventType: UInt32
  let objectType: UInt32
  let blankType: UInt32
  /// Whether the plugin takes MIDI and its entry lets it have it.
  let takesMidi: Bool
  /// What feeds the sidechain inputs (nil without any).
  let sidechainSource: SignalSource?
  /// Whether the plugin runs on the music bed (`PluginDescription.onMusic`).
  let runsOnMusic: Bool
  /// The CV ports (`PluginStage+CV.swift`).
  let cv: CVPlan
  /// Where the CV outputs' parameters start, counted from the first control output's.
  let cvOutputOffset: Int
  /// Messages between the supervisor and the plugin (`PluginStage+Messages.swift`).
  let messages: PluginMessages
  /// The same storage as flat pointers, for the audio thread (no array access, no retains).
  let rt: RealtimeView
  let world: LV2World

  /// Instantiates, configures and activates the plugin. Not real-time.
  public init(
    _ description: PluginDescription, world: LV2World, settings: HostSettings, stateDirectory: String
  ) throws(PluginError) {
    world.access.lock()  // instantiation and state loading use the world
    defer { world.access.unlock() }
    let (plugin, info) = try Self.check(description, world: world, settings: settings)
    let inputs = info.ports.filter { $0.kind == .control && $0.isInput }
    self.world = world
    self.info = info
    capacity = max(settings.maxBlockFrames, 1)
    sampleRate = settings.sampleRate
    sequenceType = world.urids.map(URI.atomSequence)
    chunkType = world.urids.map(URI.atomChunk)
    midiEventType = world.urids.map(URI.midiEvent)
    objectType = world.urids.map(URI.atomObject)
    blankType = world.urids.map(URI.atomBlank)
    takesMidi = description.midi && info.takesMidi
    sidechainSource = info.sidechainInputs > 0 ? description.sidechain : nil
    runsOnMusic = description.onMusic
    messages = PluginMessages(urids: world.urids)
    controlInputs = inputs.map(\.index)
    controlOutputs = info.ports.filter { $0.kind == .control && !$0.isInput }.map(\.index)

    // A mono plugin runs once per channel, or once when the channels carry the same signal.
    let sharesInstance = info.instancesOnStereoChain == 2 && settings.identicalChannels
    let made = try PluginInstances.make(
      count: sharesInstance ? 1 : info.instancesOnStereoChain, plugin: plugin, info: info, world: world,
      settings: settings, stateDirectory: stateDirectory, capacity: capacity)
    let values: [String: Float]
    do {
      values = try Self.initialValues(description, plugin: plugin, info: info, world: world, made: made)
    } catch {
      made.release(activated: false)
      throw error
    }
    storage = made

    // Parameters: control inputs, bypass, control outputs.
    smoothed = .allocate(capacity: max(inputs.count, 1))
    current = .allocate(capacity: max(inputs.count, 1))
    appliedControls = .allocate(capacity: max(inputs.count, 1))
    var specs: [(ParameterSpec, Float)] = []
    for (i, port) in inputs.enumerated() {
      let spec = Self.spec(for: port)
      let value = spec.sanitize(values[port.symbol] ?? port.defaultValue)
      specs.append((spec, value))
      smoothed[i] = spec.kind == .continuous
      current[i] = value
      (appliedControls + i).initialize(to: Atomic(value.bitPattern))
      for c in made.controls { c[port.index] = value }
    }
    specs.append((BuiltinUnits.bypassParameter, description.bypassed ? 1 : 0))
    specs += controlOutputs.map { Self.outputSpec(for: info.ports[$0]) }
    // A mono plugin on the stereo chain: the right instance's outputs too, as SYMBOL_right.
    if info.instancesOnStereoChain == 2 {
      specs += controlOutputs.map { Self.outputSpec(for: info.ports[$0], suffix: "_right") }
    }
    cvOutputOffset = controlOutputs.count * (info.instancesOnStereoChain == 2 ? 2 : 1)
    specs += Self.cvOutputSpecs(info)
    cv = CVPlan(
      cvIn: made.cvIn, cvOut: made.cvOut, sources: (try? Self.cvSources(description, info: info)) ?? [:],
      sharedInstance: sharesInstance, publishesRight: info.instancesOnStereoChain == 2)
    parameterSpecs = specs
    live = .allocate(capacity: 1)
    live.initialize(
      to: LiveState(
        bypassMix: description.bypassed ? 1 : 0,
        smoothing: Smoothing.Coefficient(sampleRate: settings.sampleRate)))
    latencyPort = info.latencyPort ?? -1
    reportedLatency = Atomic(info.latencyPort.map { made.controls[0][$0] }?.bitPattern ?? 0)
    bypassStep = Smoothing.bypassStep(sampleRate: settings.sampleRate)
    dryLeft = .allocate(capacity: capacity)
    dryRight = .allocate(capacity: capacity)
    rt = RealtimeView(
      instances: made.instances, workers: made.activate(), controls: made.controls, audioIn: made.audioIn,
      audioOut: made.audioOut, audioInPorts: made.audioInPorts, audioOutPorts: made.audioOutPorts,
      inPlace: !info.requiredFeatures.contains(URI.inPlaceBroken) && !info.isInstrument,
      copiesLeftToRight: sharesInstance,
      atomIn: made.atomIn, atomInMidi: made.atomInMidi, atomInMessages: made.atomInMessages,
      atomOut: made.atomOut, controlInputs: controlInputs,
      controlOutputs: controlOutputs, rightOutputs: info.instancesOnStereoChain == 2,
      sidechainIn: made.sidechainIn
    )
    super.init(id: description.id)
    // Checked in `check`: the properties are sent for the first runs (the warm-up) to deliver.
    for (name, text) in description.properties.sorted(by: { $0.key < $1.key }) {
      if let (property, value) = try? Self.property(
        name, text: text, of: id, info: info, folder: description.propertiesFolder)
      {
        messages.send(
          PatchMessage.set(property: world.urids.map(property.uri), value: value, urids: world.urids))
      }
    }
    if info.ports.contains(where: { $0.takesMessages }) && !info.properties.isEmpty {
      messages.send(PatchMessage.get(urids: world.urids))
    }
  }

  /// The plugin and its description, when LiveMic can host it as `description` asks: it is
  /// installed, its layout is supported, its required features are provided here, and every
  /// named control exists and is in range.
  private static func check(
    _ description: PluginDescription, world: LV2World, settings: HostSettings
  ) throws(PluginError) -> (OpaquePointer, PluginInfo) {
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
    _ = try Self.cvSources(description, info: info)
    for (name, text) in description.properties {
      _ = try Self.property(
        name, text: text, of: description.id, info: info, folder: description.propertiesFolder)
    }
    return (plugin, info)
  }

  /// The control inputs' starting values by symbol: the defaults, then the plugin's default
  /// state, then the LV2 preset, then the saved state, then the values the description names
  /// (each state is also restored into every instance).
  private static func initialValues(
    _ description: PluginDescription, plugin: OpaquePointer, info: PluginInfo, world: LV2World,
    made: PluginInstances
  ) throws(PluginError) -> [String: Float] {
    var initial: [String: Float] = [:]
    for port in info.ports where port.kind == .control && port.isInput {
      initial[port.symbol] = port.defaultValue
    }
    let restore = StateRestore(
      values: initial, intTypes: [world.urids.map(URI.atomInt), world.urids.map(URI.atomBool)])
    func apply(_ state: OpaquePointer) {
      for (instance, features) in zip(made.instances, made.features) {
        restore.apply(state, to: instance, features: features.features)
      }
      lilv_state_free(state)
    }
    if info.requiredFeatures.contains(URI.loadDefaultState)
      || info.optionalFeatures.contains(URI.loadDefaultState),
      let state = lilv_state_new_from_world(world.world, world.urids.mapFeature, lilv_plugin_get_uri(plugin))
    {
      apply(state)
    }
    if let name = description.preset {
      let unknown = PluginError.unknownPreset(
        uri: info.uri, preset: name, available: info.presets.map(\.label))
      guard let preset = info.presets.first(where: { $0.uri == name || $0.label == name }) else {
        throw unknown
      }
      let node = world.node(preset.uri)
      lilv_world_load_resource(world.world, node)
      guard let state = lilv_state_new_from_world(world.world, world.urids.mapFeature, node) else {
        throw unknown
      }
      apply(state)
    }
    if let path = description.statePath {
      guard let state = lilv_state_new_from_file(world.world, world.urids.mapFeature, nil, path) else {
        throw .unreadableState(path: path)
      }
      apply(state)
    }
    for (symbol, value) in description.values { restore.values[symbol] = value }
    return restore.values
  }

  /// The read-only chain parameter for a control output port.
  private static func outputSpec(for port: PortInfo, suffix: String = "") -> (ParameterSpec, Float) {
    (
      ParameterSpec(
        port.symbol + suffix, unit: port.unit ?? "", range: port.minimum...port.maximum,
        default: port.defaultValue,
        kind: .output, "Reported by the plugin: \(port.name)."),
      port.defaultValue
    )
  }

  deinit {
    storage.release(activated: true)
    rt.deallocate()
    live.deinitialize(count: 1)
    live.deallocate()
    smoothed.deallocate()
    current.deallocate()
    appliedControls.deinitialize(count: controlInputs.count)
    appliedControls.deallocate()
    dryLeft.deallocate()
    dryRight.deallocate()
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

  /// A plugin runs over the whole block: it may need the host's period.
  public override var takesWholeBlock: Bool { true }

  /// Plugins smooth their own controls from start values of their own: warmed for
  /// `VoiceChain.pluginWarmSeconds` before they are heard.
  public override var warmsLikeAPlugin: Bool { true }

  /// Whether the plugin gets the chain's MIDI (it has a MIDI input and its entry allows it).
  public override var wantsMidi: Bool { takesMidi }

  /// Whether the plugin runs on the music bed.
  public override var processesMusic: Bool { runsOnMusic }

  /// The sidechain's source, for a plugin with sidechain inputs.
  public override var feedSources: [SignalSource] { (sidechainSource.map { [$0] } ?? []) + cv.sources }

  /// Keeps the sidechain's and the CV inputs' feeds, read at each run. Off the audio thread,
  /// before the chain runs.
  public override func attach(feeds: [SignalFeed]) {
    var rest = feeds[...]
    if sidechainSource != nil, let first = rest.popFirst() {
      live.pointee.sidechainFeed = Unmanaged.passUnretained(first)
    }
    for (slot, feed) in rest.enumerated() where slot < cv.sources.count {
      cv.feeds[slot] = Unmanaged.passUnretained(feed)
    }
  }

  /// Keeps the chain's MIDI events, read at each run. Off the audio thread, before the chain runs.
  public override func attach(midi: MidiEvents) {
    live.pointee.midi = Unmanaged.passUnretained(midi)
  }

  /// Runs the plugin over the block in place (`processBlock`, in PluginStage+Process.swift).
  /// - Realtime: safe
  public override func process(_ block: StereoBlock, targets: ParameterTargets) {
    processBlock(block, targets: targets)
  }

  /// Called by the chain builder with the index of this stage's first parameter.
  public func bind(firstParameter: Int) { live.pointee.firstParameter = firstParameter }

  public override func prepare(sampleRate: Double, maxFrames: Int, context: ProcessingContext) {}

  /// Plugins keep their own state; there is nothing to clear without re-activating.
  /// - Realtime: safe
  public override func reset() {}

  /// The latency the plugin reports on its `lv2:latency` output, in frames (as of its last
  /// run; 0 for a value that is not a finite, non-negative frame count). Any thread.
  public override var latencyFrames: Int {
    guard latencyPort >= 0 else { return 0 }
    let frames = Float(bitPattern: reportedLatency.load(ordering: .relaxed)).rounded()
    return frames.isFinite && frames > 0 ? Int(min(frames, 16_777_216)) : 0
  }

  /// Whether the two channels still carry the same signal after this stage when they came in
  /// the same: a mono plugin run once, its output given to both. Any thread.
  public var keepsChannelsIdentical: Bool { rt.copiesLeftToRight }

  /// Whether the plugin keeps state beyond its control ports (it has the state interface).
  public var hasState: Bool { lilv_instance_get_extension_data(instances[0], URI.stateInterface) != nil }

  /// Log lines the plugin instances wrote since the last call. Off the audio thread.
  public func drainLog() -> [String] { features.flatMap { $0.drainLog(map: world.urids) } }
}
