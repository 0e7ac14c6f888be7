import DSP

/// What feeds a plugin's CV input (a preset entry's `"cv": {"SYMBOL": …}`).
///
/// Thread: any (value type).
public enum CVSource: Sendable, Equatable {
  /// A constant value, every sample.
  case constant(Float)
  /// An audio-rate signal: the chain's input, the music bed or an earlier stage's output.
  case signal(SignalSource)
}

/// A plugin stage's CV ports as the audio thread uses them: each input's buffer and what fills
/// it (a constant, or a feed and its channel), each output's buffer, whose last sample of a run
/// becomes a read-only parameter `ID.SYMBOL` (and `ID.SYMBOL_right` for the right instance of a
/// mono plugin on the stereo chain).
///
/// Thread: made and freed off the audio thread; `fill` and `publish` on it.
final class CVPlan: @unchecked Sendable {
  struct Input {
    let buffer: UnsafeMutablePointer<Float>
    let constant: Float
    /// The feed slot (index into `feeds`), or -1 for a constant.
    let feed: Int
    /// The feed's channel: 0 left, 1 right.
    let channel: Int
  }
  let inputs: UnsafeMutablePointer<Input>
  let inputCount: Int
  /// The first instance's output buffers, then the second's (when there are two).
  let outputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
  let outputsPerInstance: Int
  /// Whether `SYMBOL_right` parameters follow, and where their buffers start in `outputs` (0:
  /// one instance serves both channels, its outputs shown twice).
  let publishesRight: Bool
  let rightBase: Int
  /// The signals the CV inputs read, in slot order (after the sidechain's, in `feedSources`).
  let sources: [SignalSource]
  let feeds: UnsafeMutablePointer<Unmanaged<SignalFeed>?>

  /// The plan for `cvIn`/`cvOut` (per instance, buffer and port index) and the entry's sources;
  /// an input without one keeps its port's default (written when the buffers were made).
  init(
    cvIn: [[(UnsafeMutablePointer<Float>, Int)]], cvOut: [[(UnsafeMutablePointer<Float>, Int)]],
    sources byPort: [Int: CVSource], sharedInstance: Bool, publishesRight: Bool
  ) {
    var list: [Input] = []
    var sources: [SignalSource] = []
    var slots: [SignalSource: Int] = [:]
    for (k, instance) in cvIn.enumerated() {
      for (buffer, port) in instance {
        switch byPort[port] {
        case .constant(let value): list.append(Input(buffer: buffer, constant: value, feed: -1, channel: 0))
        case .signal(let source):
          let slot = slots[source] ?? sources.count
          if slots[source] == nil {
            slots[source] = slot
            sources.append(source)
          }
          // A mono plugin's second instance reads the right channel.
          list.append(Input(buffer: buffer, constant: 0, feed: slot, channel: sharedInstance ? 0 : k))
        case nil: continue
        }
      }
    }
    inputCount = list.count
    inputs = .allocate(capacity: max(list.count, 1))
    for (i, input) in list.enumerated() { (inputs + i).initialize(to: input) }
    self.sources = sources
    feeds = .allocate(capacity: max(sources.count, 1))
    feeds.initialize(repeating: nil, count: max(sources.count, 1))
    outputsPerInstance = cvOut.first?.count ?? 0
    self.publishesRight = publishesRight
    rightBase = cvOut.count == 2 ? outputsPerInstance : 0
    let all = cvOut.flatMap { $0.map(\.0) }
    outputs = .allocate(capacity: max(all.count, 1))
    for (i, buffer) in all.enumerated() { outputs[i] = buffer }
  }

  deinit {
    inputs.deallocate()
    feeds.deallocate()
    outputs.deallocate()
  }

  /// Fills every CV input with frames `start..<start + frames` of its source.
  /// - Realtime: safe
  @inline(__always)
  func fill(from start: Int, frames: Int) {
    for i in 0..<inputCount {
      let input = inputs[i]
      if input.feed < 0 {
        input.buffer.update(repeating: input.constant, count: frames)
      } else if let feed = feeds[input.feed] {
        feed._withUnsafeGuaranteedRef {
          $0.copy(channel: input.channel, from: start, count: frames, into: input.buffer)
        }
      }
    }
  }

  /// Publishes each output's last sample of a run of `frames` as a read-only parameter, from
  /// index `first` on (the first instance's outputs, then the second's).
  /// - Realtime: safe
  @inline(__always)
  func publish(frames: Int, into targets: ParameterTargets, from first: Int) {
    guard frames > 0 else { return }
    let last = frames &- 1
    for j in 0..<outputsPerInstance {
      let value = outputs[j][last]
      targets.set(first &+ j, value.isFinite ? value : 0)
    }
    guard publishesRight else { return }
    for j in 0..<outputsPerInstance {
      let value = outputs[rightBase &+ j][last]
      targets.set(first &+ outputsPerInstance &+ j, value.isFinite ? value : 0)
    }
  }
}

extension PluginStage {
  /// The entry's CV sources by port index, each named CV input checked (and a constant in its
  /// port's range).
  static func cvSources(_ description: PluginDescription, info: PluginInfo) throws(PluginError) -> [Int:
    CVSource]
  {
    let inputs = info.ports.filter { $0.kind == .cv && $0.isInput }
    var result: [Int: CVSource] = [:]
    for (symbol, source) in description.cv.sorted(by: { $0.key < $1.key }) {
      guard let port = inputs.first(where: { $0.symbol == symbol }) else {
        throw .unknownControl(id: description.id, symbol: symbol, known: inputs.map(\.symbol))
      }
      if case .constant(let value) = source, !(value >= port.minimum && value <= port.maximum) {
        throw .outOfRange(
          id: description.id, symbol: symbol, value: value, range: port.minimum...port.maximum)
      }
      result[port.index] = source
    }
    return result
  }

  /// The read-only parameters of the CV outputs: `SYMBOL`, then `SYMBOL_right` for a mono plugin
  /// run as two instances.
  static func cvOutputSpecs(_ info: PluginInfo) -> [(ParameterSpec, Float)] {
    let outputs = info.ports.filter { $0.kind == .cv && !$0.isInput }
    let left = outputs.map { port in
      (
        ParameterSpec(
          port.symbol, unit: port.unit ?? "", range: port.minimum...port.maximum, default: 0, kind: .output,
          "Reported by the plugin (CV, last sample of each block): \(port.name)."), Float(0)
      )
    }
    guard info.instancesOnStereoChain == 2 else { return left }
    return left
      + outputs.map { port in
        (
          ParameterSpec(
            port.symbol + "_right", unit: port.unit ?? "", range: port.minimum...port.maximum, default: 0,
            kind: .output, "Reported by the plugin's right instance (CV): \(port.name)."), Float(0)
        )
      }
  }
}
