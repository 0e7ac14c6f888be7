#if canImport(Glibc)
  import Glibc
#endif

/// A slow loudness target for streams: measures the short-term loudness of its input (EBU R128:
/// K-weighting, 3 s window, in 100 ms steps) and moves a gain, at most `rate_db_s` dB per
/// second, so the output's loudness approaches `target_lufs`.
///
/// - While the input's short-term loudness is below `gate_lufs` (pauses, silence, room noise)
///   the gain holds: nothing quiet is pumped up.
/// - The gain stays within −`max_cut_db` … +`max_boost_db`.
/// - The gain is never raised past what keeps the input's peaks of the last 10 s (and of the
///   sub-block at hand) within `limiting_db` of `ceiling_db` (the following limiter's ceiling):
///   the target may make the limiter work that much at most, and never at all with
///   `limiting_db` 0. Over that mark the gain falls at 10 dB/s (or 4 × `rate_db_s`, if faster)
///   while the limiter catches the transient.
///
/// No latency; its current gain and the measured input loudness are the read-only `gain_db` and
/// `input_lufs`. Meant for a place just before the limiter (the `stream` preset has one there).
public struct LoudnessTarget: VoiceUnit {
  public static let typeName = "loudness"
  public static let summary =
    "Slow loudness target for streams (EBU R128 short-term), never past the ceiling; holds in pauses."
  public static let parameters = [
    ParameterSpec(
      "target_lufs", unit: "LUFS", range: -40 ... -6, default: -16, "Short-term loudness to approach."),
    ParameterSpec("max_boost_db", unit: "dB", range: 0...24, default: 10, "Largest gain applied."),
    ParameterSpec("max_cut_db", unit: "dB", range: 0...24, default: 10, "Largest attenuation applied."),
    ParameterSpec(
      "rate_db_s", unit: "dB/s", range: 0.1...10, default: 1,
      "Fastest change of the gain towards the target (rising; it falls at least 10 dB/s under a new peak)."),
    ParameterSpec(
      "gate_lufs", unit: "LUFS", range: -70 ... -20, default: -45,
      "Short-term input loudness below which the gain holds (pauses are not boosted)."),
    ParameterSpec(
      "ceiling_db", unit: "dBFS", range: -20...0, default: -1,
      "The following limiter's ceiling (--loudness-target copies it from the chain's limiter)."),
    ParameterSpec(
      "limiting_db", unit: "dB", range: 0...12, default: 3,
      "How far the gain may push the last 10 s of peaks over the ceiling for the limiter to catch."),
    ParameterSpec(
      "gain_db", unit: "dB", range: -24...24, default: 0, kind: .output, "The gain applied now (read-only)."),
    ParameterSpec(
      "input_lufs", unit: "LUFS", range: -70...0, default: -70, kind: .output,
      "Short-term loudness of the input (read-only; -70 when silent)."),
  ]
  /// Short-term window: 30 blocks of 100 ms.
  static let windowBlocks = 30
  /// Peak memory: 100 blocks of 100 ms.
  static let peakBlocks = 100

