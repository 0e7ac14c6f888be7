import Foundation
import Testing

@testable import DSP

/// The feedback suppressor's frequency shift (`feedback.shift_hz`, `ShiftStage`): every
/// component moves up by the shift, the mirror image and the original stay far below it, nothing
/// clicks when it turns on or off, and a shift of 0 leaves the signal exactly as it was.
@Suite struct FrequencyShiftTests {
  typealias T = TestSignals

  /// Runs `x` (both channels) through a shift stage in 64-frame blocks; `hz(start)` is the
  /// shift for the block starting at frame `start`.
  static func shifted(_ x: [Float], hz: (Int) -> Float) -> [Float] {
    var stage = ShiftStage()
    var (left, right) = (x, x)
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        guard let lp = l.baseAddress, let rp = r.baseAddress else { return }
        for start in stride(from: 0, to: x.count, by: 64) {
          let block = StereoBlock(left: lp + start, right: rp + start, frames: min(64, x.count - start))
          stage.process(block, hz: hz(start), sampleRate: Float(T.sampleRate))
        }
      }
    }
    #expect(left == right)
    return left
  }

  @Test(
    "5 Hz up: the tone moves by 5 Hz at 0 dB; the image and the original stay 35 dB below",
    arguments: [60.0, 200, 1000, 3000, 8000, 15000])
  func shiftsUp(hz: Double) {
    let y = Self.shifted(T.sine(hz: hz, amplitude: 0.25, frames: 96_000)) { _ in 5 }
    // The last second: 1 Hz resolution, so the integer frequencies are orthogonal.
    let tail = Array(y[48_000...])
    let l = [hz + 5, hz, hz - 5].map { T.magnitudeDecibels(tail, atHz: $0, reference: 0.25 * 48_000 / 2) }
    T.measured(
      "frequency shift 5 Hz of \(Int(hz)) Hz: shifted " + String(format: "%+.2f", l[0]) + " dB, original "
        + String(format: "%.1f", l[1]) + " dB, image " + String(format: "%.1f", l[2]) + " dB")
    #expect(abs(l[0]) < 0.5)
    #expect(l[1] < -35 && l[2] < -35)
  }

  @Test("shift 0 leaves the signal exactly as it was")
  func zeroIsIdentity() {
    let x = T.sine(hz: 440, amplitude: 0.25, frames: 48_000)
    #expect(Self.shifted(x) { _ in 0 } == x)
  }

  @Test("turning the shift on and off does not click; off, the signal is exactly the input again")
  func noClick() {
    let x = T.sine(hz: 440, amplitude: 0.25, frames: 48_000 * 3)
    let y = Self.shifted(x) { start in (48_000..<96_000).contains(start) ? 5 : 0 }
    // A 440 Hz sine at 0.25 moves at most 0.0144 a frame; a click is many times that.
    let steady = T.maxJump(y, in: 1000..<47_000)
    let around = max(T.maxJump(y, in: 47_000..<52_000), T.maxJump(y, in: 95_000..<100_000))
    T.measured("frequency shift on/off: largest step \(around), steady \(steady)")
    #expect(around < 1.5 * steady)
    #expect(Array(y[100_000...]) == Array(x[100_000...]))
  }
}
