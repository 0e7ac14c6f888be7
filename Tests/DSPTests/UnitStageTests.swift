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
}
