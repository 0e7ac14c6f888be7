import Testing

@testable import DSP

/// The chain's per-stage timing (`VoiceChain.stageTimes`) samples one block in
/// `timedBlockInterval`. A unit whose work comes every few blocks (the howl analysis every
/// 512 frames, speexdsp's 240-frame frames) must not fall always, or never, on the sampled
/// blocks: at 64 frames a sample of every 16th block saw the howl analysis's hop in each one and
/// reported the feedback stage's mean as its hop cost (27.8 µs where the mean is about 1 µs).
struct StageTimingTests {
  /// For any period of work from 2 to 64 blocks, each phase of the period gets its share of the
  /// timed blocks (within 25 %), and the share of timed blocks is one in `timedBlockInterval`.
  @Test func timedBlocksDoNotAliasWithPeriodicWork() {
    let total = 1 << 20
    var timed = 0
    for n in 0..<total where VoiceChain.isTimedBlock(UInt32(n)) { timed += 1 }
    let share = Double(timed) / Double(total)
    #expect(abs(share * Double(VoiceChain.timedBlockInterval) - 1) < 0.05, "share \(share)")
    for period in [2, 3, 4, 5, 8, 15, 16, 30, 32, 64] {
      var perPhase = [Int](repeating: 0, count: period)
      for n in 0..<total where VoiceChain.isTimedBlock(UInt32(n)) { perPhase[n % period] += 1 }
      let expected = Double(timed) / Double(period)
      let worst = perPhase.map { abs(Double($0) - expected) / expected }.max() ?? 0
      #expect(worst < 0.25, "period \(period): timed blocks per phase \(perPhase)")
    }
  }

  /// The sampled selection does not drift from run to run: the same blocks are timed.
  @Test func selectionIsDeterministic() {
    let a = (0..<4096).filter { VoiceChain.isTimedBlock(UInt32($0)) }
    let b = (0..<4096).filter { VoiceChain.isTimedBlock(UInt32($0)) }
    #expect(a == b && !a.isEmpty)
  }
}
