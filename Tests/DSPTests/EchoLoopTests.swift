import DSP
import Foundation
import Testing

/// The echo canceller in a closed acoustic loop, offline, through the real reference path: a
/// `VoiceChain` of `aec` and `output` (volume 1) whose own output, played into a simulated room,
/// comes back to its input (`VoiceChain.process` hands the output to `aec` as its reference, as
/// in JACK; the test never gives the unit a reference itself).
///
/// Loop: mic[n] = s[n] + (h ∗ y)[n − d], s the near-end speech (espeak-ng's sentence three times
/// with 0.5 s pauses), y the chain's output, d = 20 ms (960 frames, longer than the 256-frame
/// block, so each block's echo comes from earlier blocks' output), h a room of a direct path at
/// −6 dB and decaying reflections over 5 ms, ‖h‖₁ = 0.9 < 1: the loop is stable at every
/// frequency even without cancellation (the chain's gain is 1).
///
/// Method: each configuration (aec active; aec bypassed) runs twice with the same speech, once
/// with the echo path and once without. Both runs have the same latency, so the output's echo
/// is the difference of the two outputs, sample by sample: e[n] = y_echo[n] − y_dry[n]. (The
/// difference also counts any change the echo makes to how the near end is processed, so it
/// overstates the residual echo, never understates it.) Over the last repetition (after two
/// for the filter to converge), with E = energy:
/// - loop ERLE = 10·log10(E[echo reaching the microphone] / E[e]): 0 dB when bypassed;
/// - echo-to-speech ratio at the output, ESR = 10·log10(E[e] / E[y_dry]); the echo reduction
///   is ESR(bypassed) − ESR(aec).
///
/// Also printed: the same ratio in the last pause alone (s silent, everything out is echo).
///
/// Double talk: the near end survives when the output with echo still correlates with s
/// (moved by the chain's declared latency).
///
/// Measured (Swift 6.3.1, speexdsp 1.2.1): bypassed, ESR −3.6 dB; aec, ESR −10.7 dB, loop ERLE
/// 5.4 dB, i.e. 7.1 dB of echo reduction; correlation with the near end 0.849 → 0.889. Far
/// below the 15+ dB ERLE the unit reaches against an independent far end (SpeexUnitTests):
/// here the reference is the near-end speech itself, 15 ms later, so the adaptive filter is
/// biased (the known problem of closed-loop/feedback cancellation): it also "cancels" the part
/// of the speech predictable from its own past (without any echo path the output correlates
/// with s at only 0.925), and in the pauses its estimate does not match the echo (ERLE there
/// is negative). The thresholds are set a little below these figures, to catch regressions.
@Suite struct EchoLoopTests {
  typealias T = TestSignals

  static let block = 256
  static let delay = 960

