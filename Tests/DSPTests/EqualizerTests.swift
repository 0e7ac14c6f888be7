import DSP
import Foundation
import Testing

/// The EQ stage's bands, measured from the impulse response of a chain holding only an `eq`
/// stage, against the RBJ formulas (evaluated from the same coefficients) and against sox.
@Suite struct EqualizerTests {
  typealias T = TestSignals

  static func bass(_ db: Double, hz: Double = 100, slope: Double = 0.5) -> BiquadCoefficients {
    .lowShelf(frequencyHz: hz, slope: slope, gainDecibels: db, sampleRate: T.sampleRate)
  }
  static func treble(_ db: Double, hz: Double = 3000, slope: Double = 0.5) -> BiquadCoefficients {
    .highShelf(frequencyHz: hz, slope: slope, gainDecibels: db, sampleRate: T.sampleRate)
  }
  static func mid(_ db: Double, hz: Double = 1000, q: Double = 1) -> BiquadCoefficients {
    .peaking(frequencyHz: hz, q: q, gainDecibels: db, sampleRate: T.sampleRate)
  }

  static func impulseResponse(_ values: [String: Float]) -> [Float] {
    T.processMono(T.chain("eq", values), T.impulse(frames: T.responseLength))
  }

  static func report(_ label: String, _ points: [CascadeResponse.Point]) {
    let worst = points.map { abs($0.deviationDecibels) }.max() ?? 0
    T.measured("\(label): worst deviation \(String(format: "%.5f", worst)) dB")
  }

  @Test("Bass low shelf response", arguments: [Float(-12), -6, 6, 12])
  func bassShelf(db: Float) {
    let h = Self.impulseResponse(["bass_db": db])
    let points = CascadeResponse(sections: [Self.bass(Double(db))])
      .check(h, at: T.logFrequencies() + [100], "bass \(db) dB")
    #expect(points.allSatisfy { !$0.usedAllowance })
    Self.report("eq bass \(db) dB", points)
    // The RBJ shelf has half its gain (in dB) at the corner frequency, and nearly all of it at 20 Hz.
    #expect(abs(T.magnitudeDecibels(h, atHz: 100) - Double(db) / 2) < 0.01)
    #expect(abs(T.magnitudeDecibels(h, atHz: 20_000)) < 0.01)
  }

  @Test("Treble high shelf response", arguments: [Float(-12), -6, 6, 12])
  func trebleShelf(db: Float) {
    let h = Self.impulseResponse(["treble_db": db])
    let points = CascadeResponse(sections: [Self.treble(Double(db))])
      .check(h, at: T.logFrequencies() + [3000], "treble \(db) dB")
    #expect(points.allSatisfy { !$0.usedAllowance })
    Self.report("eq treble \(db) dB", points)
    #expect(abs(T.magnitudeDecibels(h, atHz: 3000) - Double(db) / 2) < 0.01)
    #expect(abs(T.magnitudeDecibels(h, atHz: 20)) < 0.01)
  }

  @Test(
    "Mid peaking response",
    arguments: [(Float(9), Float(1000), Float(1)), (-9, 1000, 1), (12, 300, 4), (-6, 5000, 0.5)])
  func midPeak(db: Float, hz: Float, q: Float) {
    let h = Self.impulseResponse(["mid_db": db, "mid_hz": hz, "mid_q": q])
    let points = CascadeResponse(sections: [Self.mid(Double(db), hz: Double(hz), q: Double(q))])
      .check(h, at: T.logFrequencies() + [Double(hz)], "mid \(db) dB at \(hz) Hz Q \(q)")
    #expect(points.allSatisfy { !$0.usedAllowance })
    Self.report("eq mid \(db) dB \(hz) Hz Q \(q)", points)
    // Full gain at the centre; unity far away.
    #expect(abs(T.magnitudeDecibels(h, atHz: Double(hz)) - Double(db)) < 0.01)
  }

  @Test("All three bands together are the product of the three sections")
  func allBands() {
    let values: [String: Float] = [
      "bass_db": 8, "bass_hz": 150, "mid_db": -5, "mid_hz": 700, "mid_q": 2, "treble_db": 10,
      "treble_hz": 6000, "shelf_slope": 0.8,
    ]
    let h = Self.impulseResponse(values)
    let slope = Double(Float(0.8))
    let points = CascadeResponse(sections: [
      Self.bass(8, hz: 150, slope: slope), Self.mid(-5, hz: 700, q: 2),
      Self.treble(10, hz: 6000, slope: slope),
    ]).check(h, at: T.logFrequencies(), "all bands")
    #expect(points.allSatisfy { !$0.usedAllowance })
    Self.report("eq all bands", points)
  }

  @Test("Bands at 0 dB leave the signal bit-identical")
  func flatIsIdentity() {
    let chain = T.chain("eq", ["bass_hz": 300, "mid_q": 3, "shelf_slope": 1])
    let x = T.noise(frames: 4096, amplitude: 0.7)
    #expect(T.processMono(chain, x) == x)
  }

  /// sox's `bass`/`treble` (RBJ shelves, slope S, double precision) rendered from a 48 kHz float
  /// WAV impulse, against the `eq` stage at the same gain, frequency and slope: magnitudes within
  /// 0.1 dB at 30 log-spaced frequencies from 20 Hz to 20 kHz.
  @Test(
    "Shelves match sox bass/treble",
    arguments: [("bass", Float(6)), ("bass", -12), ("treble", 6), ("treble", -12)])
  func matchesSox(effect: String, db: Float) throws {
    let amplitude: Float = 0.25  // keeps sox's integer pipeline far from clipping
    let frames = 1 << 16
    guard let soxResponse = try Sox.impulseResponse([effect, "\(db)"], frames: frames, amplitude: amplitude)
    else { return }
    #expect(soxResponse.count == frames)
    let key = effect == "bass" ? "bass_db" : "treble_db"
    // sox's defaults: bass at 100 Hz, treble at 3 kHz, width 0.5s (shelf slope 0.5).
    let corner: Float = effect == "bass" ? 100 : 3000
    let chain = T.chain("eq", [key: db, "\(effect)_hz": corner, "shelf_slope": 0.5])
    let ours = T.processMono(chain, T.impulse(frames: frames, amplitude: amplitude))
    var worst = 0.0
    for f in T.logFrequencies() {
      let theirs = T.magnitudeDecibels(soxResponse, atHz: f, reference: Double(amplitude))
      let mine = T.magnitudeDecibels(ours, atHz: f, reference: Double(amplitude))
      worst = max(worst, abs(mine - theirs))
      #expect(abs(mine - theirs) <= 0.1, "\(effect) \(db) at \(f) Hz: LiveMic \(mine) dB, sox \(theirs) dB")
    }
    T.measured("sox \(effect) \(db): worst |LiveMic - sox| \(String(format: "%.5f", worst)) dB")
  }
}
