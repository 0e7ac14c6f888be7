#if canImport(Glibc)
  import Glibc
#endif

/// A built-in unit in a chain: owns its smoothed parameter values and bypass crossfade.
///
/// Smoothing: each continuous parameter moves towards its target by the fraction
/// `Smoothing.alpha(frames:sampleRate:)` of the remaining distance once per sub-block (of its
/// own length, so the rate per frame is the same for a shorter one), and snaps to the target once within 1e-6 of it or once a step
/// would no longer change its Float value (so a settled value is exact). Bypass crossfades
/// linearly over `bypassFadeMilliseconds`.
///
/// Everything the audio thread touches lives behind pointers allocated here (the unit itself
/// included): a stored `var` of a class would cost a dynamic exclusivity check on every
/// sub-block, and a chain builds this class from a metatype, so it is never specialized.
/// Thread: prepared off the audio thread; processed on it. Nothing else reads the unit.
public final class UnitStage<Unit: VoiceUnit>: Stage {
  /// Index of this stage's first parameter in the chain's `ParameterTargets`; the stage's
  /// `bypass` parameter follows its unit's parameters.
  public let firstParameter: Int
  private let unit: UnsafeMutablePointer<Unit>
  private let parameterCount: Int
  /// 1 where the parameter is continuous (smoothed), 0 where it applies at once.
  private let smoothed: UnsafeMutablePointer<Bool>
  /// The indices of the unit's `.output` parameters, published after each sub-block.
  private let outputs: UnsafeMutablePointer<Int>
  private let outputCount: Int
  private let previous: UnsafeMutablePointer<Float>
  private let current: UnsafeMutablePointer<Float>
  private let fade: UnsafeMutablePointer<Fade>
  private let dryLeft: UnsafeMutablePointer<Float>
  private let dryRight: UnsafeMutablePointer<Float>
  private let dryCapacity: Int

  /// The smoothing coefficient (for a full sub-block of `frames`), the bypass crossfade's
  /// position (1 = bypassed) and step.
  private struct Fade {
    var smoothing: Float = 1
    var frames = 1
    var mix: Float = 0
    var step: Float = 1
    /// The coefficient for the last shorter sub-block's length (a period under 32 frames, or a
    /// block's remainder, recurs every cycle).
    var short = Smoothing.Coefficient(sampleRate: 48000)
  }

  /// Time constant of parameter smoothing.
  public static var smoothingMilliseconds: Float { Smoothing.timeConstantMilliseconds }
  /// Length of the bypass crossfade.
  public static var bypassFadeMilliseconds: Float { Smoothing.bypassFadeMilliseconds }

  /// Creates a stage whose parameters start at `initial` (unit parameters, then bypass).
  public init(id: String, firstParameter: Int, initial: [Float], maxFrames: Int) {
    self.firstParameter = firstParameter
    let specs = Unit.parameters
    parameterCount = specs.count
    let n = specs.count + 1
    unit = .allocate(capacity: 1)
    unit.initialize(to: Unit())
    previous = .allocate(capacity: n)
    current = .allocate(capacity: n)
    smoothed = .allocate(capacity: n)
    for i in 0..<n {
      let v = i < initial.count ? initial[i] : (i < specs.count ? specs[i].defaultValue : 0)
      previous[i] = v
      current[i] = v
      smoothed[i] = i < specs.count && specs[i].kind == .continuous
    }
    let outputIndices = specs.indices.filter { specs[$0].kind == .output }
    outputCount = outputIndices.count
    outputs = .allocate(capacity: max(outputCount, 1))
    outputs.initialize(from: outputIndices, count: outputCount)
    fade = .allocate(capacity: 1)
    fade.initialize(to: Fade(mix: current[specs.count] >= 0.5 ? 1 : 0))
    dryCapacity = maxFrames
    dryLeft = .allocate(capacity: maxFrames)
    dryRight = .allocate(capacity: maxFrames)
    super.init(id: id)
  }

  deinit {
    unit.deinitialize(count: 1)
    unit.deallocate()
    previous.deallocate()
    current.deallocate()
    smoothed.deallocate()
    outputs.deallocate()
    fade.deallocate()
    dryLeft.deallocate()
    dryRight.deallocate()
  }

