#if canImport(Glibc)
  import Glibc
#endif

/// A built-in unit in a chain: owns its smoothed parameter values and bypass crossfade.
///
/// Smoothing: each continuous parameter moves towards its target by a fraction
/// `1 - exp(-subBlockFrames / (smoothingMilliseconds * sampleRate / 1000))` of the remaining
/// distance once per sub-block, and snaps to the target once within 1e-6 of it (so a settled
/// value is exact). Bypass crossfades linearly over `bypassFadeMilliseconds`.
/// Thread: prepared off the audio thread; processed on it.
public final class UnitStage<Unit: VoiceUnit>: ChainStage {
  public let id: String
  /// Index of this stage's first parameter in the chain's `ParameterTargets`; the stage's
  /// `bypass` parameter follows its unit's parameters.
  public let firstParameter: Int
  private var unit = Unit()
  private let parameterCount: Int
  /// 1 where the parameter is continuous (smoothed), 0 where it applies at once.
  private let smoothed: UnsafeMutablePointer<Bool>
  private let previous: UnsafeMutablePointer<Float>
  private let current: UnsafeMutablePointer<Float>
  private var smoothing: Float = 1
  private var bypassMix: Float = 0
  private var bypassStep: Float = 1
  private let dryLeft: UnsafeMutablePointer<Float>
  private let dryRight: UnsafeMutablePointer<Float>
  private let dryCapacity: Int

  /// Time constant of parameter smoothing.
  public static var smoothingMilliseconds: Float { 20 }
  /// Length of the bypass crossfade.
  public static var bypassFadeMilliseconds: Float { 10 }

  /// Creates a stage whose parameters start at `initial` (unit parameters, then bypass).
  public init(id: String, firstParameter: Int, initial: [Float], maxFrames: Int) {
    self.id = id
    self.firstParameter = firstParameter
    let specs = Unit.parameters
    parameterCount = specs.count
    let n = specs.count + 1
    previous = .allocate(capacity: n)
    current = .allocate(capacity: n)
    smoothed = .allocate(capacity: n)
    for i in 0..<n {
      let v = i < initial.count ? initial[i] : (i < specs.count ? specs[i].defaultValue : 0)
      previous[i] = v
      current[i] = v
      smoothed[i] = i < specs.count && specs[i].kind == .continuous
    }
    bypassMix = current[specs.count] >= 0.5 ? 1 : 0
    dryCapacity = maxFrames
    dryLeft = .allocate(capacity: maxFrames)
    dryRight = .allocate(capacity: maxFrames)
  }

  deinit {
    previous.deallocate()
    current.deallocate()
    smoothed.deallocate()
    dryLeft.deallocate()
    dryRight.deallocate()
  }

  public var latencyFrames: Int { unit.latencyFrames }

  public func prepare(sampleRate: Double, maxFrames: Int) {
    precondition(maxFrames <= dryCapacity, "stage prepared beyond its capacity")
    let blocks = Float(sampleRate) * Self.smoothingMilliseconds / 1000 / Float(maxFrames)
    smoothing = 1 - expf(-1 / max(blocks, 1))
    bypassStep = 1 / max(Float(sampleRate) * Self.bypassFadeMilliseconds / 1000, 1)
    unit.prepare(
      sampleRate: sampleRate, maxFrames: maxFrames,
      parameters: ParameterValues(previous: previous, current: current))
  }

  public func reset() { unit.reset() }

  /// - Realtime: safe
  public func process(_ block: StereoBlock, targets: ParameterTargets) {
    let n = parameterCount
    for i in 0..<n {
      previous[i] = current[i]
      let target = targets.value(firstParameter + i)
      if smoothed[i] {
        let c = current[i]
        let d = target - c
        current[i] = abs(d) <= 1e-6 * max(abs(target), 1) ? target : c + d * smoothing
      } else {
        current[i] = target
      }
    }
    let bypassTarget: Float = targets.value(firstParameter + n) >= 0.5 ? 1 : 0
    if bypassMix == bypassTarget {
      if bypassTarget == 1 { return }
      run(block)
      return
    }
    // Crossfade between the dry signal and the unit's output.
    let frames = block.frames
    if bypassMix == 1 { unit.reset() }
    dryLeft.update(from: block.left, count: frames)
    dryRight.update(from: block.right, count: frames)
    run(block)
    var mix = bypassMix
    let step = bypassTarget > mix ? bypassStep : -bypassStep
    for f in 0..<frames {
      mix = min(max(mix + step, 0), 1)
      let (l, r, dl, dr) = (block.left[f], block.right[f], dryLeft[f], dryRight[f])
      block.left[f] = l * (1 - mix) + dl * mix
      block.right[f] = r * (1 - mix) + dr * mix
    }
    bypassMix = mix
  }

  /// Runs the unit and resets it (silencing the block) if its output stopped being finite.
  /// The chain's input is sanitized, so a non-finite value can only come from a unit's state
  /// blowing up, which persists: checking the block's last frame catches it within a sub-block.
  @inline(__always)
  private func run(_ block: StereoBlock) {
    unit.process(block, parameters: ParameterValues(previous: previous, current: current))
    let last = block.frames - 1
    if !(block.left[last] + block.right[last]).isFinite {
      unit.reset()
      block.left.update(repeating: 0, count: block.frames)
      block.right.update(repeating: 0, count: block.frames)
    }
  }
}
