/// Freeverb-style room reverb: mono in (the mean of both channels), stereo out, eight damped
/// comb filters and four all-passes per side, lengths scaled to the sample rate.
public struct Reverb: VoiceUnit {
  public static let typeName = "reverb"
  public static let summary = "Room reverb (Freeverb topology), mono in, stereo out."
  public static let parameters = [
    ParameterSpec("room_size", unit: "", range: 0...1, default: 0.5, "Room size (decay time)."),
    ParameterSpec("damping", unit: "", range: 0...1, default: 0.5, "High-frequency damping of the tail."),
    ParameterSpec("mix", unit: "%", range: 0...100, default: 15, "Wet share of the output: 0 dry only, 100 reverb only."),
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
  private var memory: [Float] = []
  private var combs: [Line] = []  // 8 left, then 8 right
  private var allpasses: [Line] = []  // 4 left, then 4 right
  private var mono: [Float] = []
  private var wetLeft: [Float] = []
  private var wetRight: [Float] = []

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    let scale = sampleRate / 44100
    var total = 0
    func line(_ tuning: Int) -> Line {
      let n = max(Int((Double(tuning) * scale).rounded()), 1)
      defer { total += n }
      return Line(start: total, length: n)
    }
    combs = Self.combTunings.map(line) + Self.combTunings.map { line($0 + Self.stereoSpread) }
    allpasses = Self.allpassTunings.map(line) + Self.allpassTunings.map { line($0 + Self.stereoSpread) }
    memory = [Float](repeating: 0, count: total)
    mono = [Float](repeating: 0, count: maxFrames)
    wetLeft = [Float](repeating: 0, count: maxFrames)
    wetRight = [Float](repeating: 0, count: maxFrames)
  }

  public mutating func reset() {
    for i in 0..<memory.count { memory[i] = 0 }
    for i in 0..<combs.count { combs[i].store = 0 }
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let frames = block.frames
    let feedback = p.current(0) * 0.28 + 0.7
    let damp = p.current(1) * 0.4
    let mixFrom = p.previous(2) * 0.01
    let mixStep = (p.current(2) * 0.01 - mixFrom) / Float(frames)
    let width = p.current(3) * 0.01
    let combCount = combs.count / 2
    let allpassCount = allpasses.count / 2
    memory.withUnsafeMutableBufferPointer { m in
      mono.withUnsafeMutableBufferPointer { input in
        wetLeft.withUnsafeMutableBufferPointer { wl in
          wetRight.withUnsafeMutableBufferPointer { wr in
            for f in 0..<frames {
              input[f] = (block.left[f] + block.right[f]) * 0.0075  // Freeverb input gain / 2
              wl[f] = 0
              wr[f] = 0
            }
            combs.withUnsafeMutableBufferPointer { c in
              for side in 0..<2 {
                Self.combs(
                  c.baseAddress! + side * combCount, memory: m.baseAddress!,
                  input: input.baseAddress!, output: (side == 0 ? wl : wr).baseAddress!,
                  frames: frames, feedback: feedback, damp: damp)
              }
            }
            allpasses.withUnsafeMutableBufferPointer { a in
              for k in 0..<(2 * allpassCount) {
                Self.allpass(&a[k], memory: m.baseAddress!, signal: (k < allpassCount ? wl : wr).baseAddress!, frames: frames)
              }
            }
            // Mix: 3 is Freeverb's wet scale; width spreads the two tails.
            let wet1 = 3 * (width / 2 + 0.5)
            let wet2 = 3 * ((1 - width) / 2)
            var mix = mixFrom
            for f in 0..<frames {
              mix += mixStep
              let (dl, dr, a, b) = (block.left[f], block.right[f], wl[f], wr[f])
              block.left[f] = dl * (1 - mix) + (a * wet1 + b * wet2) * mix
              block.right[f] = dr * (1 - mix) + (b * wet1 + a * wet2) * mix
            }
          }
        }
      }
    }
  }

  /// Runs eight parallel damped combs (one side) over a block, summing into `output`. The
  /// eight filters advance together so their recurrences overlap instead of stalling.
  /// - Realtime: safe
  @inline(__always)
  private static func combs(
    _ lines: UnsafeMutablePointer<Line>, memory: UnsafeMutablePointer<Float>,
    input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, frames: Int,
    feedback: Float, damp: Float
  ) {
    var start = SIMD8<Int32>(), length = SIMD8<Int32>(), index = SIMD8<Int32>()
    var store = SIMD8<Float>()
    for k in 0..<8 {
      start[k] = Int32(lines[k].start)
      length[k] = Int32(lines[k].length)
      index[k] = Int32(lines[k].index)
      store[k] = lines[k].store
    }
    let keep = SIMD8<Float>(repeating: 1 - damp)
    let dampV = SIMD8<Float>(repeating: damp)
    let fb = SIMD8<Float>(repeating: feedback)
    for f in 0..<frames {
      let position = start &+ index
      var y = SIMD8<Float>()
      for k in 0..<8 { y[k] = memory[Int(position[k])] }
      store = y * keep + store * dampV
      let written = SIMD8<Float>(repeating: input[f]) + store * fb
      for k in 0..<8 { memory[Int(position[k])] = written[k] }
      output[f] += y.sum()
      index &+= 1
      index.replace(with: 0, where: index .== length)
    }
    for k in 0..<8 {
      lines[k].index = Int(index[k])
      lines[k].store = DSPMath.flush(store[k])
    }
  }

  /// Runs one all-pass over a block. Within a stretch that does not wrap, each position is read
  /// before it is written, so eight frames at a time are processed as one vector.
  /// - Realtime: safe
  @inline(__always)
  private static func allpass(
    _ line: inout Line, memory: UnsafeMutablePointer<Float>, signal: UnsafeMutablePointer<Float>,
    frames: Int
  ) {
    let buffer = memory + line.start
    let n = line.length
    var i = line.index
    var f = 0
    let tiny = SIMD8<Float>(repeating: 1e-20)
    while f < frames {
      let run = min(frames - f, n - i)
      var k = 0
      while k + 8 <= run {
        let bp = UnsafeMutableRawPointer(buffer + i + k)
        let sp = UnsafeMutableRawPointer(signal + f + k)
        let b = bp.loadUnaligned(as: SIMD8<Float>.self)
        let x = sp.loadUnaligned(as: SIMD8<Float>.self)
        var v = x + b * 0.5
        v.replace(with: 0, where: (v .< tiny) .& (v .> -tiny))
        bp.storeBytes(of: v, as: SIMD8<Float>.self)
        sp.storeBytes(of: b - x, as: SIMD8<Float>.self)
        k += 8
      }
      while k < run {
        let b = buffer[i + k]
        let x = signal[f + k]
        buffer[i + k] = DSPMath.flush(x + b * 0.5)
        signal[f + k] = b - x
        k += 1
      }
      i += run
      if i == n { i = 0 }
      f += run
    }
    line.index = i
  }
}
