import DSP
import Foundation
import Testing

/// Parameter smoothing, as `UnitStage` documents it: once per 32-frame sub-block every continuous
/// parameter moves a fraction α = 1 − exp(−32 / (0.020 s · 48 kHz)) ≈ 0.0328 of its remaining
/// distance to the target (a one-pole with a 20 ms time constant), and snaps to the target when
/// within 1e-6 of it. Gain-like parameters (input.gain_db, output.volume, compressor makeup,
/// echo and reverb mix, limiter ceiling) are then interpolated linearly across the sub-block.
///
/// Bounds that follow, for a parameter jump of Δ with the input held at DC x:
/// - linear gain (output.volume): the gain changes by at most α·|Δ| per sub-block, linearly, so
///   |y[n] − y[n−1]| ≤ |x|·α·|Δ|/32.
/// - gain in dB (input.gain_db): the dB value moves by at most α·|ΔdB| per sub-block, so the
///   gain ratio across a sub-block is at most R = 10^(α·|ΔdB|/20), and within the linear ramp
///   the per-sample ratio is at most 1 + (R − 1)/32. For a rise to gain g_T the absolute step is
///   also bounded: with r the remaining distance in dB, the sub-block step is
///   g_T·10^(−(1−α)r/20)·(1 − 10^(−αr/20)) ≤ g_T·(ln 10/20)·α·r·e^(−(1−α)·r·ln 10/20), whose
///   maximum over r is g_T·α/((1 − α)·e), so |y[n] − y[n−1]| ≤ |x|·g_T·α/((1 − α)·e·32).
@Suite struct SmoothingTests {
  typealias T = TestSignals

  static let n = Double(VoiceChain.subBlockFrames)
  static let alpha = 1 - exp(-n / (0.020 * T.sampleRate))
  /// Float rounding of the ramp arithmetic (absolute, for gains up to 1).
  static let epsilon: Float = 1e-6
  /// Relative Float rounding of a ramp accumulated over one sub-block (`g += step` 32 times): up
  /// to 32 half-ulps, so a settling ramp may wobble by a few parts per million.
  static let rampSlack = 32 * Double(Float.ulpOfOne)

