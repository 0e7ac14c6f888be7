import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A ready-to-run chain of stages with its parameter targets.
///
/// Built and prepared off the audio thread (see `ChainBuilder`); then `process` runs on the audio
/// thread (or in the offline renderer), splitting any block into sub-blocks of at most
/// `subBlockFrames`, so a JACK buffer-size change needs no re-preparation. Each stage runs over
/// all of a block's sub-blocks before the next stage starts.
/// Thread: `process` on one thread at a time; `targets` from any thread.
public final class VoiceChain: @unchecked Sendable {
  /// Frames per sub-block: parameters are smoothed and coefficients updated at this rate.
  public static let subBlockFrames = 32

  /// A parameter the chain exposes: its key (`eq.bass_db`), index in `targets`, and spec.
  public struct Parameter: Sendable {
    public let key: String
    public let index: Int
    public let spec: ParameterSpec
  }

  /// The stages in processing order.
  public let stages: [Stage]
  /// Every parameter's target value, settable from any thread.
  public let targets: ParameterTargets
  /// The parameters in index order.
  public let parameters: [Parameter]
  /// How many parameters there are (`parameters.count`, readable without touching the array).
  public let parameterCount: Int
  private let indexByKey: [String: Int]
  /// Index in `targets` of the first parameter of the chain's `music` stage (`MusicBed`), whose
  /// parameters follow in `MusicBed.parameters` order, then its bypass; nil without one.
  public let musicParameterIndex: Int?

  /// Index in `targets` of the first parameter of the chain's `monitor` stage (`MonitorMix`);
  /// nil without one.
  public let monitorParameterIndex: Int?

  /// This cycle's MIDI events, for the stages that take MIDI (filled by the engine before
  /// `process` when `wantsMidi`).
  public let midiEvents = MidiEvents()
  /// Whether a stage takes MIDI (`Stage.wantsMidi`).
  public let wantsMidi: Bool

  /// The feeds of the stages' extra inputs (`Stage.feedSources`): the chain's input,
  /// the music bed, and the output of each stage another reads (by stage index), filled as the
  /// block runs.
  private let inputFeed: SignalFeed?
  private let musicFeed: SignalFeed?
  private let stageFeeds: UnsafeMutablePointer<Unmanaged<SignalFeed>?>
  /// Per stage: the feed of the voice as it reaches the stage (`SignalSource.voice`), filled
  /// just before it runs; and whether the stage runs on the music bed (`processesMusic`).
  private let voiceFeeds: UnsafeMutablePointer<Unmanaged<SignalFeed>?>
  private let onMusic: UnsafeMutablePointer<Bool>
  /// Whether a stage processes the music bed: then the engine mixes `processedMusic`.
  public let processesMusic: Bool
  /// Keeps the feeds alive (`stageFeeds` holds them unretained).
  private let feeds: [SignalFeed]

  /// How the chain was prepared to run (offline, or live with its helper threads' priority and
  /// the host period its units' latency was declared for).
  public private(set) var context = ProcessingContext.offline

  /// The sample rate the chain was prepared for.
  public private(set) var sampleRate: Double = 0

  /// The stages again, as unretained references: `stages` keeps them alive, and the audio thread
  /// calls them without a retain/release pair per stage and sub-block.
  private let order: UnsafeMutablePointer<StageReference>
  private struct StageReference {
    let stage: Unmanaged<Stage>
    /// Whether it takes the whole block (`Stage.takesWholeBlock`).
    let wholeBlock: Bool
  }

  /// The built-in stages that want the chain's output (`VoiceUnit.wantsReference`), unretained.
  private let referenceStages: UnsafeMutablePointer<Unmanaged<Stage>>
  private let referenceStageCount: Int

  /// Per stage: nanoseconds spent (sum and largest block) and blocks timed, written by the
  /// thread that runs `process`, read by anyone (`stageTimes()`).
  private let timing: UnsafeMutablePointer<Atomic<UInt64>>
  /// Blocks processed (by the thread that runs `process`): every `timedBlockInterval`-th is
  /// timed.
  private let blocksRun: UnsafeMutablePointer<UInt32>
  /// One block in this many is timed per stage (`isTimedBlock`): two clock readings per stage per
  /// block cost more than a small stage (about 20 ns each), and a sample keeps the mean.
  public static let timedBlockInterval: UInt32 = 16

