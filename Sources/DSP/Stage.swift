#if canImport(Glibc)
  import Glibc
#endif

/// One stage of a chain: a built-in unit (`UnitStage`) or, in the host layer, an LV2 plugin
/// (`PluginStage`); the one base both derive from. A chain calls it through an unretained
/// reference, with no existential and no retain/release around a call.
///
/// Thread: `prepare` and the `attach` calls off the audio thread; `process`, `reset`,
/// `receiveReference` and `skipsBlock` on the audio thread only; the rest any.
open class Stage {
  /// The stage's id, the first part of its parameter keys (`eq`, `eq2`).
  public let id: String

  public init(id: String) { self.id = id }

  /// Latency this stage adds, in frames.
  open var latencyFrames: Int { 0 }

  /// Prepares for a sample rate, the largest block `process` gets and how the chain runs. May
  /// allocate.
  open func prepare(sampleRate: Double, maxFrames: Int, context: ProcessingContext) {}

  /// Prepares for offline use (the tests, the offline tools).
  public final func prepare(sampleRate: Double, maxFrames: Int) {
    prepare(sampleRate: sampleRate, maxFrames: maxFrames, context: .offline)
  }

  /// Clears signal state.
  /// - Realtime: safe
  open func reset() {}

  /// Processes one sub-block of at most `VoiceChain.subBlockFrames` (a built-in stage) or the
  /// whole block (`takesWholeBlock`: a plugin) in place, reading its parameter targets.
  /// - Realtime: safe
  open func process(_ block: StereoBlock, targets: ParameterTargets) {}

  /// Whether the stage takes the whole block at once rather than sub-blocks of
  /// `VoiceChain.subBlockFrames` (a plugin may need the host's period). Read once, when a chain
  /// is made.
  open var takesWholeBlock: Bool { false }

  /// Whether the chain warms it like an LV2 plugin (`VoiceChain.pluginWarmSeconds` in blocks of
  /// the host's period) rather than with one block (a built-in unit). Read once, when prepared.
  open var warmsLikeAPlugin: Bool { false }

  /// Whether the unit wants the chain's output (`VoiceUnit.wantsReference`).
  open var wantsReference: Bool { false }

  /// Whether the stage takes MIDI (a plugin with a MIDI input that its preset entry lets have
  /// it). Read once, when a chain is made.
  open var wantsMidi: Bool { false }

  /// Gives the stage the chain's MIDI events, which it reads in each `process` (frame offsets
  /// from the start of the block `process` gets). Called once, when a chain is made, for a
  /// stage that `wantsMidi`; off the audio thread.
  open func attach(midi: MidiEvents) {}

  /// Whether the stage processes the music bed instead of the voice (a plugin entry's `"on":
  /// "music"`): the chain runs it on the music as it comes in, and the engine mixes the result.
  /// Read once, when a chain is made.
  open var processesMusic: Bool { false }

  /// The signals the stage reads besides its block (an LV2 plugin's sidechain and CV inputs),
  /// in the order `attach(feeds:)` gets them. Read once, when a chain is made.
  open var feedSources: [SignalSource] { [] }

  /// Gives the stage one feed per `feedSources` entry, filled by the chain before the stage
  /// runs in each cycle. Called once, when a chain is made; off the audio thread.
  open func attach(feeds: [SignalFeed]) {}

  /// Hands a reference block to the unit (`VoiceUnit.receiveReference`).
  /// - Realtime: safe
  open func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {}

  /// Whether the stage would leave this whole block as it is, with nothing to move: every
  /// parameter settled at its target and the stage bypassed or its unit transparent
  /// (`VoiceUnit.isTransparent`). The chain then skips its sub-blocks.
  /// - Realtime: safe
  open func skipsBlock(_ targets: ParameterTargets) -> Bool { false }
}
