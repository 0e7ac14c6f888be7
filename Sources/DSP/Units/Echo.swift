/// Feedback echo (delay) up to 2 s, per channel, with a smoothed (interpolated) delay time.
public struct Echo: VoiceUnit {
  public static let typeName = "echo"
  public static let summary = "Echo: repeats of the voice added at a level below the dry signal."
  public static let parameters = [
    ParameterSpec("time_ms", unit: "ms", range: 1...2000, default: 300, "Time between repeats."),
    ParameterSpec("feedback", unit: "", range: 0...0.95, default: 0.3, "Level of each repeat relative to the previous one."),
    ParameterSpec("mix", unit: "", range: 0...1, default: 0.25, "Level of the echoes added to the unchanged dry voice."),
  ]
  /// The longest delay time.
  public static let maximumMilliseconds: Float = 2000

  private var sampleRate: Float = 48000
  private var left: [Float] = []
  private var right: [Float] = []
  private var length = 0
  private var write = 0

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    self.sampleRate = Float(sampleRate)
    length = Int(Self.maximumMilliseconds * 0.001 * Float(sampleRate)) + maxFrames + 4
    left = [Float](repeating: 0, count: length)
    right = [Float](repeating: 0, count: length)
    write = 0
  }

  public mutating func reset() {
    for i in 0..<length {
      left[i] = 0
      right[i] = 0
    }
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let frames = block.frames
    let framesPerMillisecond = sampleRate * 0.001
    let delayFrom = max(p.previous(0) * framesPerMillisecond, 1)
    let delayStep = (max(p.current(0) * framesPerMillisecond, 1) - delayFrom) / Float(frames)
    let feedbackFrom = p.previous(1)
    let feedbackStep = (p.current(1) - feedbackFrom) / Float(frames)
    let mixFrom = p.previous(2)
    let mixStep = (p.current(2) - mixFrom) / Float(frames)
    let n = length
    var w = write
    left.withUnsafeMutableBufferPointer { lb in
      right.withUnsafeMutableBufferPointer { rb in
        var (delay, feedback, mix) = (delayFrom, feedbackFrom, mixFrom)
        for f in 0..<frames {
          delay += delayStep
          feedback += feedbackStep
          mix += mixStep
          // Linear interpolation between the two samples around the fractional read position.
          var position = Float(w) - delay
          if position < 0 { position += Float(n) }
          // A position just below 0 can round up to exactly n (the same point as 0).
          if position >= Float(n) { position -= Float(n) }
          let i0 = Int(position)
          let frac = position - Float(i0)
          let i1 = i0 + 1 == n ? 0 : i0 + 1
          let dl = lb[i0] + (lb[i1] - lb[i0]) * frac
          let dr = rb[i0] + (rb[i1] - rb[i0]) * frac
          let xl = block.left[f]
          let xr = block.right[f]
          lb[w] = DSPMath.flush(xl + dl * feedback)
          rb[w] = DSPMath.flush(xr + dr * feedback)
          block.left[f] = xl + dl * mix
          block.right[f] = xr + dr * mix
          w += 1
          if w == n { w = 0 }
        }
      }
    }
    write = w
  }
}
