#if canImport(Glibc)
  import Glibc
#endif

/// A decibel value and its linear gain, recomputed only when the value changes.
public struct DecibelCache {
  public init() {}
  private var decibels: Float = .nan
  private var linear: Float = 0

  /// - Realtime: safe
  @inline(__always)
  public mutating func gain(_ db: Float) -> Float {
    if db != decibels {
      decibels = db
      linear = DSPMath.gain(decibels: db)
    }
    return linear
  }
}

/// A gain in dB smoothed towards its target once per sub-block (one-pole, 20 ms time constant,
/// snapping to the target once settled), interpolated linearly within the sub-block.
public struct SmoothedGain {
  public init() {}
  private var value: Float = 0
  private var cache = DecibelCache()

  /// The gain at the start and end of the next `frames` (at most a sub-block); -60 dB or less is
  /// silent.
  /// - Realtime: safe
  @inline(__always)
  public mutating func next(decibels: Float, frames: Int, alpha: Float) -> (from: Float, to: Float) {
    let target: Float = decibels <= -60 ? 0 : cache.gain(decibels)
    let from = value
    value = Smoothing.step(value, toward: target, alpha: alpha * Float(frames) / Float(MusicMixer.subBlock))
    return (from, value)
  }
}