  /// Runs DC `x` through `chain` for `frames`, changing `key` to `value` after `before` frames.
  static func stepResponse(
    _ chain: VoiceChain, x: Float, before: Int, frames: Int, key: String, value: Float, blockSize: Int = 256
  ) -> [Float] {
    var left = [Float](repeating: x, count: frames)
    var right = left
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        guard let lb = l.baseAddress, let rb = r.baseAddress else { return }
        var offset = 0
        while offset < frames {
          if offset == before { chain.set(key, value) }
          let count = min(blockSize, (offset < before ? before : frames) - offset)
          chain.process(left: lb + offset, right: rb + offset, frames: count)
          offset += count
        }
      }
    }
    #expect(left == right)
    return left
  }

  @Test("The documented constants")
  func constants() {
    #expect(VoiceChain.subBlockFrames == 32)
    #expect(UnitStage<OutputVolume>.smoothingMilliseconds == 20)
    #expect(UnitStage<OutputVolume>.bypassFadeMilliseconds == 10)
    #expect(abs(Self.alpha - 0.032_789) < 1e-5)
  }

  @Test("output.volume 0 → 1 and back: per-sample step ≤ |x|·α·|Δ|/32, time constant 20 ms")
  func linearVolume() {
    let x: Float = 1
    let bound = Float(Self.alpha / Self.n) * x + Self.epsilon
    let up = Self.stepResponse(
      T.chain("output", ["volume": 0]), x: x, before: 256, frames: 48_000, key: "output.volume", value: 1)
    #expect(up[0..<256].allSatisfy { $0 == 0 })
    let jump = T.maxJump(up, in: 0..<up.count)
    #expect(jump <= bound, "largest step \(jump), bound \(bound)")
    #expect(jump >= bound * 0.99, "the bound is reached in the first sub-block")
    // After 20 ms (30 sub-blocks) the gain has covered 1 − (1 − α)^30 = 1 − 1/e of the way.
    #expect(abs(Double(up[256 + 959]) - (1 - exp(-1))) < 1e-4)
    // Settled exactly, and monotonic throughout.
    #expect(up[(up.count - 32)...].allSatisfy { $0 == x })
    #expect(zip(up, up.dropFirst()).allSatisfy { $0 <= $1 + Self.epsilon })

    let down = Self.stepResponse(
      T.chain("output", ["volume": 1]), x: x, before: 256, frames: 48_000, key: "output.volume", value: 0)
    #expect(T.maxJump(down, in: 0..<down.count) <= bound)
    #expect(down[(down.count - 32)...].allSatisfy { $0 == 0 })
    T.measured("output.volume 0→1: largest step \(jump), bound α/32 = \(Self.alpha / Self.n)")
  }

  @Test("input.gain_db −40 → +20 dB and back: per-sample gain ratio and step bounds")
  func decibelGain() {
    let x: Float = 0.5
    let delta = 60.0
    let ratio = 1 + (pow(10, Self.alpha * delta / 20) - 1) / Self.n
    let target = pow(10, 20.0 / 20)
    let stepBound = Double(x) * target * Self.alpha / ((1 - Self.alpha) * M_E * Self.n)

    let up = Self.stepResponse(
      T.chain("input", ["gain_db": -40]), x: x, before: 512, frames: 48_000, key: "input.gain_db", value: 20)
    var worstRatio = 1.0
    for i in 1..<up.count {
      let r = Double(up[i]) / Double(up[i - 1])
      worstRatio = max(worstRatio, r)
      #expect(
        r >= 1 - Self.rampSlack && r <= ratio + Self.rampSlack, "frame \(i): ratio \(r), bound \(ratio)")
    }
    let jump = Double(T.maxJump(up, in: 0..<up.count))
    #expect(jump <= stepBound + 1e-6, "largest step \(jump), bound \(stepBound)")
    #expect(up.last == x * DSPMath.gain(decibels: 20))

    let down = Self.stepResponse(
      T.chain("input", ["gain_db": 20]), x: x, before: 512, frames: 48_000, key: "input.gain_db", value: -40)
    for i in 1..<down.count {
      let r = Double(down[i - 1]) / Double(down[i])
      #expect(
        r >= 1 - Self.rampSlack && r <= ratio + Self.rampSlack, "frame \(i): ratio \(r), bound \(ratio)")
    }
    #expect(down.last == x * DSPMath.gain(decibels: -40))
    T.measured(
      "input.gain_db -40→+20: worst ratio \(worstRatio) (bound \(ratio)), largest step \(jump) (bound \(stepBound))"
    )
  }

  /// A settled parameter is exactly its target (the documented snap), whatever its magnitude:
  /// the output is then bit-identical to the input times the target gain.
  @Test("Settled values are exact", arguments: [Float(20), 7.3, -13.7, 40, -60, 0.5, 3])
  func settlesExactly(db: Float) {
    let x = T.noise(frames: 256, amplitude: 0.5)
    let chain = T.chain("input")
    chain.set("input.gain_db", db)
    _ = T.processMono(chain, [Float](repeating: 0.1, count: 48_000))  // 1 s: settled long since
    let y = T.processMono(chain, x)
    let g = DSPMath.gain(decibels: db)
    let off = zip(y, x).filter { $0 != $1 * g }.count
    #expect(
      off == 0,
      "gain_db \(db) did not settle on its target: \(off) of \(y.count) samples differ (e.g. \(y[0]) vs \(x[0] * g))"
    )
  }

  /// Hosts whose buffers are not a multiple of 32 frames get a shorter final sub-block of n
  /// frames; it moves α_n = 1 − (1 − α)^(n/32) ≤ α·n/32 of the way (Bernoulli), so the
  /// per-sample step stays within the same α·|Δ|/32 (here 48-frame buffers: sub-blocks of 32
  /// and 16 frames).
  @Test("Uneven host buffers: the same per-sample step bound")
  func unevenBuffers() {
    let up = Self.stepResponse(
      T.chain("output", ["volume": 0]), x: 1, before: 480, frames: 24_000, key: "output.volume", value: 1,
      blockSize: 48)
    let jump = T.maxJump(up, in: 0..<up.count)
    #expect(jump <= Float(Self.alpha / 32) + Self.epsilon)
    T.measured("output.volume 0→1 with 48-frame buffers: largest step \(jump) (α/32 = \(Self.alpha / 32))")
  }
}
