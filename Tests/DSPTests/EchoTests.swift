import DSP
import Foundation
import Testing

/// The echo's repeats land where its parameters say, and its fractional read position never
/// leaves the delay line.
@Suite struct EchoTests {
  typealias T = TestSignals

  @Test("An impulse repeats after time_ms at mix, mix·feedback, mix·feedback², …")
  func repeats() {
    let chain = T.chain("echo", ["time_ms": 250, "feedback": 0.5, "mix": 0.4])
    let y = T.processMono(chain, T.impulse(frames: 48_000))
    #expect(y[0] == 1)
    let delay = 12_000  // 250 ms at 48 kHz
    for k in 1...3 {
      let expected = 0.4 * pow(0.5, Float(k - 1))
      // The read position is fractional (250 · 48 kHz/1000 in Float is a hair over 12 000), so
      // the repeat may be shared between two neighbouring frames.
      let around = y[(k * delay - 1)...(k * delay + 1)]
      #expect(abs(around.reduce(0, +) - expected) < 1e-4, "repeat \(k): \(Array(around))")
      #expect(T.peak(y[(k * delay - 1000)..<(k * delay - 1)]) == 0, "nothing before repeat \(k)")
    }
  }

  /// Regression: with time_ms at an integer number of milliseconds the delay in frames is a hair
  /// above an integer (48 kHz × 0.001 rounds up in Float), so once per lap the read position
  /// `w − delay` is a tiny negative number; adding the line length rounded it up to exactly the
  /// length, one past the end of the delay line (a crash in debug builds, an out-of-bounds read
  /// in release). The default 300 ms hit it after 0.3 s; the minimum, 1 ms, while the chain was
  /// being prepared.
  @Test("Delay times never read outside the delay line", arguments: [Float(1), 2, 300, 1000, 2000, 123.456])
  func readStaysInside(timeMs: Float) {
    let chain = T.chain("echo", ["time_ms": timeMs])
    // Longer than the line (2 s + a sub-block) so every read position is visited.
    let y = T.processMono(chain, T.noise(frames: 100_000, amplitude: 0.5), blockSize: 1000)
    #expect(y.allSatisfy { $0.isFinite && abs($0) < 2 })
  }

  @Test("Sweeping the delay time visits every read position without leaving the line")
  func sweep() {
    let chain = T.chain("echo", ["time_ms": 1, "feedback": 0.9])
    var x = T.sine(hz: 220, amplitude: 0.5, frames: 4800)
    var right = x
    for time in stride(from: Float(1), through: 2000, by: 37.3) {
      chain.set("echo.time_ms", time)
      T.process(chain, left: &x, right: &right)
      #expect(x.allSatisfy { $0.isFinite })
    }
  }
}