  /// The unit's latency, read once in `prepare`. Thread: any.
  ///
  /// Never read from the unit while it runs: reading a value-type unit from another thread
  /// copies it, and the copy's extra reference to the unit's arrays makes the audio thread's
  /// next in-place write copy them (an allocation, and a data race).
  private var preparedLatencyFrames = 0
  public override var latencyFrames: Int { preparedLatencyFrames }

  public override func prepare(sampleRate: Double, maxFrames: Int, context: ProcessingContext) {
    precondition(maxFrames <= dryCapacity, "stage prepared beyond its capacity")
    fade.pointee.smoothing = Smoothing.alpha(frames: maxFrames, sampleRate: sampleRate)
    fade.pointee.frames = maxFrames
    fade.pointee.short = Smoothing.Coefficient(sampleRate: sampleRate)
    fade.pointee.step = Smoothing.bypassStep(sampleRate: sampleRate)
    unit.pointee.prepare(
      sampleRate: sampleRate, maxFrames: maxFrames,
      parameters: ParameterValues(previous: previous, current: current), context: context)
    preparedLatencyFrames = unit.pointee.latencyFrames
  }

  /// - Realtime: safe
  public override func reset() { unit.pointee.reset() }

  public override var wantsReference: Bool { Unit.wantsReference }

  /// - Realtime: safe
  public override func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {
    unit.pointee.receiveReference(block, from: source)
  }

  /// - Realtime: safe
  public override func skipsBlock(_ targets: ParameterTargets) -> Bool {
    let n = parameterCount
    let first = firstParameter
    for i in 0..<n {
      let c = current[i]
      if targets.value(first &+ i).bitPattern != c.bitPattern || previous[i].bitPattern != c.bitPattern {
        return false
      }
    }
    let mix = fade.pointee.mix
    if mix != (targets.value(first &+ n) >= 0.5 ? 1 : 0) { return false }  // a bypass fade to run
    return mix == 1 || Unit.isTransparent(ParameterValues(previous: previous, current: current))
  }

  /// - Realtime: safe
  public override func process(_ block: StereoBlock, targets: ParameterTargets) {
    let n = parameterCount
    let first = firstParameter
    // A shorter sub-block (a JACK period under 32 frames, a block's remainder) moves the values
    // by the same amount per frame as a full one (`Smoothing.alpha` of its own length).
    let alpha =
      block.frames == fade.pointee.frames
      ? fade.pointee.smoothing : fade.pointee.short.alpha(frames: block.frames)
    previous.update(from: current, count: n)
    Smoothing.advance(current, toward: targets, first: first, count: n, smoothed: smoothed, alpha: alpha)
    // The unit's outputs (meters) are published once, after it ran: bypassed, it does not run
    // and they keep the values published last.
    let bypassTarget: Float = targets.value(first &+ n) >= 0.5 ? 1 : 0
    let mix = fade.pointee.mix
    if mix == bypassTarget {
      if bypassTarget == 1 { return }
      run(block)
    } else {
      crossfade(block, from: mix, to: bypassTarget)
    }
    for k in 0..<outputCount {
      let i = outputs[k]
      targets.set(first &+ i, unit.pointee.outputValueInPlace(i))
    }
  }

  /// Runs the unit between copies of the dry signal and crossfades towards `target`.
  /// - Realtime: safe
  private func crossfade(_ block: StereoBlock, from start: Float, to target: Float) {
    let frames = block.frames
    if start == 1 { unit.pointee.reset() }
    dryLeft.update(from: block.left, count: frames)
    dryRight.update(from: block.right, count: frames)
    run(block)
    fade.pointee.mix = Smoothing.bypassFade(
      block, dryLeft: dryLeft, dryRight: dryRight, from: start, toward: target, step: fade.pointee.step)
  }

  /// Runs the unit; if any sample of its output is not finite, the sub-block is silenced and the
  /// unit reset (its state blew up, and would stay so): `Smoothing.silenceUnlessFinite`, the one
  /// policy of every stage.
  /// - Realtime: safe
  @inline(__always)
  private func run(_ block: StereoBlock) {
    unit.pointee.process(block, parameters: ParameterValues(previous: previous, current: current))
    if Smoothing.silenceUnlessFinite(block) { unit.pointee.reset() }
  }
}
