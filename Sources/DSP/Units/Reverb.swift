/// Freeverb-style room reverb: mono in (the mean of both channels), stereo out, eight damped
/// comb filters and four all-passes per side, lengths scaled to the sample rate.
///
/// Speed: a block is cut into stretches in which no line of a group of four wraps around, so
/// each line reads and writes consecutive samples, four frames per vector. A comb's damping
/// low-pass is a first-order recursion; it runs on four frames at once as a prefix scan
/// (`Reverb.combChunk`), the same sums in another rounding order. Four combs (or the four
/// all-passes of a side, in series) advance together, so their recursions overlap.
public struct Reverb: VoiceUnit {
  public static let typeName = "reverb"
  /// Its left and right tanks differ: a mono voice comes out wide.
  public static let makesChannelsDiffer = true
  public static let summary = "Room reverb (Freeverb topology), mono in, stereo out."
  public static let parameters = [
    ParameterSpec("room_size", unit: "", range: 0...1, default: 0.5, "Room size (decay time)."),
    ParameterSpec("damping", unit: "", range: 0...1, default: 0.5, "High-frequency damping of the tail."),
    ParameterSpec(
      "mix", unit: "%", range: 0...100, default: 15, "Wet share of the output: 0 dry only, 100 reverb only."),
    ParameterSpec("width", unit: "%", range: 0...100, default: 100, "Stereo width of the tail."),
  ]
  // Freeverb's tunings at 44.1 kHz.
  private static let combTunings = [1116, 1188, 1277, 1356, 1422, 1491, 1557, 1617]
  private static let allpassTunings = [556, 441, 341, 225]
  private static let stereoSpread = 23