  init(stages: [Stage], parameters: [Parameter], initialValues: [Float]) {
    self.stages = stages
    self.parameters = parameters
    parameterCount = parameters.count
    self.targets = ParameterTargets(initialValues: initialValues)
    var keys: [String: Int] = [:]
    for p in parameters { keys[p.key] = p.index }
    indexByKey = keys
    monitorParameterIndex = stages.lazy.compactMap { ($0 as? UnitStage<MonitorMix>)?.firstParameter }.first
    musicParameterIndex = stages.lazy.compactMap { ($0 as? UnitStage<MusicBed>)?.firstParameter }.first
    timing = .allocate(capacity: max(stages.count * 3, 1))
    for i in 0..<(stages.count * 3) { (timing + i).initialize(to: Atomic(0)) }
    blocksRun = .allocate(capacity: 1)
    blocksRun.initialize(to: 0)
    order = .allocate(capacity: max(stages.count, 1))
    for (i, stage) in stages.enumerated() {
      (order + i).initialize(
        to: StageReference(stage: Unmanaged.passUnretained(stage), wholeBlock: stage.takesWholeBlock))
    }
    let midiStages = stages.filter(\.wantsMidi)
    for stage in midiStages { stage.attach(midi: midiEvents) }
    wantsMidi = !midiStages.isEmpty
    // Feeds: one for the input, one for the music, one per stage whose output another reads.
    var (input, music): (SignalFeed?, SignalFeed?) = (nil, nil)
    var byStage: [Int: SignalFeed] = [:]
    var byVoice: [Int: SignalFeed] = [:]
    stageFeeds = .allocate(capacity: max(stages.count, 1))
    stageFeeds.initialize(repeating: nil, count: max(stages.count, 1))
    voiceFeeds = .allocate(capacity: max(stages.count, 1))
    voiceFeeds.initialize(repeating: nil, count: max(stages.count, 1))
    onMusic = .allocate(capacity: max(stages.count, 1))
    onMusic.initialize(repeating: false, count: max(stages.count, 1))
    var anyOnMusic = false
    for (s, stage) in stages.enumerated() where stage.processesMusic {
      onMusic[s] = true
      anyOnMusic = true
      if music == nil { music = SignalFeed() }
    }
    processesMusic = anyOnMusic
    for (s, stage) in stages.enumerated() {
      guard !stage.feedSources.isEmpty else { continue }
      let attached = stage.feedSources.map { source -> SignalFeed in
        switch source {
        case .voice:
          let feed = byVoice[s] ?? SignalFeed()
          byVoice[s] = feed
          return feed
        case .input:
          if input == nil { input = SignalFeed() }
          return input ?? SignalFeed()
        case .music:
          if music == nil { music = SignalFeed() }
          return music ?? SignalFeed()
        case .stage(let id):
          // An earlier stage's output; a later or unknown one stays silent (presets refuse it).
          guard let k = stages.firstIndex(where: { $0.id == id }), k < s else { return SignalFeed() }
          let feed = byStage[k] ?? SignalFeed()
          byStage[k] = feed
          return feed
        }
      }
      stage.attach(feeds: attached)
    }
    for (k, feed) in byStage { stageFeeds[k] = Unmanaged.passUnretained(feed) }
    for (k, feed) in byVoice { voiceFeeds[k] = Unmanaged.passUnretained(feed) }
    (inputFeed, musicFeed) = (input, music)
    feeds = [input, music].compactMap { $0 } + Array(byStage.values) + Array(byVoice.values)
    let listeners = stages.filter(\.wantsReference)
    referenceStageCount = listeners.count
    referenceStages = .allocate(capacity: max(listeners.count, 1))
    for (i, stage) in listeners.enumerated() {
      (referenceStages + i).initialize(to: Unmanaged.passUnretained(stage))
    }
  }

  deinit {
    order.deinitialize(count: stages.count)
    order.deallocate()
    stageFeeds.deallocate()
    voiceFeeds.deallocate()
    onMusic.deallocate()
    referenceStages.deallocate()
    timing.deinitialize(count: stages.count * 3)
    timing.deallocate()
    blocksRun.deallocate()
  }

