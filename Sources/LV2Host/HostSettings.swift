import DSP

/// How the host runs plugins, which decides the block-length features it can promise; and how
/// the chain built with them runs (`processing`, given to every stage at `prepare`).
///
/// Thread: any (value type).
public struct HostSettings: Sendable, Equatable {
  /// The sample rate plugins are instantiated at.
  public var sampleRate: Double
  /// The largest block a plugin is run with (JACK's period; the renderer's --frames).
  public var maxBlockFrames: Int
  /// The block length plugins are usually run with.
  public var nominalBlockFrames: Int
  /// True when every run has exactly `nominalBlockFrames` frames (live JACK periods).
  public var fixedBlocks: Bool
  /// True when the chain's two channels carry the same signal where the plugin runs (a mono
  /// input, and no stage before it that makes them differ): a mono plugin then runs as one
  /// instance, its output given to both channels, instead of one instance per channel.
  public var identicalChannels: Bool
  /// Offline, or live with the helper threads' priority and the host period (the built-in units
  /// that hand work to a helper thread declare latency for it).
  public var processing: ProcessingContext

  public init(
    sampleRate: Double, maxBlockFrames: Int, nominalBlockFrames: Int, fixedBlocks: Bool,
    identicalChannels: Bool = false, processing: ProcessingContext = .offline
  ) {
    self.processing = processing
    self.sampleRate = sampleRate
    self.maxBlockFrames = maxBlockFrames
    self.nominalBlockFrames = nominalBlockFrames
    self.fixedBlocks = fixedBlocks
    self.identicalChannels = identicalChannels
  }

  /// Features provided only when the blocks allow them.
  static let conditional: Set<String> = [URI.fixedBlockLength, URI.powerOf2BlockLength]

  /// Whether a conditional feature can be provided under these settings.
  func provides(_ feature: String) -> Bool {
    if URI.alwaysProvided.contains(feature) { return true }
    switch feature {
    case URI.fixedBlockLength: return fixedBlocks
    case URI.powerOf2BlockLength:
      return fixedBlocks && nominalBlockFrames > 0 && nominalBlockFrames & (nominalBlockFrames - 1) == 0
    default: return false
    }
  }
}
