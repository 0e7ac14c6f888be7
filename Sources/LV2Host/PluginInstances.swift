import CLilv
import DSP

/// The instances of one plugin stage, each with its own host features (worker, log queue) and
/// port storage, every port connected. Not real-time.
struct PluginInstances {
  var instances: [UnsafeMutablePointer<LilvInstance>] = []
  var features: [HostFeatures] = []
  /// Per instance, one Float per port (control values; unused for other ports).
  var controls: [UnsafeMutablePointer<Float>] = []
  /// Per instance: the audio input and output buffers and their port indices, in port order.
  var audioIn: [[UnsafeMutablePointer<Float>]] = []
  var audioOut: [[UnsafeMutablePointer<Float>]] = []
  var audioInPorts: [[UInt32]] = []
  /// Per instance: the sidechain (key) input buffers, in port order (`PortInfo.isSidechain`).
  var sidechainIn: [[UnsafeMutablePointer<Float>]] = []
  var audioOutPorts: [[UInt32]] = []
  /// Per instance: atom input / output port buffers and their byte capacities.
  var atomIn: [[(UnsafeMutableRawPointer, Int)]] = []
  var atomOut: [[(UnsafeMutableRawPointer, Int)]] = []
  /// Per instance, per atom input: whether it takes MIDI (`PortInfo.supportsMidi`) and
  /// messages (`PortInfo.takesMessages`).
  var atomInMidi: [[Bool]] = []
  var atomInMessages: [[Bool]] = []
  /// Per instance: the CV input and output buffers and their port indices, in port order.
  var cvIn: [[(UnsafeMutablePointer<Float>, Int)]] = []
  var cvOut: [[(UnsafeMutablePointer<Float>, Int)]] = []

  /// `count` instances of `plugin`, each port connected to storage of its own (audio and CV
  /// buffers of `capacity` frames); on failure nothing is left allocated.
  static func make(
    count: Int, plugin: OpaquePointer, info: PluginInfo, world: LV2World, settings: HostSettings,
    stateDirectory: String, capacity: Int
  ) throws(PluginError) -> PluginInstances {
    var made = PluginInstances()
    for k in 0..<count {
      let f = HostFeatures(world: world, settings: settings, stateDirectory: stateDirectory + "/\(k)")
      guard let instance = lilv_plugin_instantiate(plugin, settings.sampleRate, f.features) else {
        made.release(activated: false)
        throw .instantiation(uri: info.uri)
      }
      made.instances.append(instance)
      made.features.append(f)
      made.connect(instance, ports: info.ports, capacity: capacity)
    }
    return made
  }

  /// Connects every port of `instance` to new storage, appended to the lists.
  private mutating func connect(
    _ instance: UnsafeMutablePointer<LilvInstance>, ports: [PortInfo], capacity: Int
  ) {
    let control = UnsafeMutablePointer<Float>.allocate(capacity: max(ports.count, 1))
    control.initialize(repeating: 0, count: max(ports.count, 1))
    var ins: [UnsafeMutablePointer<Float>] = []
    var keys: [UnsafeMutablePointer<Float>] = []
    var (cvIns, cvOuts): ([(UnsafeMutablePointer<Float>, Int)], [(UnsafeMutablePointer<Float>, Int)]) = (
      [], []
    )
    var outs: [UnsafeMutablePointer<Float>] = []
    var (inPorts, outPorts): ([UInt32], [UInt32]) = ([], [])
    var aIn: [(UnsafeMutableRawPointer, Int)] = []
    var aOut: [(UnsafeMutableRawPointer, Int)] = []
    var aInMidi: [Bool] = []
    var aInMessages: [Bool] = []
    for port in ports {
      let index = UInt32(port.index)
      switch port.kind {
      case .control:
        control[port.index] = port.defaultValue
        lilv_instance_connect_port(instance, index, control + port.index)
      case .audio, .cv:
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        buffer.initialize(repeating: 0, count: capacity)
        if port.kind == .cv {
          // An input holds its port's default until a source or constant is given.
          if port.isInput {
            buffer.update(repeating: port.defaultValue, count: capacity)
            cvIns.append((buffer, port.index))
          } else {
            cvOuts.append((buffer, port.index))
          }
        } else if port.isSidechain {
          keys.append(buffer)
        } else if port.isInput {
          ins.append(buffer)
          inPorts.append(index)
        } else {
          outs.append(buffer)
          outPorts.append(index)
        }
        lilv_instance_connect_port(instance, index, buffer)
      case .atom:
        let bytes = max(port.minimumSize ?? 0, 8192)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        if port.isInput {
          aIn.append((buffer, bytes))
          aInMidi.append(port.supportsMidi)
          aInMessages.append(port.takesMessages)
        } else {
          aOut.append((buffer, bytes))
        }
        lilv_instance_connect_port(instance, index, buffer)
      case .unknown:
        lilv_instance_connect_port(instance, index, nil)
      }
    }
    controls.append(control)
    audioIn.append(ins)
    audioOut.append(outs)
    audioInPorts.append(inPorts)
    sidechainIn.append(keys)
    cvIn.append(cvIns)
    cvOut.append(cvOuts)
    audioOutPorts.append(outPorts)
    atomIn.append(aIn)
    atomOut.append(aOut)
    atomInMidi.append(aInMidi)
    atomInMessages.append(aInMessages)
  }

  /// Starts a worker for each instance that has the worker interface, then activates every
  /// instance; returns each one's worker (nil without the interface).
  func activate() -> [PluginWorker?] {
    var workers: [PluginWorker?] = []
    for (k, instance) in instances.enumerated() {
      if let raw = lilv_instance_get_extension_data(instance, URI.workerInterface) {
        features[k].worker.start(
          interface: raw.assumingMemoryBound(to: LV2_Worker_Interface.self),
          handle: lilv_instance_get_handle(instance))
        workers.append(features[k].worker)
      } else {
        workers.append(nil)
      }
      lilv_instance_activate(instance)
    }
    return workers
  }

  /// Frees everything: joins the workers first (they call the plugin's `work`, which must not
  /// run during or after `deactivate`), deactivates (when `activated`) and frees the instances,
  /// and deallocates the buffers.
  func release(activated: Bool) {
    for (k, instance) in instances.enumerated() {
      features[k].worker.stop()
      if activated { lilv_instance_deactivate(instance) }
      lilv_instance_free(instance)
    }
    for c in controls { c.deallocate() }
    for list in audioIn + audioOut + sidechainIn { for b in list { b.deallocate() } }
    for list in cvIn + cvOut { for (b, _) in list { b.deallocate() } }
    for list in atomIn + atomOut { for (b, _) in list { b.deallocate() } }
  }
}
