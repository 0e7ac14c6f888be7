import DSP
import Foundation
import Testing

/// "No step" for every continuous parameter of every unit: a 100 Hz sine at 0.25 runs through a
/// chain of that one unit (not bypassed); the parameter jumps from its minimum to its maximum
/// and back mid-signal. The largest sample-to-sample jump of the output in the 50 ms after each
/// change must not exceed 3 × the largest jump in steady state at either value, plus 1e-4.
/// Parameters whose change legitimately moves the signal faster than that have their own,
/// explained, bound (`extraAllowance`); none is skipped.
@Suite struct ParameterStepTests {
  typealias T = TestSignals

  struct Case: Sendable, CustomTestStringConvertible {
    var unit: String
    var parameter: String
    var minimum: Float
    var maximum: Float
    var testDescription: String { "\(unit).\(parameter) \(minimum) ↔ \(maximum)" }
  }

  static let cases: [Case] = BuiltinUnits.types.flatMap { type in
    type.parameters.filter { $0.kind == .continuous }.map {
      Case(unit: type.typeName, parameter: $0.name, minimum: $0.minimum, maximum: $0.maximum)
    }
  }

  static let amplitude: Float = 0.25
  static let window = Int(0.050 * T.sampleRate)
  /// Time at each value before the next change: smoothing (20 ms per e-fold) has settled to
  /// within 1e-8 of the range.
  static let hold = Int(0.5 * T.sampleRate)

  /// Other parameters set so the one under test has an audible effect (a band's frequency only
  /// matters when the band has gain; a limiter's release only when it limits; a closed gate's
  /// range only when it is closed).
  static let baseValues: [String: [String: Float]] = [
    "eq": ["bass_db": 9, "mid_db": -6, "treble_db": 6],
    "limiter": ["ceiling_db": -20],
    "compressor": ["threshold_db": -30, "makeup_db": 6],
    "gate": ["threshold_db": -10],  // the 0.25 sine (-12 dBFS) stays below: the gate closes
    "highpass": ["freq_hz": 80],
  ]

  /// An allowance added to the bound, for changes whose effect is legitimately faster than the
  /// signal's own steady-state slope. (Lowering gate.threshold_db below the signal opens the
  /// gate with its 1 ms attack: the gain rises by at most the attack coefficient, 0.0206, per
  /// sample, i.e. 0.005 on top of the sine's 0.0033 slope — within 3× the steady step, so the
  /// gate needs no allowance.)
  static func extraAllowance(_ c: Case) -> Float {
    switch (c.unit, c.parameter) {
    case ("echo", "time_ms"):
      // Changing the delay time sweeps the read position through the delay line (by up to
      // α·96 000 frames per sub-block, ~100 frames per sample: a tape-speed "zip"), so the
      // echo part, mix × delayed signal, may jump anywhere within its range each sample. The
      // delay line holds at most |x|/(1 − feedback), so the echo part moves by at most
      // 2·mix·|x|/(1 − feedback) between samples (defaults: mix 0.25, feedback 0.3).
      return 2 * 0.25 * amplitude / (1 - 0.3)
    default:
      return 0
    }
  }

  /// The signal from `start`: a continuing 100 Hz sine.
  static func sine(from start: Int, count: Int) -> [Float] {
    (start..<(start + count)).map {
      amplitude * Float(sin(2 * Double.pi * 100 * Double($0) / T.sampleRate))
    }
  }

  @Test("No step larger than the steady-state slope allows", arguments: cases)
  func noStep(_ c: Case) {
    var values = Self.baseValues[c.unit] ?? [:]
    values[c.parameter] = c.minimum
    let chain = T.chain(c.unit, values)
    let key = "\(c.unit).\(c.parameter)"
    var output: [Float] = []
    var changes: [Int] = []
    // min (hold) → max (hold) → min (hold)
    for (i, value) in [c.minimum, c.maximum, c.minimum].enumerated() {
      if i > 0 {
        chain.set(key, value)
        changes.append(output.count)
      }
      output += T.processMono(chain, Self.sine(from: output.count, count: Self.hold))
    }
    #expect(output.allSatisfy { $0.isFinite })
    let steadyAtMinimum = T.maxJump(output, in: (changes[0] - Self.window)..<changes[0])
    let steadyAtMaximum = T.maxJump(output, in: (changes[1] - Self.window)..<changes[1])
    let steadyAtEnd = T.maxJump(output, in: (output.count - Self.window)..<output.count)
    let steady = max(steadyAtMinimum, steadyAtMaximum, steadyAtEnd)
    let bound = 3 * steady + 1e-4 + Self.extraAllowance(c)
    for change in changes {
      let jump = T.maxJump(output, in: change..<(change + Self.window))
      #expect(
        jump <= bound, "\(key): jump \(jump) after the change at \(change), steady \(steady), bound \(bound)")
    }
    let worst = changes.map { T.maxJump(output, in: $0..<($0 + Self.window)) }.max()!
    T.measured("step \(c.testDescription): worst jump \(worst), steady \(steady), bound \(bound)")
  }
}
