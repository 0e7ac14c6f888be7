#if canImport(Glibc)
  import Glibc
#endif

/// The two ways a setting moves on the audio thread, written once for the unit stages, the
/// plugin stages and the mixers: a one-pole step towards a target that lands on it exactly,
/// and the linear crossfade of a bypass. Thread: any; nothing here allocates.
public enum Smoothing {
  /// The time constant of every smoothed setting: unit parameters, plugin controls, the mixers'
  /// volumes.
  public static let timeConstantMilliseconds: Float = 20

  /// The one-pole coefficient for a step of `frames` at `sampleRate`: 1 − e^(−frames/(τ·rate)),
  /// τ = `timeConstantMilliseconds`. Steps of any length move a value alike per frame (two steps
  /// of n frames move it as one of 2n), so a short sub-block needs only its own coefficient.
  /// - Realtime: safe (one `expf`; callers compute it when the length changes)
  @inline(__always)
  public static func alpha(frames: Int, sampleRate: Double) -> Float {
    1 - expf(-Float(frames) / (timeConstantMilliseconds / 1000 * Float(sampleRate)))
  }

  /// One step of `value` towards `target` by the fraction `alpha` of the distance. It lands on
  /// the target once within 1e-6 of it (relative to its size, at least 1) or once a step no
  /// longer changes the Float, so a settled value is exact and never stuck short of it.
  /// - Realtime: safe
  @inline(__always)
  public static func step(_ value: Float, toward target: Float, alpha: Float) -> Float {
    let difference = target - value
    let next = value + difference * alpha
    return abs(difference) <= 1e-6 * max(abs(target), 1) || next == value ? target : next
  }

  /// Crossfades `block` (the processed signal) with the dry signal in place, frame by frame:
  /// `block · (1 − mix) + dry · mix`, `mix` moving from `start` by `step` a frame towards
  /// `target` (0: processed, 1: dry) and held within 0...1. Returns where `mix` ended.
  /// - Realtime: safe
  @inline(__always)
  public static func bypassFade(
    _ block: StereoBlock, dryLeft: UnsafePointer<Float>, dryRight: UnsafePointer<Float>, from start: Float,
    toward target: Float, step: Float
  ) -> Float {
    var mix = start
    let signedStep = target > mix ? step : -step
    for f in 0..<block.frames {
      mix = min(max(mix + signedStep, 0), 1)
      let (l, r, dl, dr) = (block.left[f], block.right[f], dryLeft[f], dryRight[f])
      block.left[f] = l * (1 - mix) + dl * mix
      block.right[f] = r * (1 - mix) + dr * mix
    }
    return mix
  }
}