  private var sampleRate: Float = 48000
  /// K-weighting: the pre-filter (high shelf) then the RLB high-pass, per channel.
  private var shelf = StereoBiquad()
  private var highPass = StereoBiquad()
  private var blockFrames = 4800
  private var framesInBlock = 0
  private var blockEnergy: Double = 0
  private var blockPeak: Float = 0
  /// The energies (mean square summed over channels) of the last 30 blocks and the sample peaks
  /// of the last 100.
  private var energies = [Double](repeating: 0, count: windowBlocks)
  private var peaks = [Float](repeating: 0, count: peakBlocks)
  private var blockIndex = 0
  private var peakIndex = 0
  private var blocksSeen = 0
  private var shortTermLufs: Float = -70
  private var windowPeak: Float = 0
  private var gainDecibels: Float = 0
  private var gain: Float = 1

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    (shelf.coefficients, highPass.coefficients) = Self.kWeighting(sampleRate: sampleRate)
    blockFrames = max(Int((sampleRate / 10).rounded()), 1)
    reset()
  }

  /// The K-weighting filter's two sections at `sampleRate` (ITU-R BS.1770, as libebur128
  /// computes them for any rate).
  public static func kWeighting(sampleRate: Double) -> (
    shelf: BiquadCoefficients, highPass: BiquadCoefficients
  ) {
    var shelf = BiquadCoefficients()
    var k = tan(Double.pi * 1681.974450955533 / sampleRate)
    var q = 0.7071752369554196
    let vh = pow(10, 3.999843853973347 / 20)
    let vb = pow(vh, 0.4996667741545416)
    var a0 = 1 + k / q + k * k
    shelf.b0 = Float((vh + vb * k / q + k * k) / a0)
    shelf.b1 = Float(2 * (k * k - vh) / a0)
    shelf.b2 = Float((vh - vb * k / q + k * k) / a0)
    shelf.a1 = Float(2 * (k * k - 1) / a0)
    shelf.a2 = Float((1 - k / q + k * k) / a0)
    var highPass = BiquadCoefficients()
    k = tan(Double.pi * 38.13547087602444 / sampleRate)
    q = 0.5003270373238773
    a0 = 1 + k / q + k * k
    (highPass.b0, highPass.b1, highPass.b2) = (1, -2, 1)
    highPass.a1 = Float(2 * (k * k - 1) / a0)
    highPass.a2 = Float((1 - k / q + k * k) / a0)
    return (shelf, highPass)
  }

  /// - Realtime: safe
  public mutating func reset() {
    shelf.reset()
    highPass.reset()
    (framesInBlock, blockEnergy, blockPeak) = (0, 0, 0)
    for i in 0..<Self.windowBlocks { energies[i] = 0 }
    for i in 0..<Self.peakBlocks { peaks[i] = 0 }
    (blockIndex, peakIndex, blocksSeen, shortTermLufs, windowPeak) = (0, 0, 0, -70, 0)
    (gainDecibels, gain) = (0, 1)
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float {
    index == 7 ? gainDecibels : index == 8 ? shortTermLufs : 0
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let n = block.frames
    let subBlockPeak = measure(block)
    // The gain: towards the target while the input is above the gate, by at most rate × time.
    let seconds = Float(n) / sampleRate
    var next = gainDecibels
    if blocksSeen > 0 && shortTermLufs >= p.current(4) {
      let wanted = min(max(p.current(0) - shortTermLufs, -p.current(2)), p.current(1))
      let most = p.current(3) * seconds
      next += min(max(wanted - next, -most), most)
    }
    next = min(max(next, -p.current(2)), p.current(1))
    let peak = max(windowPeak, blockPeak, subBlockPeak)
    if peak > 0 {
      // The peaks only stop the gain from rising; cutting is the loudness's business.
      let cap = max(p.current(5) + p.current(6) - DSPMath.decibels(gain: peak), 0)
      if next > cap { next = min(next, max(cap, gainDecibels - max(10, 4 * p.current(3)) * seconds)) }
    }
    next = max(next, -24)
    let from = gain
    let to = next == gainDecibels ? gain : DSPMath.gain(decibels: next)
    (gainDecibels, gain) = (next, to)
    let step = (to - from) / Float(n)
    for f in 0..<n {
      let g = from + step * Float(f + 1)
      block.left[f] *= g
      block.right[f] *= g
    }
  }

  /// Runs the K-weighting over the input, closes each 100 ms block (updating the short-term
  /// loudness and the window's peak) and returns the sub-block's sample peak.
  /// - Realtime: safe
  @inline(__always)
  private mutating func measure(_ block: StereoBlock) -> Float {
    var peak: Float = 0
    var f = 0
    while f < block.frames {
      let m = min(block.frames - f, blockFrames - framesInBlock)
      let (energy, stretchPeak) = StereoBiquad.measure(
        &shelf, &highPass, left: block.left + f, right: block.right + f, frames: m)
      peak = max(peak, stretchPeak)
      blockEnergy += Double(energy)
      blockPeak = max(blockPeak, stretchPeak)
      framesInBlock += m
      f += m
      if framesInBlock == blockFrames { closeBlock() }
    }
    return peak
  }

  /// - Realtime: safe
  @inline(__always)
  private mutating func closeBlock() {
    energies[blockIndex] = blockEnergy / Double(blockFrames)
    peaks[peakIndex] = blockPeak
    blockIndex = (blockIndex + 1) % Self.windowBlocks
    peakIndex = (peakIndex + 1) % Self.peakBlocks
    blocksSeen = min(blocksSeen + 1, Self.windowBlocks)
    (framesInBlock, blockEnergy, blockPeak) = (0, 0, 0)
    var (sum, top): (Double, Float) = (0, 0)
    for i in 0..<Self.windowBlocks { sum += energies[i] }
    for i in 0..<Self.peakBlocks { top = max(top, peaks[i]) }
    let mean = sum / Double(blocksSeen)
    shortTermLufs = mean > 1e-7 ? max(Float(-0.691 + 10 * log10(mean)), -70) : -70
    windowPeak = top
  }
}
