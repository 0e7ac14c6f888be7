#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A built-in voice DSP unit: a value type whose state is prepared off the audio thread and
/// processed in place on it.
///
/// Conformers document their parameters in `parameters` (order = index in `ParameterValues`).
public protocol VoiceUnit {
  /// The unit's type name in presets and parameter keys (`eq`, `limiter`).
  static var typeName: String { get }
  /// One sentence for the parameter reference.
  static var summary: String { get }
  /// The parameters, in index order.
  static var parameters: [ParameterSpec] { get }

  init()

  /// Sizes buffers and coefficients for a sample rate. May allocate; never on the audio thread.
  /// `maxFrames` is the largest block `process` will be given.
  mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues)

  /// Clears all signal state (delay lines, envelopes, filter memories) without allocating.
  /// - Realtime: safe
  mutating func reset()

  /// Processes one block in place.
  /// - Realtime: safe
  mutating func process(_ block: StereoBlock, parameters: ParameterValues)

  /// Latency this unit adds, in frames (zero except for `denoise` and `aec`: one speexdsp
  /// frame), valid once prepared.
  var latencyFrames: Int { get }

  /// Whether the unit wants the chain's final output as a reference signal (an echo
  /// canceller's far end): then the chain calls `receiveReference` after every block.
  static var wantsReference: Bool { get }

  /// Whether the unit can make its two channels differ when they come in the same (a stereo
  /// reverb does; the linked voice units do not). While the channels are the same, a mono
  /// plugin after it runs once, not once per channel.
  static var makesChannelsDiffer: Bool { get }

  /// Receives the chain's final output of one whole block (after every stage, the output volume
  /// included; before the engine's start/stop/mute ramp), once the block is processed. A unit
  /// copies what it needs into storage allocated in `prepare`.
  /// - Realtime: safe
  mutating func receiveReference(_ block: StereoBlock)

  /// The current value of the unit's parameter `index` when its kind is `.output` (a value the
  /// unit reports, such as a leveler's gain); the stage publishes it once per sub-block.
  /// - Realtime: safe
  func outputValue(_ index: Int) -> Float
}

extension VoiceUnit {
  public var latencyFrames: Int { 0 }
  public static var wantsReference: Bool { false }
  public static var makesChannelsDiffer: Bool { false }
  /// - Realtime: safe
  public mutating func receiveReference(_ block: StereoBlock) {}
  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { 0 }
}

/// Helpers shared by the units.
public enum DSPMath {
  /// Decibels to a linear gain factor (0 dB is exactly 1).
  /// - Realtime: safe
  @inline(__always)
  public static func gain(decibels: Float) -> Float {
    decibels == 0 ? 1 : powf(10, decibels / 20)
  }

  /// A linear amplitude to decibels, floored at -200 dB.
  /// - Realtime: safe
  @inline(__always)
  public static func decibels(gain: Float) -> Float {
    gain > 1e-10 ? 20 * log10f(gain) : -200
  }

  /// The per-sample coefficient of a one-pole smoother with time constant `milliseconds`.
  /// - Realtime: safe
  @inline(__always)
  public static func onePoleCoefficient(milliseconds: Float, sampleRate: Float) -> Float {
    let samples = max(milliseconds * 0.001 * sampleRate, 1)
    return 1 - expf(-1 / samples)
  }

  /// Flushes subnormal and tiny values to zero so filter memories never go denormal.
  /// - Realtime: safe
  @inline(__always)
  public static func flush(_ x: Float) -> Float {
    abs(x) < 1e-20 ? 0 : x
  }
}
