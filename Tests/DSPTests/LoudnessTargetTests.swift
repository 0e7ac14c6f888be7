import DSP
import Foundation
import Testing

/// The slow loudness target (`loudness`): its short-term measurement, how it reaches the
/// target, its rate, its gate, and the ceiling it never pushes the peaks past.
@Suite("Loudness target")
struct LoudnessTargetTests {
  /// A chain of one `loudness` stage.
  static func chain(_ values: [String: Float]) -> VoiceChain {
    TestSignals.chain("loudness", values)
  }

  static func output(_ chain: VoiceChain, _ name: String) -> Float {
    chain.targets.value(TestSignals.index(chain, "loudness.\(name)"))
  }

  /// Runs `seconds` of `signal(frame)` on both channels; returns the last second of the output.
  static func run(_ chain: VoiceChain, seconds: Double, from start: Int = 0, _ signal: (Int) -> Float)
    -> [Float]
  {
    let frames = Int(seconds * TestSignals.sampleRate)
    var left = (0..<frames).map { signal(start + $0) }
    var right = left
    TestSignals.process(chain, left: &left, right: &right)
    return Array(left.suffix(48000))
  }

  /// White noise at `amplitude` (uniform in ±amplitude), the same on both channels.
  static func noise(_ amplitude: Float) -> (Int) -> Float {
    let samples = TestSignals.noise(frames: 48000, amplitude: amplitude)
    return { samples[$0 % samples.count] }
  }

  @Test("EBU Tech 3341 case 1: a 1 kHz sine at -23 dBFS on both channels measures -23.0 LUFS")
  func measuresSineAtMinus23() {
    for rate in [44100.0, 48000.0, 96000.0] {
      let chain = try! ChainAssembly.build(
        [StageDescription(id: "loudness", type: "loudness", values: ["max_boost_db": 0, "max_cut_db": 0])],
        sampleRate: rate)
      let amplitude = Float(pow(10, -23.0 / 20))
      var left = (0..<Int(4 * rate)).map { amplitude * Float(sin(2 * Double.pi * 1000 * Double($0) / rate)) }
      var right = left
      TestSignals.process(chain, left: &left, right: &right)
      let lufs = Self.output(chain, "input_lufs")
      TestSignals.measured("loudness target: 1 kHz at -23 dBFS, \(Int(rate)) Hz: \(lufs) LUFS")
      #expect(abs(lufs - -23) <= 0.1)
      #expect(Self.output(chain, "gain_db") == 0)
    }
  }

  @Test("a steady signal 12 LU under the target is brought to it at rate_db_s, no faster")
  func reachesTargetAtItsRate() {
    let chain = Self.chain(["target_lufs": -16, "max_boost_db": 20, "rate_db_s": 2, "limiting_db": 12])
    let signal = Self.noise(0.02)
    _ = Self.run(chain, seconds: 3, signal)
    let input = Self.output(chain, "input_lufs")
    let afterThree = Self.output(chain, "gain_db")
    _ = Self.run(chain, seconds: 12, from: 3 * 48000, signal)
    let settled = Self.output(chain, "gain_db")
    TestSignals.measured(
      "loudness target: input \(input) LUFS, gain \(afterThree) dB after 3 s at 2 dB/s, \(settled) dB after 15 s"
    )
    // Measuring starts with the first 100 ms block: 2.9 s of 2 dB/s.
    #expect(afterThree <= 6 + 0.01 && afterThree >= 5.6)
    #expect(abs(input + settled - -16) <= 0.05, "the gain is the target minus the input's loudness")
  }

  @Test("loud input is cut, within max_cut_db")
  func cutsLoudInput() {
    let chain = Self.chain(["target_lufs": -30, "max_cut_db": 6, "rate_db_s": 10])
    _ = Self.run(chain, seconds: 5, Self.noise(0.3))
    let (input, gain) = (Self.output(chain, "input_lufs"), Self.output(chain, "gain_db"))
    TestSignals.measured("loudness target: input \(input) LUFS, cut to \(gain) dB (max 6)")
    #expect(input > -20)
    #expect(gain == -6)
  }

  @Test("under gate_lufs the gain holds: pauses and room noise are not pumped up")
  func holdsUnderTheGate() {
    let chain = Self.chain(["target_lufs": -16, "gate_lufs": -45])
    _ = Self.run(chain, seconds: 6, Self.noise(0.002))
    TestSignals.measured(
      "loudness target: noise at \(Self.output(chain, "input_lufs")) LUFS, gain \(Self.output(chain, "gain_db")) dB"
    )
    #expect(Self.output(chain, "input_lufs") < -45)
    #expect(Self.output(chain, "gain_db") == 0)
  }

  @Test("the gain never raises the last 10 s of peaks past ceiling_db + limiting_db")
  func neverPastTheCeiling() {
    // Quiet noise with a click of 0.5 (-6 dBFS) every second: the loudness wants +14 dB, the
    // peaks allow -1 + 1 - (-6) = 6 dB.
    let noise = Self.noise(0.02)
    let signal = { (f: Int) -> Float in f % 48000 == 1000 ? 0.5 : noise(f) }
    let chain = Self.chain([
      "target_lufs": -16, "max_boost_db": 20, "rate_db_s": 5, "ceiling_db": -1, "limiting_db": 1,
    ])
    let last = Self.run(chain, seconds: 12, signal)
    let gain = Self.output(chain, "gain_db")
    let peak = 20 * log10(TestSignals.peak(last))
    TestSignals.measured("loudness target: clicks at -6 dBFS, gain \(gain) dB, output peak \(peak) dBFS")
    #expect(abs(gain - (-1 + 1 - 20 * log10(0.5))) <= 0.01)
    #expect(peak <= 0 + 0.01)
  }

  @Test("a sudden peak brings the gain down at 10 dB/s, not in a jump")
  func fallsUnderANewPeak() {
    let noise = Self.noise(0.02)
    let chain = Self.chain(["target_lufs": -16, "max_boost_db": 12, "rate_db_s": 2, "limiting_db": 0])
    _ = Self.run(chain, seconds: 8, noise)
    let before = Self.output(chain, "gain_db")
    // A click of 0.5 allows -1 - (-6) = 5 dB: the gain falls from 12 by 10 dB/s.
    var left = (0..<4800).map { $0 == 0 ? Float(0.5) : noise(8 * 48000 + $0) }
    var right = left
    TestSignals.process(chain, left: &left, right: &right)
    let after = Self.output(chain, "gain_db")
    TestSignals.measured("loudness target: gain \(before) dB, 100 ms after a -6 dBFS click \(after) dB")
    #expect(before == 12)
    #expect(abs(after - 11) <= 0.05)
  }
}
