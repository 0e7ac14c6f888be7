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
  /// The same, knowing how the chain runs (`ProcessingContext`): a unit with a helper thread
  /// (WebRTC's) implements it; the others get the default, which calls the one above.
  mutating func prepare(
    sampleRate: Double, maxFrames: Int, parameters: ParameterValues, context: ProcessingContext)

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

  /// Receives a reference signal of one whole block, once the block is processed: the chain's
  /// final output (`.output`: after every stage, the output volume included; before the
  /// engine's start/stop/mute ramp), and, while the music bed plays, the music as it is mixed
  /// into the output (`.music`: after its volume and ducking), in that order each cycle. A unit
  /// copies what it needs into storage allocated in `prepare`.
  /// - Realtime: safe
  mutating func receiveReference(_ block: StereoBlock, from source: ReferenceSource)

  /// The current value of the unit's parameter `index` when its kind is `.output` (a value the
  /// unit reports, such as a leveler's gain); the stage publishes it once per sub-block.
  /// - Realtime: safe
  func outputValue(_ index: Int) -> Float

  /// Whether `process` would leave any block unchanged at these settled values (an output
  /// volume of exactly 1): then the stage skips the block. Only for a unit without signal state
  /// or outputs, so it depends on the values alone (static: the stage asks without touching, or
  /// copying, the unit).
  /// - Realtime: safe
  static func isTransparent(_ parameters: ParameterValues) -> Bool
}

/// Which signal a reference block is (`VoiceUnit.receiveReference`).
public enum ReferenceSource: Sendable {
  /// The chain's own output: what the speakers play of the processed voice.
  case output
  /// The music bed as mixed into the output: the far end of a rig whose echo is the music.
  case music
}

/// An echo canceller's choice between its two references (`aec.reference`): the music bed while
/// it plays (the default), else the output; or the output always.
///
/// One block a cycle: the canceller pairs its near end with its reference by position, so the
/// reference stream gets exactly one block for each block of microphone. A cycle hands the
/// output's block first, then (while the music bed plays) the music's; the output's is taken
/// only when no music block came in the cycle before, and a music block is left out in the cycle
/// whose output block was taken (the first with music). When the music stops, the cycle it
/// stopped in has no reference block (its output's came before that was known).
///
/// Thread: the audio thread (a value the unit owns).
public struct ReferenceChoice: Sendable {
  /// The parameter: 0 the music bed (when it plays; else the output), 1 the output.
  public static let parameter = ParameterSpec(
    "reference", unit: "", range: 0...1, default: 0, kind: .choice([0, 1]),
    "Echo reference: 0 the music bed (with --music; without it the output), 1 LiveMic's own output.")
  /// The parameter's value, set by the unit each block.
  public var outputOnly = false
  /// Cycles left in which a music block counts as recent.
  private var musicCycles = 0
  /// Whether this cycle's output block was taken (the cycle's reference block is then given).
  private var outputTaken = false

  public init() {}

  /// Whether a block from `source` is the reference to use.
  /// - Realtime: safe
  public mutating func accepts(_ source: ReferenceSource) -> Bool {
    switch source {
    case .music:
      guard !outputOnly else { return false }
      musicCycles = 2
      // The output's block stood in for this cycle already: the music from the next.
      if outputTaken {
        outputTaken = false
        return false
      }
      return true
    case .output:
      if outputOnly || musicCycles == 0 {
        outputTaken = true
        return true
      }
      musicCycles -= 1
      outputTaken = musicCycles == 0  // the music stopped: the output from the cycle after
      return outputTaken
    }
  }
}

extension VoiceUnit {
  public var latencyFrames: Int { 0 }
  public static var wantsReference: Bool { false }
  public static var makesChannelsDiffer: Bool { false }
  /// - Realtime: safe
  public mutating func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {}
  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { 0 }
  /// - Realtime: safe
  public static func isTransparent(_ parameters: ParameterValues) -> Bool { false }
  /// `outputValue` read in place: `UnitStage` is never specialized, and there a non-mutating
  /// call on `unit.pointee` copies the whole unit through its value witnesses (and destroys the
  /// copy) every sub-block; a mutating one passes its address.
  /// - Realtime: safe
  @inline(__always)
  mutating func outputValueInPlace(_ index: Int) -> Float { outputValue(index) }
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

extension VoiceUnit {
  public mutating func prepare(
    sampleRate: Double, maxFrames: Int, parameters: ParameterValues, context: ProcessingContext
  ) {
    prepare(sampleRate: sampleRate, maxFrames: maxFrames, parameters: parameters)
  }
}