  /// The room: direct path 0.5 (−6 dB) and 24 reflections decaying over 5 ms (fixed signs and
  /// places), scaled so that the absolute taps sum to 0.9.
  static let room: [(lag: Int, gain: Float)] = {
    var taps: [(Int, Float)] = [(0, 0.5)]
    var seed: UInt64 = 12345
    var tail: [(Int, Float)] = []
    for k in 1...24 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let lag = k * 10 + Int(seed >> 60)
      let sign: Float = (seed >> 33) & 1 == 0 ? 1 : -1
      tail.append((lag, sign * Float(exp(-Double(lag) / 80))))
    }
    let sum = tail.reduce(Float(0)) { $0 + abs($1.1) }
    for (lag, g) in tail { taps.append((lag, g * 0.4 / sum)) }
    return taps
  }()

  struct Run {
    var output: [Float]
    /// The echo added to the microphone signal.
    var echo: [Float]
  }

  /// Runs `s` through a fresh chain (aec active or bypassed, then output at volume 1) in a
  /// closed loop through the room, or open (`echoPath` false).
  static func run(_ s: [Float], bypassed: Bool, echoPath: Bool) -> Run {
    let chain = T.chain([
      StageDescription(id: "aec", type: "aec", bypassed: bypassed),
      StageDescription(id: "output", type: "output", values: ["volume": 1]),
    ])
    var output = [Float](repeating: 0, count: s.count)
    var echo = [Float](repeating: 0, count: s.count)
    var left = [Float](repeating: 0, count: block)
    var right = [Float](repeating: 0, count: block)
    var offset = 0
    while offset < s.count {
      let n = min(block, s.count - offset)
      for i in 0..<n {
        let t = offset + i
        var e: Float = 0
        if echoPath {
          for (lag, g) in room where t - delay - lag >= 0 { e += g * output[t - delay - lag] }
        }
        echo[t] = e
        left[i] = s[t] + e
        right[i] = left[i]
      }
      chain.process(left: &left, right: &right, blockFrames: n, frames: n)
      for i in 0..<n { output[offset + i] = left[i] }
      offset += n
    }
    return Run(output: output, echo: echo)
  }

  static func decibels(_ ratio: Double) -> Double { 10 * log10(ratio) }

  /// Normalized correlation of `x` and `y`.
  static func correlation(_ x: ArraySlice<Float>, _ y: ArraySlice<Float>) -> Double {
    var (xy, xx, yy) = (0.0, 0.0, 0.0)
    for (a, b) in zip(x, y) {
      xy += Double(a) * Double(b)
      xx += Double(a) * Double(a)
      yy += Double(b) * Double(b)
    }
    return xy / (xx * yy).squareRoot()
  }

  @Test("aec removes the echo of the chain's own output in a closed loop; near-end speech survives")
  func closedLoop() {
    guard let speech = Speech.samples else { return }
    let gap = [Float](repeating: 0, count: 24_000)
    let once = speech + gap
    let s = once + once + once
    let window = (2 * once.count)..<s.count
    let latency = T.chain("aec").latencyFrames

    var results: [(name: String, erle: Double, esr: Double, correlation: Double, pauseERLE: Double)] = []
    for bypassed in [true, false] {
      let wet = Self.run(s, bypassed: bypassed, echoPath: true)
      let dry = Self.run(s, bypassed: bypassed, echoPath: false)
      #expect(wet.output.allSatisfy { $0.isFinite && abs($0) < 2 }, "the loop stays bounded")
      let residual = window.map { Double(wet.output[$0]) - Double(dry.output[$0]) }
      let residualEnergy = residual.reduce(0) { $0 + $1 * $1 }
      let erle = Self.decibels(Speech.energy(wet.echo[window]) / residualEnergy)
      let esr = Self.decibels(residualEnergy / Speech.energy(dry.output[window]))
      // The output with echo against the near-end speech, moved by the latency the chain has
      // in this configuration (none when the only latent unit is bypassed).
      let shift = bypassed ? 0 : latency
      let r = Self.correlation(
        wet.output[(window.lowerBound + shift)..<s.count], s[window.lowerBound..<(s.count - shift)])
      // The last pause, from one chain latency and 5 ms after the speech ends: the near end is
      // silent, all that comes out is echo.
      let pause = (s.count - gap.count + latency + 240)..<s.count
      let pauseERLE = Self.decibels(Speech.energy(wet.echo[pause]) / Speech.energy(wet.output[pause]))
      let dryCorrelation = Self.correlation(
        dry.output[(window.lowerBound + shift)..<s.count], s[window.lowerBound..<(s.count - shift)])
      results.append((bypassed ? "bypassed" : "aec", erle, esr, r, pauseERLE))
      T.measured(
        "closed loop, \(bypassed ? "aec bypassed" : "aec active"): loop ERLE \(String(format: "%.1f", erle)) dB, echo-to-speech at the output \(String(format: "%.1f", esr)) dB, correlation with the near end \(String(format: "%.3f", r)) (\(String(format: "%.3f", dryCorrelation)) without the echo path); ERLE in the last pause \(String(format: "%.1f", pauseERLE)) dB"
      )
    }
    let (off, on) = (results[0], results[1])
    let reduction = off.esr - on.esr
    T.measured("closed loop: aec reduces the echo by \(String(format: "%.1f", reduction)) dB")
    #expect(abs(off.erle) < 1, "bypassed, the output's echo is the microphone's: \(off.erle) dB")
    #expect(reduction >= 5, "echo reduction \(reduction) dB")
    #expect(on.erle >= 4, "loop ERLE \(on.erle) dB")
    #expect(on.correlation >= 0.87, "near-end correlation \(on.correlation)")
  }
}
