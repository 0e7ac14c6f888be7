import DSP
import Foundation
import Testing

/// The limiter is a brick wall: no output sample ever exceeds the ceiling, with no tolerance
/// beyond the Float rounding of the ceiling itself (10^(ceiling/20) rounded to Float, one ulp).
@Suite struct LimiterTests {
  typealias T = TestSignals

  /// The ceiling as a linear Float, and the largest value it may round to.
  static func ceiling(_ db: Float) -> (exact: Float, bound: Float) {
    let exact = Float(pow(10, Double(db) / 20))
    return (exact, exact.nextUp)
  }

  /// 0.25 s quiet, 0.5 s of a +20 dB (10× full scale) sine burst, 0.25 s quiet.
  static func burst(hz: Double, right: Bool = false) -> [Float] {
    let quarter = Int(T.sampleRate / 4)
    let quiet = T.sine(hz: 440, amplitude: 0.05, frames: 4 * quarter)
    let loud = T.sine(hz: hz, amplitude: 10, frames: 2 * quarter, phase: right ? 1 : 0)
    var x = quiet
    for i in 0..<loud.count { x[quarter + i] = loud[i] }
    return x
  }

  @Test("A +20 dB burst never exceeds the ceiling", arguments: [Float(-1), -6, -20, 0])
  func burstStaysUnderCeiling(ceilingDb: Float) {
    let chain = T.chain("limiter", ["ceiling_db": ceilingDb])
    var left = Self.burst(hz: 1000)
    var right = Self.burst(hz: 1370, right: true)
    let inputLeft = left
    T.process(chain, left: &left, right: &right, blockSize: 100)
    let (exact, bound) = Self.ceiling(ceilingDb)
    let peak = max(T.peak(left), T.peak(right))
    #expect(peak <= bound, "peak \(peak) over ceiling \(exact)")
    #expect(left.allSatisfy(\.isFinite) && right.allSatisfy(\.isFinite))
    // It limits (reaches the ceiling) rather than muting, and quiet input before the burst is
    // untouched.
    #expect(peak >= exact * 0.999)
    let quarter = Int(T.sampleRate / 4)
    #expect(Array(left[0..<quarter]) == Array(inputLeft[0..<quarter]))
    // Gain recovers after the burst: the last 50 ms of the quiet tail are back within 1 dB.
    let tail = (4 * quarter - 2400)..<(4 * quarter)
    #expect(T.peak(left[tail]) > 0.05 * 0.89)
    T.measured(
      "limiter \(ceilingDb) dB: peak \(peak), ceiling \(exact) (\(peak <= exact ? "at or under" : "one ulp over") the exact Float ceiling)"
    )
  }

  @Test("Full-scale square, DC and single-sample spikes never exceed the ceiling")
  func hardSignals() {
    let (exact, bound) = Self.ceiling(-1)
    for blockSize in [1, 7, 32, 256] {
      let chain = T.chain("limiter", ["ceiling_db": -1, "release_ms": 1])
      var left = (0..<9600).map { n -> Float in
        switch n {
        case ..<2400: return (n / 24) % 2 == 0 ? 10 : -10  // 1 kHz square at +20 dB
        case ..<4800: return 3  // DC
        default: return n % 97 == 0 ? 1e6 : 0.01 * Float(n % 5)  // isolated spikes
        }
      }
      var right = left.map { -$0 }
      T.process(chain, left: &left, right: &right, blockSize: blockSize)
      let peak = max(T.peak(left), T.peak(right))
      #expect(peak <= bound, "block \(blockSize): peak \(peak) over ceiling \(exact)")
    }
  }

  @Test("A ceiling change is smoothed and never overshot")
  func ceilingChange() {
    let chain = T.chain("limiter", ["ceiling_db": 0])
    let x = T.sine(hz: 500, amplitude: 4, frames: 24_000)
    var left = x
    var right = x
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        chain.process(left: l.baseAddress!, right: r.baseAddress!, frames: 4800)
        chain.set("limiter.ceiling_db", -20)
        chain.process(left: l.baseAddress! + 4800, right: r.baseAddress! + 4800, frames: 19_200)
      }
    }
    // Before the change: at most 0 dB; afterwards it falls towards -20 dB, never above 0 dB, and
    // settles (20 ms smoothing, so well within 0.3 s) at -20 dB.
    #expect(T.peak(left[0..<4800]) <= Self.ceiling(0).bound)
    #expect(T.peak(left[4800...]) <= Self.ceiling(0).bound)
    #expect(T.peak(left[(24_000 - 4800)...]) <= Self.ceiling(-20).bound)
    #expect(T.peak(left[(24_000 - 4800)...]) >= Self.ceiling(-20).exact * 0.999)
  }
}
