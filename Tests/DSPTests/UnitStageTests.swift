import DSP
import Synchronization
import Testing

/// `UnitStage` keeps its unit to the audio thread: other threads see only what `prepare` read.
@Suite struct UnitStageTests {
  /// A unit that counts how often its latency is read.
  struct LatencyProbe: VoiceUnit {
    static let reads = Atomic<Int>(0)
    static var typeName: String { "latency-probe" }
    static var summary: String { "Counts reads of its latency." }
    static var parameters: [ParameterSpec] { [] }
    /// Storage like a real unit's, which an off-thread copy would share with the audio thread.
    var memory: [Float] = []
    init() {}
    mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
      memory = [Float](repeating: 0, count: maxFrames)
    }
    mutating func reset() {}
    mutating func process(_ block: StereoBlock, parameters: ParameterValues) {}
    var latencyFrames: Int {
      Self.reads.add(1, ordering: .relaxed)
      return 7
    }
  }

  @Test(
    "a stage reads its unit's latency once, in prepare; later reads (the supervisor's) never touch the unit")
  func latencyIsReadInPrepareOnly() {
    let stage = UnitStage<LatencyProbe>(id: "probe", firstParameter: 0, initial: [], maxFrames: 64)
    stage.prepare(sampleRate: 48000, maxFrames: 64)
    let reads = LatencyProbe.reads.load(ordering: .relaxed)
    #expect(reads == 1)
    for _ in 0..<100 { #expect(stage.latencyFrames == 7) }
    #expect(LatencyProbe.reads.load(ordering: .relaxed) == reads)
  }

  @Test("a settled output volume of exactly 1 is skipped; any other value, a move or a bypass fade runs")
  func transparentStageSkips() {
    let targets = ParameterTargets(initialValues: [1, 0])
    let stage = UnitStage<OutputVolume>(id: "output", firstParameter: 0, initial: [1, 0], maxFrames: 32)
    stage.prepare(sampleRate: 48000, maxFrames: 32)
    #expect(stage.skipsBlock(targets), "volume 1, settled")
    targets.set(0, 0.5)
    #expect(!stage.skipsBlock(targets), "a new target: the stage must move")
    let (l, r) = (
      UnsafeMutablePointer<Float>.allocate(capacity: 32), UnsafeMutablePointer<Float>.allocate(capacity: 32)
    )
    defer { [l, r].forEach { $0.deallocate() } }
    func block() {
      l.initialize(repeating: 1, count: 32)
      r.initialize(repeating: 1, count: 32)
      stage.process(StereoBlock(left: l, right: r, frames: 32), targets: targets)
    }
    for _ in 0..<2000 { block() }
    #expect(abs(l[31] - 0.5) < 1e-6 && !stage.skipsBlock(targets), "settled at 0.5: not transparent")
    targets.set(0, 1)
    block()
    #expect(!stage.skipsBlock(targets), "on its way back to 1")
    for _ in 0..<2000 { block() }
    #expect(l[31] == 1 && stage.skipsBlock(targets), "back at exactly 1")
    targets.set(1, 1)
    #expect(!stage.skipsBlock(targets), "a bypass fade to run")
    for _ in 0..<100 { block() }
    #expect(stage.skipsBlock(targets), "bypassed")
  }

  /// A unit that writes one NaN at frame `nanFrame` of its next block, and counts its resets.
  struct NaNProbe: VoiceUnit {
    nonisolated(unsafe) static var nanFrame = -1
    nonisolated(unsafe) static var resets = 0
    static var typeName: String { "nan-probe" }
    static var summary: String { "Writes one NaN into a block." }
    static var parameters: [ParameterSpec] { [] }
    init() {}
    mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {}
    mutating func reset() { Self.resets += 1 }
    mutating func process(_ block: StereoBlock, parameters: ParameterValues) {
      if Self.nanFrame >= 0 && Self.nanFrame < block.frames { block.left[Self.nanFrame] = .nan }
      Self.nanFrame = -1
    }
  }

  @Test(
    "a NaN anywhere in a unit's output (not only its last frame) silences the sub-block and resets the unit")
  func nonFiniteMidBlock() {
    let targets = ParameterTargets(initialValues: [0])
    let stage = UnitStage<NaNProbe>(id: "probe", firstParameter: 0, initial: [0], maxFrames: 32)
    stage.prepare(sampleRate: 48000, maxFrames: 32)
    let (l, r) = (
      UnsafeMutablePointer<Float>.allocate(capacity: 32), UnsafeMutablePointer<Float>.allocate(capacity: 32)
    )
    defer { [l, r].forEach { $0.deallocate() } }
    l.initialize(repeating: 0.5, count: 32)
    r.initialize(repeating: 0.5, count: 32)
    NaNProbe.resets = 0
    NaNProbe.nanFrame = 7
    stage.process(StereoBlock(left: l, right: r, frames: 32), targets: targets)
    #expect((0..<32).allSatisfy { l[$0] == 0 && r[$0] == 0 }, "the sub-block is silenced")
    #expect(NaNProbe.resets == 1, "the unit is reset")
    l.update(repeating: 0.5, count: 32)
    stage.process(StereoBlock(left: l, right: r, frames: 32), targets: targets)
    #expect(l[0] == 0.5 && l[31] == 0.5 && NaNProbe.resets == 1, "finite output passes again")
  }
}
