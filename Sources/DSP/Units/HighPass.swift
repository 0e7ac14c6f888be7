/// Butterworth high-pass, 12 dB/oct (one biquad) or 24 dB/oct (two cascaded biquads).
public struct HighPass: VoiceUnit {
  public static let typeName = "highpass"
  public static let summary = "Butterworth high-pass that removes rumble and handling noise."
  public static let parameters = [
    ParameterSpec("freq_hz", unit: "Hz", range: 20...1000, default: 80, "Cutoff (-3 dB) frequency."),
    ParameterSpec(
      "slope_db", unit: "dB/oct", range: 12...24, default: 12, kind: .choice([12, 24]),
      "Slope: 12 (2nd order) or 24 (4th order)."),
  ]
  private var first = StereoBiquad()
  private var second = StereoBiquad()
  private var sampleRate: Double = 48000
  private var fourthOrder = false

  public init() {}

  /// The biquad sections' Q values for a Butterworth response of `slopeDecibels` (the second is
  /// unused at 12 dB/oct).
  /// - Realtime: safe
  public static func sectionQs(slopeDecibels: Float) -> (Double, Double) {
    slopeDecibels >= 24 ? (0.541_196_100_146_197, 1.306_562_964_876_376) : (0.707_106_781_186_547_5, 0)
  }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters p: ParameterValues) {
    self.sampleRate = sampleRate
    update(p)
  }

  /// - Realtime: safe
  public mutating func reset() {
    first.reset()
    second.reset()
  }

  /// - Realtime: safe
  private mutating func update(_ p: ParameterValues) {
    let hz = Double(p.current(0))
    let wasFourth = fourthOrder
    fourthOrder = p.current(1) >= 24
    let qs = Self.sectionQs(slopeDecibels: p.current(1))
    first.coefficients = .highPass(frequencyHz: hz, q: qs.0, sampleRate: sampleRate)
    if fourthOrder {
      second.coefficients = .highPass(frequencyHz: hz, q: qs.1, sampleRate: sampleRate)
      if !wasFourth { second.reset() }
    }
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    if p.changed(0) || p.changed(1) { update(p) }
    if fourthOrder {
      StereoBiquad.process(&first, &second, block)
    } else {
      first.process(block)
    }
  }
}
