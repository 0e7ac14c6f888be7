/// Feedback echo (delay) up to 2 s, per channel, with a smoothed (interpolated) delay time.
public struct Echo: VoiceUnit {
  public static let typeName = "echo"
  public static let summary = "Echo: repeats of the voice added at a level below the dry signal."
  public static let parameters = [
    ParameterSpec("time_ms", unit: "ms", range: 1...2000, default: 300, "Time between repeats."),
    ParameterSpec(
      "feedback", unit: "", range: 0...0.95, default: 0.3,
      "Level of each repeat relative to the previous one."),
    ParameterSpec(
      "mix", unit: "", range: 0...1, default: 0.25, "Level of the echoes added to the unchanged dry voice."),
  ]
  /// The longest delay time.
  public static let maximumMilliseconds: Float = 2000

  private var sampleRate: Float = 48000
  /// The delay line, both channels interleaved (left, right per frame): one frame's pair is one
  /// 8-byte load or store.
  private var line: [Float] = []
  private var length = 0
  private var write = 0

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    length = Int(Self.maximumMilliseconds * 0.001 * Float(sampleRate)) + maxFrames + 4
    line = [Float](repeating: 0, count: 2 * length)
    write = 0
  }

  /// - Realtime: safe
  public mutating func reset() {
    for i in 0..<line.count { line[i] = 0 }
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let frames = block.frames
    let framesPerMillisecond = sampleRate * 0.001
    let delayFrom = max(p.previous(0) * framesPerMillisecond, 1)
    let delayTo = max(p.current(0) * framesPerMillisecond, 1)
    var ramp = Ramps(
      delay: delayFrom, delayStep: (delayTo - delayFrom) / Float(frames),
      feedback: p.previous(1), feedbackStep: (p.current(1) - p.previous(1)) / Float(frames),
      mix: p.previous(2), mixStep: (p.current(2) - p.previous(2)) / Float(frames))
    let n = length
    // Four frames at a time need their reads to come from before this block's writes (a delay
    // of 5 frames or more throughout) and four consecutive read positions.
    let vectors = min(delayFrom, delayTo) >= 5
    var w = write
    line.withUnsafeMutableBufferPointer { buffer in
      guard let base = buffer.baseAddress else { return }
      let line = UnsafeMutableRawPointer(base)  // frame i at byte 8·i
      var f = 0
      while f < frames {
        if vectors && f + 4 <= frames && w + 4 <= n
          && Self.fourFrames(block, from: f, line: line, length: n, write: w, &ramp)
        {
          f += 4
          w += 4
        } else {
          Self.oneFrame(block, at: f, line: line, length: n, write: w, &ramp)
          f += 1
          w += 1
        }
        if w == n { w = 0 }
      }
    }
    write = w
  }

  /// The three parameters' linear ramps across a block: their values at the last frame done and
  /// their steps per frame.
  private struct Ramps {
    var delay: Float, delayStep: Float
    var feedback: Float, feedbackStep: Float
    var mix: Float, mixStep: Float

    /// The next frame's values.
    /// - Realtime: safe
    @inline(__always)
    mutating func advance() -> (delay: Float, feedback: Float, mix: Float) {
      delay += delayStep
      feedback += feedbackStep
      mix += mixStep
      return (delay, feedback, mix)
    }
  }

  /// One frame: linear interpolation between the two frames around the fractional read position
  /// (`Float(w) − delay`, wrapped into the line), fed back into the line and mixed into the
  /// output.
  /// - Realtime: safe
  @inline(__always)
  private static func oneFrame(
    _ block: StereoBlock, at f: Int, line: UnsafeMutableRawPointer, length n: Int, write w: Int,
    _ ramp: inout Ramps
  ) {
    let (delay, feedback, mix) = ramp.advance()
    var position = Float(w) - delay
    if position < 0 { position += Float(n) }
    // A position just below 0 can round up to exactly n (the same point as 0).
    if position >= Float(n) { position -= Float(n) }
    let i0 = Int(position)
    let frac = position - Float(i0)
    let i1 = i0 + 1 == n ? 0 : i0 + 1
    let d0 = line.load(fromByteOffset: 8 * i0, as: SIMD2<Float>.self)
    let d1 = line.load(fromByteOffset: 8 * i1, as: SIMD2<Float>.self)
    let d = d0 + (d1 - d0) * frac
    // Both channels are read before either is written.
    let x = SIMD2(block.left[f], block.right[f])
    line.storeBytes(of: (x + d * feedback).flushed(), toByteOffset: 8 * w, as: SIMD2<Float>.self)
    let y = x + d * mix
    block.left[f] = y.x
    block.right[f] = y.y
  }

  /// Frames f..<f+4 as vectors, `oneFrame`'s arithmetic lane by lane, when their four read
  /// positions are consecutive and do not wrap (false, doing nothing, otherwise). The line
  /// holds (left, right) pairs, so four frames are two vectors.
  /// - Realtime: safe
  @inline(__always)
  private static func fourFrames(
    _ block: StereoBlock, from f: Int, line: UnsafeMutableRawPointer, length n: Int, write w: Int,
    _ ramp: inout Ramps
  ) -> Bool {
    var next = ramp
    let (v0, v1, v2, v3) = (next.advance(), next.advance(), next.advance(), next.advance())
    let delay = SIMD4(v0.delay, v1.delay, v2.delay, v3.delay)
    var position = (Float(w) + SIMD4(0, 1, 2, 3)) - delay  // (w + k is exact in a Float)
    let size = SIMD4<Float>(repeating: Float(n))
    position = position.replacing(with: position + size, where: position .< 0)
    position = position.replacing(with: position - size, where: position .>= size)
    // ⌊position⌋, exactly (0 ≤ position < 2²²): adding 2²³ rounds to an integer; step back
    // where that rounded up.
    let rounded = (position + 8_388_608) - 8_388_608
    let whole = rounded.replacing(with: rounded - 1, where: rounded .> position)
    let i0 = Int(whole[0])
    guard whole == whole[0] + SIMD4(0, 1, 2, 3), i0 + 4 < n else { return false }
    ramp = next
    let frac = position - whole
    // Lanes per (left, right) pair: frames 0 and 1, then 2 and 3.
    let (frac01, frac23) = pairs(frac)
    let a0 = line.loadUnaligned(fromByteOffset: 8 * i0, as: SIMD4<Float>.self)
    let a1 = line.loadUnaligned(fromByteOffset: 8 * i0 + 16, as: SIMD4<Float>.self)
    let b0 = line.loadUnaligned(fromByteOffset: 8 * i0 + 8, as: SIMD4<Float>.self)
    let b1 = line.loadUnaligned(fromByteOffset: 8 * i0 + 24, as: SIMD4<Float>.self)
    let d01 = a0 + (b0 - a0) * frac01
    let d23 = a1 + (b1 - a1) * frac23
    let (fb01, fb23) = pairs(SIMD4(v0.feedback, v1.feedback, v2.feedback, v3.feedback))
    let (mix01, mix23) = pairs(SIMD4(v0.mix, v1.mix, v2.mix, v3.mix))
    // Both channels are read before either is written.
    let (l, r) = (block.left.load4(f), block.right.load4(f))
    let x01 = SIMD4(l[0], r[0], l[1], r[1])
    let x23 = SIMD4(l[2], r[2], l[3], r[3])
    line.storeBytes(of: (x01 + d01 * fb01).flushed(), toByteOffset: 8 * w, as: SIMD4<Float>.self)
    line.storeBytes(of: (x23 + d23 * fb23).flushed(), toByteOffset: 8 * w + 16, as: SIMD4<Float>.self)
    let y01 = x01 + d01 * mix01
    let y23 = x23 + d23 * mix23
    block.left.store4(f, SIMD4(y01[0], y01[2], y23[0], y23[2]))
    block.right.store4(f, SIMD4(y01[1], y01[3], y23[1], y23[3]))
    return true
  }

  /// (v0, v0, v1, v1) and (v2, v2, v3, v3): one value per frame, spread over its (left, right)
  /// pair.
  /// - Realtime: safe
  @inline(__always)
  private static func pairs(_ v: SIMD4<Float>) -> (SIMD4<Float>, SIMD4<Float>) {
    (SIMD4(v[0], v[0], v[1], v[1]), SIMD4(v[2], v[2], v[3], v[3]))
  }
}
