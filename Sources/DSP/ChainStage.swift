/// One stage of a chain, as the chain sees it: a built-in unit (see `UnitStage`) or, in the host
/// layer, a plugin.
///
/// Thread: `prepare` off the audio thread; `process` and `reset` on the audio thread only.
public protocol ChainStage: AnyObject {
  /// The stage's id, the first part of its parameter keys (`eq`, `eq2`).
  var id: String { get }
  /// Latency this stage adds, in frames.
  var latencyFrames: Int { get }
  /// Prepares for a sample rate, maximum block size and how the chain runs. May allocate.
  func prepare(sampleRate: Double, maxFrames: Int, context: ProcessingContext)
  /// Processes a block in place, reading its parameter targets: built-in units get sub-blocks
  /// of at most `VoiceChain.subBlockFrames`, other stages (plugins) the host's whole block.
  /// - Realtime: safe
  func process(_ block: StereoBlock, targets: ParameterTargets)
  /// Clears signal state.
  /// - Realtime: safe
  func reset()
}

extension ChainStage {
  /// Prepares for offline use (the tests, the offline tools).
  public func prepare(sampleRate: Double, maxFrames: Int) {
    prepare(sampleRate: sampleRate, maxFrames: maxFrames, context: .offline)
  }
}
