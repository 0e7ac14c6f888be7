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

  /// The length of every bypass crossfade (unit and plugin stages).
  public static let bypassFadeMilliseconds: Float = 10

  /// The bypass crossfade's change per frame at `sampleRate`.
  public static func bypassStep(sampleRate: Double) -> Float {
    1 / max(Float(sampleRate) * bypassFadeMilliseconds / 1000, 1)
  }

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

  /// Moves each of the `count` controls in `current` one step towards its target in `targets`
  /// (from index `first`): a continuous one (`smoothed`) by `alpha`, a stepped one at once; a
  /// settled one costs one comparison (bit patterns: a target of -0 replaces +0). `moved` is
  /// called with the index and new value of each control that changed. The one controls loop of
  /// the unit and plugin stages.
  /// - Realtime: safe (`moved` must be too)
  @inline(__always)
  public static func advance(
    _ current: UnsafeMutablePointer<Float>, toward targets: ParameterTargets, first: Int, count: Int,
    smoothed: UnsafePointer<Bool>, alpha: Float, moved: (Int, Float) -> Void = { _, _ in }
  ) {
    for i in 0..<count {
      let c = current[i]
      let target = targets.value(first &+ i)
      if target.bitPattern == c.bitPattern { continue }
      let next = smoothed[i] ? step(c, toward: target, alpha: alpha) : target
      current[i] = next
      moved(i, next)
    }
  }

  /// The coefficient for steps of one length, kept until the length changes (a JACK period under
  /// a sub-block, a block's remainder or a plugin's chunk recur every cycle: one `expf` per
  /// change, not per step).
  public struct Coefficient: Sendable {
    public private(set) var sampleRate: Double
    private var frames = 0
    private var cached: Float = 1

    public init(sampleRate: Double) { self.sampleRate = sampleRate }

    /// The coefficient for a step of `frames`.
    /// - Realtime: safe
    @inline(__always)
    public mutating func alpha(frames: Int) -> Float {
      if frames != self.frames {
        cached = Smoothing.alpha(frames: frames, sampleRate: sampleRate)
        self.frames = frames
      }
      return cached
    }
  }

  /// Silences `block` when any of its samples is not finite, and says so: the one non-finite
  /// policy of every stage (docs/architecture.md, "Non-finite output"). The caller resets what it
  /// can (a built-in unit's state); a plugin is only muted, block by block, until its output is
  /// finite again.
  /// - Realtime: safe
  @inline(__always)
  public static func silenceUnlessFinite(_ block: StereoBlock) -> Bool {
    if BlockMath.allFinite(block.left, block.right, block.frames) { return false }
    block.left.update(repeating: 0, count: block.frames)
    block.right.update(repeating: 0, count: block.frames)
    return true
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
