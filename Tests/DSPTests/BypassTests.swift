import DSP
import Foundation
import Testing

/// Bypass: a bypassed stage passes its input bit for bit, and toggling it crossfades linearly
/// over 10 ms (480 frames at 48 kHz) instead of stepping.
@Suite struct BypassTests {
  typealias T = TestSignals
  static let fadeFrames = Int(0.010 * T.sampleRate)

  @Test("Every unit bypassed: output bit-identical to input", arguments: [1, 32, 100, 256, 1024])
  func allBypassed(blockSize: Int) {
    let stages = BuiltinUnits.defaultChain.map {
      StageDescription(
        id: $0.id, type: $0.type, values: $0.type == "output" ? ["volume": 1] : [:], bypassed: true)
    }
    let chain = T.chain(stages)
    let l = zip(T.noise(frames: 9600, amplitude: 0.9), T.sine(hz: 97, amplitude: 0.05, frames: 9600)).map {
      $0 + $1
    }
    let r = T.noise(frames: 9600, amplitude: 1.5, seed: 7)
    var (left, right) = (l, r)
    T.process(chain, left: &left, right: &right, blockSize: blockSize)
    #expect(left.map(\.bitPattern) == l.map(\.bitPattern))
    #expect(right.map(\.bitPattern) == r.map(\.bitPattern))
  }

  @Test("Engaging bypass reaches the dry signal exactly within 10 ms")
  func engageIsExact() {
    let chain = T.chain("eq", ["bass_db": 20])
    let x = T.sine(hz: 100, amplitude: 0.25, frames: 9600)
    _ = T.processMono(chain, Array(x[0..<4800]))
    chain.set("eq.bypass", 1)
    let tail = Array(x[4800...])
    let y = T.processMono(chain, tail, blockSize: 32)
    // The fade ends within 10 ms plus the rounding of the last step (one sub-block).
    let settled = Self.fadeFrames + T.subBlock
    #expect(Array(y[settled...]) == Array(tail[settled...]))
    #expect(y[0] != tail[0], "not instant")
  }

  /// Toggling the EQ with a +20 dB bass boost on a 100 Hz sine (wet is ~10× the dry) both ways.
  /// During the fade y = wet·(1 − m) + dry·m with m moving 1/480 per frame, so a step is at most
  /// the larger steady-state step of wet and dry plus |wet − dry|/480. Without the fade the step
  /// would be |wet − dry| (here up to ~0.68).
  @Test("Toggling bypass crossfades without a step", arguments: [false, true])
  func toggle(startBypassed: Bool) {
    let x = T.sine(hz: 100, amplitude: 0.25, frames: 24_000)
    let wet = T.processMono(T.chain("eq", ["bass_db": 20]), x)
    let dry = x
    let steady = max(T.maxJump(wet, in: 9600..<24_000), T.maxJump(dry, in: 0..<24_000))
    let gap = zip(wet[9600...], dry[9600...]).map { abs($0 - $1) }.max()!
    let bound = steady + gap / Float(Self.fadeFrames) + 1e-4

    let chain = T.chain("eq", ["bass_db": 20], bypassed: startBypassed)
    var left = x
    var right = x
    let change = 12_000
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        chain.process(left: l.baseAddress!, right: r.baseAddress!, frames: change)
        chain.set("eq.bypass", startBypassed ? 0 : 1)
        chain.process(left: l.baseAddress! + change, right: r.baseAddress! + change, frames: 24_000 - change)
      }
    }
    let window = change..<(change + 2 * Self.fadeFrames)
    let jump = T.maxJump(left, in: window)
    #expect(jump <= bound, "step \(jump), bound \(bound) (steady \(steady), wet − dry up to \(gap))")
    #expect(gap > 20 * bound, "the fade is what prevents a step")
    T.measured(
      "bypass toggle from \(startBypassed ? "bypassed" : "active"): largest step \(jump), bound \(bound), steady \(steady), |wet − dry| up to \(gap)"
    )
  }
}