  /// One delay line inside `memory`: its start, length and position; combs also keep a
  /// low-pass state.
  private struct Line {
    var start = 0
    var length = 1
    var index = 0
    var store: Float = 0
  }
  /// Every delay line, then three blocks of scratch: the mono input and the two wet signals.
  private var memory: [Float] = []
  /// The 16 combs (8 left, then 8 right), then the 8 all-passes (4 left, then 4 right).
  private var lines: [Line] = []
  /// Where the scratch starts in `memory`, and the frames each scratch block holds.
  private var scratch = 0
  private var scratchFrames = 0

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    let scale = sampleRate / 44100
    var total = 0
    func line(_ tuning: Int) -> Line {
      let n = max(Int((Double(tuning) * scale).rounded()), 1)
      defer { total += n }
      return Line(start: total, length: n)
    }
    lines = Self.combTunings.map(line) + Self.combTunings.map { line($0 + Self.stereoSpread) }
    lines += Self.allpassTunings.map(line) + Self.allpassTunings.map { line($0 + Self.stereoSpread) }
    (scratch, scratchFrames) = (total, maxFrames)
    memory = [Float](repeating: 0, count: total + 3 * maxFrames)
  }

  /// - Realtime: safe
  public mutating func reset() {
    for i in 0..<memory.count { memory[i] = 0 }
    // Positions back to the start too, so a reset chain runs exactly as a fresh one.
    for i in 0..<lines.count { (lines[i].store, lines[i].index) = (0, 0) }
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let frames = block.frames
    let comb = CombCoefficients(feedback: p.current(0) * 0.28 + 0.7, damp: p.current(1) * 0.4)
    let mixFrom = p.previous(2) * 0.01
    let mixStep = (p.current(2) * 0.01 - mixFrom) / Float(frames)
    let width = p.current(3) * 0.01
    let (scratch, scratchFrames) = (self.scratch, self.scratchFrames)
    memory.withUnsafeMutableBufferPointer { m in
      lines.withUnsafeMutableBufferPointer { l in
        guard let memory = m.baseAddress, let lines = l.baseAddress else { return }
        let mono = memory + scratch
        let (wetLeft, wetRight) = (mono + scratchFrames, mono + 2 * scratchFrames)
        Self.downmix(block, into: mono)
        for side in 0..<2 {
          let (combs, allpasses) = (lines + 8 * side, lines + 16 + 4 * side)
          let wet = side == 0 ? wetLeft : wetRight
          Self.combs(combs, memory: memory, input: mono, output: wet, add: false, frames: frames, comb)
          Self.combs(combs + 4, memory: memory, input: mono, output: wet, add: true, frames: frames, comb)
          Self.allpasses(allpasses, memory: memory, signal: wet, frames: frames)
        }
        // Mix: 3 is Freeverb's wet scale; width spreads the two tails.
        Self.mix(
          block, wetLeft: wetLeft, wetRight: wetRight, from: mixFrom, step: mixStep,
          wet1: 3 * (width / 2 + 0.5), wet2: 3 * ((1 - width) / 2))
      }
    }
  }

  /// The comb filters' constants for one block, as vectors.
  private struct CombCoefficients {
    /// The low-pass state's share kept per frame (`damp`, and as a vector) and its powers
    /// d, d², d³, d⁴.
    let damp: Float, damp1: SIMD4<Float>, powers: SIMD4<Float>
    /// (0, 0, d, d²).
    let pairPowers: SIMD4<Float>
    /// The input's share of the low-pass (1 − damp), and its inverse.
    let keep: Float, inverseKeep: Float
    /// feedback × keep: what a scan value (low-pass state / keep) adds to the line.
    let feedbackKeep: Float

    /// - Realtime: safe
    @inline(__always)
    init(feedback: Float, damp d: Float) {
      damp = d
      damp1 = SIMD4(repeating: d)
      pairPowers = SIMD4(0, 0, d, d * d)
      powers = SIMD4(d, d * d, d * d * d, d * d * d * d)
      keep = 1 - d
      inverseKeep = 1 / (1 - d)
      feedbackKeep = feedback * (1 - d)
    }
  }

  /// The mono input: Freeverb's input gain (0.015) times the mean of both channels.
  /// - Realtime: safe
  @inline(__always)
  private static func downmix(_ block: StereoBlock, into mono: UnsafeMutablePointer<Float>) {
    var f = 0
    while f + 4 <= block.frames {
      mono.store4(f, (block.left.load4(f) + block.right.load4(f)) * 0.0075)
      f += 4
    }
    while f < block.frames {
      mono[f] = (block.left[f] + block.right[f]) * 0.0075
      f += 1
    }
  }

  /// The longest stretch from frame `f` in which none of `lines[0..<4]` wraps.
  /// - Realtime: safe
  @inline(__always)
  private static func stretch(_ lines: UnsafeMutablePointer<Line>, from f: Int, frames: Int) -> Int {
    var run = frames - f
    for k in 0..<4 { run = min(run, lines[k].length - lines[k].index) }
    return run
  }

  /// Advances `lines[0..<4]` by `run` frames.
  /// - Realtime: safe
  @inline(__always)
  private static func advance(_ lines: UnsafeMutablePointer<Line>, by run: Int) {
    for k in 0..<4 {
      lines[k].index += run
      if lines[k].index == lines[k].length { lines[k].index = 0 }
    }
  }

  /// Runs four parallel damped combs over a block; their outputs go to `output` (added to it
  /// when `add`).
  ///
  /// Freeverb's comb, per frame: y = line[i]; s = y·(1 − d) + s·d; line[i] = x + s·feedback.
  /// With z = s / (1 − d) the low-pass is z = y + d·z, which `combChunk` scans four frames at
  /// a time.
  /// - Realtime: safe
  @inline(__always)
  private static func combs(
    _ lines: UnsafeMutablePointer<Line>, memory: UnsafeMutablePointer<Float>,
    input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, add: Bool, frames: Int,
    _ k: CombCoefficients
  ) {
    // Each scan state as a vector of four equal lanes.
    let i = k.inverseKeep
    var z0 = SIMD4(repeating: lines[0].store * i), z1 = SIMD4(repeating: lines[1].store * i)
    var z2 = SIMD4(repeating: lines[2].store * i), z3 = SIMD4(repeating: lines[3].store * i)
    var f = 0
    while f < frames {
      let run = stretch(lines, from: f, frames: frames)
      let p0 = memory + lines[0].start + lines[0].index, p1 = memory + lines[1].start + lines[1].index
      let p2 = memory + lines[2].start + lines[2].index, p3 = memory + lines[3].start + lines[3].index
      let (x, o) = (input + f, output + f)
      var j = 0
      while j + 4 <= run {
        let xv = x.load4(j)
        var y = combChunk(p0 + j, &z0, xv, k)
        y += combChunk(p1 + j, &z1, xv, k)
        y += combChunk(p2 + j, &z2, xv, k)
        y += combChunk(p3 + j, &z3, xv, k)
        o.store4(j, add ? o.load4(j) + y : y)
        j += 4
      }
      while j < run {
        var y = combStep(p0 + j, &z0, x[j], k)
        y += combStep(p1 + j, &z1, x[j], k)
        y += combStep(p2 + j, &z2, x[j], k)
        y += combStep(p3 + j, &z3, x[j], k)
        o[j] = add ? o[j] + y : y
        j += 1
      }
      advance(lines, by: run)
      f += run
    }
    lines[0].store = DSPMath.flush(z0[0] * k.keep)
    lines[1].store = DSPMath.flush(z1[0] * k.keep)
    lines[2].store = DSPMath.flush(z2[0] * k.keep)
    lines[3].store = DSPMath.flush(z3[0] * k.keep)
  }

  /// Four frames of one comb from `p`: reads y, scans z = y + d·z (z holds the previous value
  /// in every lane and gets the last one), writes x + feedback·(1 − d)·z flushed, returns y.
  /// - Realtime: safe
  @inline(__always)
  private static func combChunk(
    _ p: UnsafeMutablePointer<Float>, _ z: inout SIMD4<Float>, _ x: SIMD4<Float>, _ k: CombCoefficients
  ) -> SIMD4<Float> {
    let y = p.load4(0)
    // (0, y0, 0, y2): each pair's first value moved up one lane (one 64-bit lane shift).
    let up = unsafeBitCast(unsafeBitCast(y, to: SIMD2<UInt64>.self) &<< 32, to: SIMD4<Float>.self)
    let a = y + k.damp1 * up  // (y0, y1 + d·y0, y2, y3 + d·y2)
    let b = a + k.pairPowers * SIMD4(repeating: a[1])  // the first pair's sum carried into the second
    let scan = b + k.powers * z
    z = SIMD4(repeating: scan[3])
    p.store4(0, (x + k.feedbackKeep * scan).flushed())
    return y
  }

  /// One frame of one comb (`combChunk` for a single frame).
  /// - Realtime: safe
  @inline(__always)
  private static func combStep(
    _ p: UnsafeMutablePointer<Float>, _ z: inout SIMD4<Float>, _ x: Float, _ k: CombCoefficients
  ) -> Float {
    let y = p[0]
    let scan = y + k.damp * z[0]
    z = SIMD4(repeating: scan)
    p[0] = DSPMath.flush(x + k.feedbackKeep * scan)
    return y
  }

  /// Runs one side's four all-passes in series over a block, in place.
  /// - Realtime: safe
  @inline(__always)
  private static func allpasses(
    _ lines: UnsafeMutablePointer<Line>, memory: UnsafeMutablePointer<Float>,
    signal: UnsafeMutablePointer<Float>, frames: Int
  ) {
    var f = 0
    while f < frames {
      let run = stretch(lines, from: f, frames: frames)
      let p0 = memory + lines[0].start + lines[0].index, p1 = memory + lines[1].start + lines[1].index
      let p2 = memory + lines[2].start + lines[2].index, p3 = memory + lines[3].start + lines[3].index
      let s = signal + f
      var j = 0
      while j + 4 <= run {
        var x = s.load4(j)
        x = allpassChunk(p0 + j, x)
        x = allpassChunk(p1 + j, x)
        x = allpassChunk(p2 + j, x)
        x = allpassChunk(p3 + j, x)
        s.store4(j, x)
        j += 4
      }
      while j < run {
        var x = s[j]
        x = allpassStep(p0 + j, x)
        x = allpassStep(p1 + j, x)
        x = allpassStep(p2 + j, x)
        x = allpassStep(p3 + j, x)
        s[j] = x
        j += 1
      }
      advance(lines, by: run)
      f += run
    }
  }

  /// Four frames of a Freeverb all-pass (feedback 0.5) from `p`, returning its output.
  /// - Realtime: safe
  @inline(__always)
  private static func allpassChunk(_ p: UnsafeMutablePointer<Float>, _ x: SIMD4<Float>) -> SIMD4<Float> {
    let b = p.load4(0)
    p.store4(0, (x + b * 0.5).flushed())
    return b - x
  }

  /// One frame of an all-pass (`allpassChunk` for a single frame).
  /// - Realtime: safe
  @inline(__always)
  private static func allpassStep(_ p: UnsafeMutablePointer<Float>, _ x: Float) -> Float {
    let b = p[0]
    p[0] = DSPMath.flush(x + b * 0.5)
    return b - x
  }

  /// Dry and wet, with the wet share ramping linearly from `from` by `step` per frame.
  /// - Realtime: safe
  @inline(__always)
  private static func mix(
    _ block: StereoBlock, wetLeft wl: UnsafeMutablePointer<Float>, wetRight wr: UnsafeMutablePointer<Float>,
    from: Float, step: Float, wet1: Float, wet2: Float
  ) {
    var f = 0
    while f + 4 <= block.frames {
      let mix = from + step * (SIMD4.ramp + Float(f))
      let (dl, dr, a, b) = (block.left.load4(f), block.right.load4(f), wl.load4(f), wr.load4(f))
      block.left.store4(f, dl * (1 - mix) + (a * wet1 + b * wet2) * mix)
      block.right.store4(f, dr * (1 - mix) + (b * wet1 + a * wet2) * mix)
      f += 4
    }
    while f < block.frames {
      let mix = from + step * Float(f + 1)
      let (dl, dr, a, b) = (block.left[f], block.right[f], wl[f], wr[f])
      block.left[f] = dl * (1 - mix) + (a * wet1 + b * wet2) * mix
      block.right[f] = dr * (1 - mix) + (b * wet1 + a * wet2) * mix
      f += 1
    }
  }
}
