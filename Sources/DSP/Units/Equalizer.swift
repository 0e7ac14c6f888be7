/// Three-band voice EQ: bass low shelf, mid peaking, treble high shelf (RBJ cookbook biquads;
/// the shelves match `sox bass` / `sox treble` at the same gain, frequency and slope).
public struct Equalizer: VoiceUnit {
  public static let typeName = "eq"
  public static let summary = "Bass shelf, mid peak and treble shelf (RBJ cookbook biquads)."
  public static let parameters = [
    ParameterSpec("bass_db", unit: "dB", range: -20...20, default: 0, "Low-shelf gain."),
    ParameterSpec(
      "bass_hz", unit: "Hz", range: 20...1000, default: 100, "Low-shelf corner frequency (sox's default 100)."
    ),
    ParameterSpec("mid_db", unit: "dB", range: -20...20, default: 0, "Peaking-band gain."),
    ParameterSpec("mid_hz", unit: "Hz", range: 100...10000, default: 1000, "Peaking-band centre frequency."),
    ParameterSpec("mid_q", unit: "Q", range: 0.1...10, default: 1, "Peaking-band Q (higher is narrower)."),
    ParameterSpec("treble_db", unit: "dB", range: -20...20, default: 0, "High-shelf gain."),
    ParameterSpec(
      "treble_hz", unit: "Hz", range: 1000...16000, default: 3000,
      "High-shelf corner frequency (sox's default 3000)."),
    ParameterSpec(
      "shelf_slope", unit: "S", range: 0.1...1, default: 0.5,
      "Shelf slope S of both shelves (sox's default width 0.5)."),
  ]
  private var bass = StereoBiquad()
  private var mid = StereoBiquad()
  private var treble = StereoBiquad()
  private var sampleRate: Double = 48000

  public init() {}

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters p: ParameterValues) {
    self.sampleRate = sampleRate
    updateBass(p)
    updateMid(p)
    updateTreble(p)
  }

  /// - Realtime: safe
  public mutating func reset() {
    bass.reset()
    mid.reset()
    treble.reset()
  }

  /// - Realtime: safe
  private mutating func updateBass(_ p: ParameterValues) {
    bass.coefficients = .lowShelf(
      frequencyHz: Double(p.current(1)), slope: Double(p.current(7)),
      gainDecibels: Double(p.current(0)), sampleRate: sampleRate)
  }
  /// - Realtime: safe
  private mutating func updateMid(_ p: ParameterValues) {
    mid.coefficients = .peaking(
      frequencyHz: Double(p.current(3)), q: Double(p.current(4)),
      gainDecibels: Double(p.current(2)), sampleRate: sampleRate)
  }
  /// - Realtime: safe
  private mutating func updateTreble(_ p: ParameterValues) {
    treble.coefficients = .highShelf(
      frequencyHz: Double(p.current(6)), slope: Double(p.current(7)),
      gainDecibels: Double(p.current(5)), sampleRate: sampleRate)
  }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let slopeChanged = p.changed(7)
    if p.changed(0) || p.changed(1) || slopeChanged { updateBass(p) }
    if p.changed(2) || p.changed(3) || p.changed(4) { updateMid(p) }
    if p.changed(5) || p.changed(6) || slopeChanged { updateTreble(p) }
    // A band at exactly 0 dB is the identity: skip it (and start it clean when it returns).
    let useBass = p.current(0) != 0 || p.previous(0) != 0
    let useMid = p.current(2) != 0 || p.previous(2) != 0
    let useTreble = p.current(5) != 0 || p.previous(5) != 0
    if !useBass { bass.reset() }
    if !useMid { mid.reset() }
    if !useTreble { treble.reset() }
    // The bands in use run as one cascade, in order bass, mid, treble.
    switch (useBass, useMid, useTreble) {
    case (true, true, true): StereoBiquad.process(&bass, &mid, &treble, block)
    case (true, true, false): StereoBiquad.process(&bass, &mid, block)
    case (true, false, true): StereoBiquad.process(&bass, &treble, block)
    case (false, true, true): StereoBiquad.process(&mid, &treble, block)
    case (true, false, false): bass.process(block)
    case (false, true, false): mid.process(block)
    case (false, false, true): treble.process(block)
    case (false, false, false): break
    }
  }
}