  /// Processing time per stage since the chain was built: mean and largest per block, in µs,
  /// over one block in `timedBlockInterval`. Thread: any.
  public func stageTimes() -> [(id: String, meanMicroseconds: Double, maxMicroseconds: Double)] {
    stages.enumerated().map { i, stage in
      let sum = timing[3 * i].load(ordering: .relaxed)
      let most = timing[3 * i + 1].load(ordering: .relaxed)
      let count = timing[3 * i + 2].load(ordering: .relaxed)
      return (stage.id, count > 0 ? Double(sum) / Double(count) / 1000 : 0, Double(most) / 1000)
    }
  }

  /// Whether block `n` (counted from the chain's first) is timed: one in `timedBlockInterval`,
  /// chosen by Fibonacci hashing (the top 4 bits of n·2³²/φ, a Weyl sequence), so that work
  /// which comes every few blocks (a frame, an FFT hop) is sampled in each of its phases alike;
  /// a plain `n % 16` timed the howl analysis's hop in every sample at 64 frames.
  /// - Realtime: safe
  @inline(__always)
  static func isTimedBlock(_ n: UInt32) -> Bool { (n &* 0x9E37_79B1) >> 28 == 0 }

  /// Monotonic time in nanoseconds (the vDSO clock: no system call).
  /// - Realtime: safe
  @inline(__always)
  static func nanoseconds() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
  }

  /// Total latency of the chain in frames.
  public var latencyFrames: Int { stages.reduce(0) { $0 + $1.latencyFrames } }

  /// The parameter named `key`, if the chain has it.
  public func parameter(_ key: String) -> Parameter? {
    indexByKey[key].map { parameters[$0] }
  }

  /// Sets the target of `key`, sanitized to its range. Returns the value used, or nil when the
  /// chain has no such settable parameter (read-only outputs are not). Thread: any.
  @discardableResult
  public func set(_ key: String, _ value: Float) -> Float? {
    guard let p = parameter(key), p.spec.kind != .output else { return nil }
    let v = p.spec.sanitize(value)
    targets.set(p.index, v)
    return v
  }

  /// How long a chain with LV2 plugins is warmed before it is heard. Plugins smooth their own
  /// controls from internal start values (x42 fil4 takes about 300 ms to reach its high-pass
  /// settings: a 440 Hz tone came out 5 dB low at first), so a chain swapped in after one block
  /// dipped; after this long they have settled.
  public static let pluginWarmSeconds = 0.5

  /// Prepares every stage for `sampleRate` and runs silence through the chain so that first-run
  /// costs (type metadata caches) are paid here, not on the audio thread: one block of built-in
  /// units, or, with plugins, `pluginWarmSeconds` in blocks of `warmFrames` (the host's period,
  /// so plugins promised fixed blocks get them). Not real-time.
  public func prepare(
    sampleRate: Double, warmFrames: Int = subBlockFrames * 4, context: ProcessingContext = .offline
  ) {
    self.sampleRate = sampleRate
    self.context = context
    for stage in stages {
      stage.prepare(sampleRate: sampleRate, maxFrames: Self.subBlockFrames, context: context)
    }
    // Built-in units are warmed with the same block whatever the host's period (so a render's
    // output does not depend on --frames). Before this looked for plugins by type, and every
    // stage matched: plugins got one block of 128 frames, even those promised fixed blocks.
    let hasPlugins = stages.contains { $0.warmsLikeAPlugin }
    let frames = hasPlugins ? max(warmFrames, 1) : Self.subBlockFrames * 4
    let blocks =
      hasPlugins ? max(1, Int((Self.pluginWarmSeconds * sampleRate / Double(frames)).rounded(.up))) : 1
    let left = UnsafeMutablePointer<Float>.allocate(capacity: frames)
    let right = UnsafeMutablePointer<Float>.allocate(capacity: frames)
    midiEvents.clear()
    for _ in 0..<blocks {
      left.initialize(repeating: 0, count: frames)
      right.initialize(repeating: 0, count: frames)
      process(left: left, right: right, frames: frames)
    }
    for stage in stages { stage.reset() }
    for i in 0..<(stages.count * 3) { timing[i].store(0, ordering: .relaxed) }  // warm-up is not measured
    left.deallocate()
    right.deallocate()
  }

  /// Processes `frames` samples of a stereo signal in place, then hands the result to the stages
  /// that want it as a reference (`VoiceUnit.receiveReference`). `inputSanitized`: the block was
  /// made safe already (`copySanitized`), so `sanitize` is not run again.
  /// - Realtime: safe
  public func process(
    left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int,
    inputSanitized: Bool = false
  ) {
    if !inputSanitized { Self.sanitize(left: left, right: right, frames: frames) }
    let count = stages.count
    let targets = self.targets
    // Stage by stage, each over all the sub-blocks: a stage's sub-block depends only on its own
    // state and the previous stage's output for the same frames, so the order is free, and this
    // one keeps each stage's code and state hot for the whole block.
    let timed = Self.isTimedBlock(blocksRun.pointee)
    blocksRun.pointee &+= 1
    inputFeed?.fill(left: left, right: right, frames: frames)
    for s in 0..<count {
      defer { stageFeeds[s]?._withUnsafeGuaranteedRef { $0.fill(left: left, right: right, frames: frames) } }
      guard timed else {
        run(stage: s, left: left, right: right, frames: frames, targets: targets)
        continue
      }
      let started = Self.nanoseconds()
      run(stage: s, left: left, right: right, frames: frames, targets: targets)
      let spent = Self.nanoseconds() &- started
      // One writer (the thread that runs `process`): a load and a store, no locked add.
      timing[3 * s].store(timing[3 * s].load(ordering: .relaxed) &+ spent, ordering: .relaxed)
      if spent > timing[3 * s + 1].load(ordering: .relaxed) {
        timing[3 * s + 1].store(spent, ordering: .relaxed)
      }
      timing[3 * s + 2].store(timing[3 * s + 2].load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }
    // The final output, as the reference of the units that want it (an echo canceller).
    if referenceStageCount > 0 {
      let block = StereoBlock(left: left, right: right, frames: frames)
      for i in 0..<referenceStageCount {
        referenceStages[i]._withUnsafeGuaranteedRef { $0.receiveReference(block, from: .output) }
      }
    }
  }

  /// Whether a stage reads the music bed (a plugin's sidechain or CV input): then the engine
  /// hands it over before `process` each cycle (`feedMusic`).
  public var wantsMusicFeed: Bool { musicFeed != nil }

  /// The music bed as the stages that process it left it in this cycle (`processesMusic`), for
  /// the engine to mix instead of the music as it came in; nil without such a stage.
  public var processedMusic: (left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>)? {
    guard processesMusic, let musicFeed else { return nil }
    return (musicFeed.left, musicFeed.right)
  }

  /// The music bed of the block about to be processed, as it comes in (nil: none, silence), for
  /// the stages that read it.
  /// - Realtime: safe
  public func feedMusic(left: UnsafePointer<Float>?, right: UnsafePointer<Float>?, frames: Int) {
    musicFeed?.fill(left: left, right: right, frames: frames)
  }

  /// Whether a stage wants references (an echo canceller): then the engine hands it the music
  /// bed too (`receiveMusic`).
  public var wantsReferences: Bool { referenceStageCount > 0 }

  /// Hands the music bed of the block just processed, as mixed into the output, to the stages
  /// that want references (after `process`, each cycle the music bed plays).
  /// - Realtime: safe
  public func receiveMusic(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int)
  {
    let block = StereoBlock(left: left, right: right, frames: frames)
    for i in 0..<referenceStageCount {
      referenceStages[i]._withUnsafeGuaranteedRef { $0.receiveReference(block, from: .music) }
    }
  }

  /// Runs stage `s` over the block: a built-in one sub-block by sub-block, another (a plugin)
  /// over the whole block, since it may need the host's period.
  /// - Realtime: safe
  @inline(__always)
  private func run(
    stage s: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int,
    targets: ParameterTargets
  ) {
    voiceFeeds[s]?._withUnsafeGuaranteedRef { $0.fill(left: left, right: right, frames: frames) }
    let stage = order[s].stage
    if onMusic[s], let music = musicFeed {
      // Only the frames the feed holds (`SignalFeed.capacity`); a longer block's rest is silent.
      let block = StereoBlock(left: music.left, right: music.right, frames: min(frames, SignalFeed.capacity))
      stage._withUnsafeGuaranteedRef { $0.process(block, targets: targets) }
      return
    }
    if order[s].wholeBlock {
      let block = StereoBlock(left: left, right: right, frames: frames)
      stage._withUnsafeGuaranteedRef { $0.process(block, targets: targets) }
      return
    }
    if stage._withUnsafeGuaranteedRef({ $0.skipsBlock(targets) }) { return }
    var offset = 0
    while offset < frames {
      let n = min(Self.subBlockFrames, frames - offset)
      let block = StereoBlock(left: left + offset, right: right + offset, frames: n)
      stage._withUnsafeGuaranteedRef { $0.process(block, targets: targets) }
      offset += n
    }
  }

  /// Input beyond any real signal is made safe before it reaches a unit: non-finite samples
  /// (a broken upstream client) become 0 and finite ones are clamped to ±`inputLimit`
  /// (+60 dBFS), so no setting of the chain's gains can overflow a Float. In place: the one
  /// clamp, `copySanitized`, with the block as its own source.
  /// - Realtime: safe
  @inline(__always)
  static func sanitize(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
    copySanitized(left, right, into: left, right, frames: frames)
  }

  /// Copies an input into the buffers a chain runs in (or onto itself), made safe: copied eight
  /// lanes at a time while each group's magnitude bits are compared with the limit's, the
  /// verdicts or-ed together and tested once at the end; only a block with a sample beyond the
  /// limit is copied again sample by sample. `inputRight` may be `inputLeft` (a mono input feeds
  /// both channels).
  /// - Realtime: safe
  @inline(__always)
  public static func copySanitized(
    _ inputLeft: UnsafePointer<Float>, _ inputRight: UnsafePointer<Float>,
    into left: UnsafeMutablePointer<Float>,
    _ right: UnsafeMutablePointer<Float>, frames: Int
  ) {
    // Magnitude bits compared as signed integers (no sign bit left; SSE2 has no unsigned compare).
    let magnitude = SIMD8<Int32>(repeating: 0x7FFF_FFFF)
    let limit = SIMD8<Int32>(repeating: Int32(bitPattern: inputLimit.bitPattern))
    let (inL, inR) = (UnsafeRawPointer(inputLeft), UnsafeRawPointer(inputRight))
    let (outL, outR) = (UnsafeMutableRawPointer(left), UnsafeMutableRawPointer(right))
    var beyond = SIMDMask<SIMD8<Int32>>(repeating: false)
    var f = 0
    if inputLeft == inputRight {
      while f &+ 8 <= frames {
        let x = inL.loadUnaligned(fromByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        beyond .|= (x & magnitude) .> limit
        outL.storeBytes(of: x, toByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        outR.storeBytes(of: x, toByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        f &+= 8
      }
    } else {
      while f &+ 8 <= frames {
        let l = inL.loadUnaligned(fromByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        let r = inR.loadUnaligned(fromByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        beyond .|= ((l & magnitude) .> limit) .| ((r & magnitude) .> limit)
        outL.storeBytes(of: l, toByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        outR.storeBytes(of: r, toByteOffset: 4 &* f, as: SIMD8<Int32>.self)
        f &+= 8
      }
    }
    if any(beyond) { f = 0 }  // the whole block again, one by one
    while f < frames {
      left[f] = safe(inputLeft[f])
      right[f] = safe(inputRight[f])
      f &+= 1
    }
  }

  /// The largest input magnitude the chain accepts (60 dB above full scale).
  public static let inputLimit: Float = 1000

  /// - Realtime: safe
  @inline(__always)
  static func safe(_ x: Float) -> Float {
    x.isFinite ? min(max(x, -inputLimit), inputLimit) : 0
  }
}

/// Offline use of a chain over whole arrays: the renderer, the response plot, the benchmark and
/// the tests.
extension VoiceChain {
  /// Processes `frames` frames of `left` and `right` from `start` (to their end when nil) in
  /// place, `blockFrames` at a time. Thread: any but the audio thread (it may copy the arrays).
  public func process(
    left: inout [Float], right: inout [Float], blockFrames: Int, from start: Int = 0, frames: Int? = nil
  ) {
    let end = min(left.count, right.count, start + (frames ?? left.count - start))
    guard start < end, blockFrames > 0 else { return }
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        guard let l = l.baseAddress, let r = r.baseAddress else { return }
        var offset = start
        while offset < end {
          let n = min(blockFrames, end - offset)
          process(left: l + offset, right: r + offset, frames: n)
          offset += n
        }
      }
    }
  }
}
