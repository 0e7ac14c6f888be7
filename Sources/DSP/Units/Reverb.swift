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
              for k in 0..<(2 * combCount) {
                let out = k < combCount ? wl : wr
                Self.comb(&c[k], memory: m.baseAddress!, input: input.baseAddress!, output: out.baseAddress!, frames: frames, feedback: feedback, damp: damp)
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
              let l = wl[f] * wet1 + wr[f] * wet2
              let r = wr[f] * wet1 + wl[f] * wet2
              block.left[f] = block.left[f] * (1 - mix) + l * mix
              block.right[f] = block.right[f] * (1 - mix) + r * mix
            }
          }
        }
      }
    }
  }

  /// - Realtime: safe
  @inline(__always)
  private static func comb(
    _ line: inout Line, memory: UnsafeMutablePointer<Float>, input: UnsafeMutablePointer<Float>,
    output: UnsafeMutablePointer<Float>, frames: Int, feedback: Float, damp: Float
  ) {
    let buffer = memory + line.start
    var (i, store) = (line.index, line.store)
    let n = line.length
    for f in 0..<frames {
      let y = buffer[i]
      store = y * (1 - damp) + store * damp
      buffer[i] = input[f] + store * feedback
      output[f] += y
      i += 1
      if i == n { i = 0 }
    }
    line.index = i
    line.store = DSPMath.flush(store)
  }

  /// - Realtime: safe
  @inline(__always)
  private static func allpass(
    _ line: inout Line, memory: UnsafeMutablePointer<Float>, signal: UnsafeMutablePointer<Float>, frames: Int
  ) {
    let buffer = memory + line.start
    var i = line.index
    let n = line.length
    for f in 0..<frames {
      let b = buffer[i]
      let x = signal[f]
      buffer[i] = DSPMath.flush(x + b * 0.5)
      signal[f] = b - x
      i += 1
      if i == n { i = 0 }
    }
    line.index = i
  }
}
