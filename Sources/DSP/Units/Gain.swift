/// Loops here and in every unit read both channels of a frame before writing either: the two
/// buffers are often a multiple of 4 KiB apart (JACK's port buffers are), and a store to one
/// would otherwise stall the load of the other at the same offset.
///
/// Applies a gain that moves linearly from `from` to `to` across the block (exactly `to` when
/// settled); skips the work when the gain is settled at exactly 1.
/// - Realtime: safe
@inline(__always)
func applyRampedGain(_ block: StereoBlock, from: Float, to: Float) {
  if from == to && to == 1 { return }
  // Four frames at a time (the gain of frame f is from + step·(f + 1)), then one at a time.
  let step = from == to ? 0 : (to - from) / Float(block.frames)
  var f = 0
  while f + 4 <= block.frames {
    let g = from == to ? SIMD4(repeating: to) : from + step * (SIMD4.ramp + Float(f))
    let (l, r) = (block.left.load4(f), block.right.load4(f))
    block.left.store4(f, l * g)
    block.right.store4(f, r * g)
    f += 4
  }
  while f < block.frames {
    let g = from == to ? to : from + step * Float(f + 1)
    let (l, r) = (block.left[f], block.right[f])
    block.left[f] = l * g
    block.right[f] = r * g
    f += 1
  }
}

/// Input gain, in decibels, before everything else.
public struct InputGain: VoiceUnit {
  public static let typeName = "input"
  public static let summary = "Input gain before the rest of the chain."
  public static let parameters = [
    ParameterSpec("gain_db", unit: "dB", range: -60...40, default: 0, "Gain applied to the input.")
  ]
  private var gain = Derived()

  public init() {}
  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {}
  /// - Realtime: safe
  public mutating func reset() {}

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    // The previous block's end is this one's start: only a changing gain costs a `powf`.
    let from = gain.cached(p.previous(0)) ?? DSPMath.gain(decibels: p.previous(0))
    applyRampedGain(block, from: from, to: gain(p.current(0)) { DSPMath.gain(decibels: $0) })
  }
}

/// Output volume, a linear factor 0–1, last in the chain.
public struct OutputVolume: VoiceUnit {
  public static let typeName = "output"
  public static let summary = "Output volume (linear, 0 to 1); the last stage of the chain."
  public static let parameters = [
    ParameterSpec(
      "volume", unit: "", range: 0...1, default: 0.3,
      "Output volume as a linear factor; starts quiet at 0.3 unless a preset says otherwise.")
  ]
  public init() {}
  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {}
  /// - Realtime: safe
  public mutating func reset() {}

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    applyRampedGain(block, from: p.previous(0), to: p.current(0))
  }

  /// - Realtime: safe
  public static func isTransparent(_ parameters: ParameterValues) -> Bool {
    parameters.previous(0) == 1 && parameters.current(0) == 1
  }
}
