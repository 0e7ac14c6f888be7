import CLilv

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
  /// Whether the plugin may read and write the same buffer (it does not declare
  /// `lv2:inPlaceBroken`): then its audio ports are connected to the block's own buffers each
  /// run, and nothing is copied in or out (a mono-in plugin still gets the mean in `inputLeft`).
  let inPlace: Bool
  /// An instrument (no audio input): its output, in its own buffers, is added to the block's
  /// (`inputLeft` is then `outputLeft`, unused; a mono output feeds both channels).
  let instrument: Bool
  /// One instance of a mono plugin on channels that carry the same signal: it runs on the left
  /// channel, and the right gets a copy of its output (`inputRight` is nil).
  let copiesLeftToRight: Bool
  /// The instance whose ports carry the right channel (the second of two, else the only one).
  let rightInstance: UnsafeMutablePointer<LilvInstance>
  /// The port indices of the four buffers above (`portInputRight` unused without `inputRight`).
  let portInputLeft: UInt32
  let portInputRight: UInt32
  let portOutputLeft: UInt32
  let portOutputRight: UInt32
  /// Every instance's atom inputs (buffer, byte capacity), and whether each takes MIDI.
  let atomInputs: UnsafeMutablePointer<(UnsafeMutableRawPointer, Int)>
  let atomInputMidi: UnsafeMutablePointer<Bool>
  let atomInputMessages: UnsafeMutablePointer<Bool>
  let atomInputCount: Int
  let atomOutputs: UnsafeMutablePointer<(UnsafeMutableRawPointer, Int)>
  let atomOutputCount: Int
  /// How many of `atomOutputs` are the first instance's (the ones whose messages are read).
  let firstInstanceAtomOutputCount: Int
  /// Every sidechain input buffer and the feed channel it gets (0 left, 1 right, 2 the mean):
  /// a mono plugin's two instances the left and the right, a stereo plugin's two key inputs
  /// left and right, a single key input the mean.
  let sidechains: UnsafeMutablePointer<(UnsafeMutablePointer<Float>, Int)>
  let sidechainCount: Int
  let controlInputs: UnsafeMutablePointer<Int>
  let controlInputCount: Int
  let controlOutputs: UnsafeMutablePointer<Int>
  let controlOutputCount: Int
  /// Whether the stage publishes a right instance's control outputs (a mono plugin on the
  /// stereo chain, also while one instance serves both channels).
  let hasRightOutputs: Bool

  init(
    instances: [UnsafeMutablePointer<LilvInstance>], workers: [PluginWorker?],
    controls: [UnsafeMutablePointer<Float>],
    audioIn: [[UnsafeMutablePointer<Float>]], audioOut: [[UnsafeMutablePointer<Float>]],
    audioInPorts: [[UInt32]], audioOutPorts: [[UInt32]], inPlace: Bool, copiesLeftToRight: Bool,
    atomIn: [[(UnsafeMutableRawPointer, Int)]], atomInMidi: [[Bool]], atomInMessages: [[Bool]],
    atomOut: [[(UnsafeMutableRawPointer, Int)]],
    controlInputs inputs: [Int], controlOutputs outputs: [Int], rightOutputs: Bool,
    sidechainIn: [[UnsafeMutablePointer<Float>]]
  ) {
    hasRightOutputs = rightOutputs
    var keys: [(UnsafeMutablePointer<Float>, Int)] = []
    for (k, list) in sidechainIn.enumerated() {
      for (j, buffer) in list.enumerated() {
        let channel = sidechainIn.count == 2 ? k : list.count == 2 ? j : copiesLeftToRight ? 0 : 2
        keys.append((buffer, channel))
      }
    }
    sidechainCount = keys.count
    sidechains = .allocate(capacity: max(keys.count, 1))
    for (i, key) in keys.enumerated() { (sidechains + i).initialize(to: key) }
    let two = instances.count == 2
    instance0 = instances[0]
    instance1 = two ? instances[1] : nil
    worker0 = workers[0].map { Unmanaged.passUnretained($0) }
    worker1 = two ? workers[1].map { Unmanaged.passUnretained($0) } : nil
    controls0 = controls[0]
    controls1 = two ? controls[1] : nil
    self.inPlace = inPlace
    self.copiesLeftToRight = copiesLeftToRight
    rightInstance = instances[two ? 1 : 0]
    instrument = audioIn[0].isEmpty
    if instrument {
      let right = audioOut[0].count > 1 ? 1 : 0
      (inputLeft, inputRight) = (audioOut[0][0], nil)
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[0][right])
      (portInputLeft, portInputRight) = (audioOutPorts[0][0], audioOutPorts[0][0])
      (portOutputLeft, portOutputRight) = (audioOutPorts[0][0], audioOutPorts[0][right])
    } else if copiesLeftToRight {
      (inputLeft, inputRight) = (audioIn[0][0], nil)
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[0][0])
      (portInputLeft, portInputRight) = (audioInPorts[0][0], audioInPorts[0][0])
      (portOutputLeft, portOutputRight) = (audioOutPorts[0][0], audioOutPorts[0][0])
    } else if two {
      (inputLeft, inputRight) = (audioIn[0][0], audioIn[1][0])
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[1][0])
      (portInputLeft, portInputRight) = (audioInPorts[0][0], audioInPorts[1][0])
      (portOutputLeft, portOutputRight) = (audioOutPorts[0][0], audioOutPorts[1][0])
    } else {
      inputLeft = audioIn[0][0]
      inputRight = audioIn[0].count > 1 ? audioIn[0][1] : nil
      (outputLeft, outputRight) = (audioOut[0][0], audioOut[0][1])
      portInputLeft = audioInPorts[0][0]
      portInputRight = audioInPorts[0].count > 1 ? audioInPorts[0][1] : audioInPorts[0][0]
      (portOutputLeft, portOutputRight) = (audioOutPorts[0][0], audioOutPorts[0][1])
    }
    let ins = atomIn.flatMap { $0 }
    let midi = atomInMidi.flatMap { $0 }
    let messages = atomInMessages.flatMap { $0 }
    atomInputMessages = .allocate(capacity: max(ins.count, 1))
    atomInputCount = ins.count
    atomInputs = .allocate(capacity: max(ins.count, 1))
    atomInputMidi = .allocate(capacity: max(ins.count, 1))
    for (i, p) in ins.enumerated() {
      (atomInputs + i).initialize(to: p)
      atomInputMidi[i] = midi[i]
      atomInputMessages[i] = messages[i]
    }
    let outs = atomOut.flatMap { $0 }
    firstInstanceAtomOutputCount = atomOut.first?.count ?? 0
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
    sidechains.deallocate()
    atomInputMidi.deallocate()
    atomInputMessages.deallocate()
    atomOutputs.deallocate()
    controlInputs.deallocate()
    controlOutputs.deallocate()
  }
}
