import CEbur128
import DSP
import Foundation
import LiveMicPresets

#if canImport(Glibc)
  import Glibc
#endif

/// EBU R128 loudness figures: LUFS for loudness, LU for the range, dBTP for the true peak;
/// -200 for a figure with nothing measured yet (silence, or below the absolute gate).
///
/// Thread: any (value type).
public struct LoudnessReading: Sendable, Equatable {
  public init() {}
  /// Loudness of the last 400 ms.
  public var momentary = -200.0
  /// Loudness of the last 3 s.
  public var shortTerm = -200.0
  /// Gated loudness since the meter started or was last reset.
  public var integrated = -200.0
  /// Loudness range (LU) since the start or the last reset.
  public var range = 0.0
  /// The highest true peak of either channel since the start or the last reset.
  public var truePeak = -200.0

  /// The `loudness` object (in `meters`, `status` and the meter stream), to a tenth.
  public var json: JSONValue {
    let r = { (x: Double) in JSONValue.number((x * 10).rounded() / 10) }
    return [
      "momentary_lufs": r(momentary), "shortterm_lufs": r(shortTerm), "integrated_lufs": r(integrated),
      "range_lu": r(range), "true_peak_dbtp": r(truePeak),
    ]
  }
}

/// Why a loudness analyzer could not be made; one sentence.
public struct LoudnessError: CodedError {
  public let description: String
  public var code: String { "loudness.analyzer" }
  public init(_ description: String) { self.description = description }
}

/// One libebur128 measurement of interleaved stereo float frames (modes M, S, I, LRA and true
/// peak, with the histogram algorithm so memory stays constant however long it runs).
///
/// Thread: one at a time (the loudness meter's thread, or a test); not real-time safe.
public final class LoudnessAnalyzer {
  private var state: UnsafeMutablePointer<ebur128_state>
  /// The sample rate it measures at.
  public private(set) var sampleRate: Int

  static let mode =
    Int32(EBUR128_MODE_I.rawValue) | Int32(EBUR128_MODE_S.rawValue) | Int32(EBUR128_MODE_LRA.rawValue)
    | Int32(EBUR128_MODE_TRUE_PEAK.rawValue) | Int32(EBUR128_MODE_HISTOGRAM.rawValue)

  /// A fresh measurement at `sampleRate`.
  public init(sampleRate: Int) throws(LoudnessError) {
    state = try Self.makeState(sampleRate)
    self.sampleRate = sampleRate
  }

  deinit {
    var s: UnsafeMutablePointer<ebur128_state>? = state
    ebur128_destroy(&s)
  }

  private static func makeState(_ rate: Int) throws(LoudnessError) -> UnsafeMutablePointer<ebur128_state> {
    guard rate > 0, let s = ebur128_init(2, UInt(rate), mode) else {
      throw LoudnessError("libebur128 cannot measure stereo at \(rate) Hz")
    }
    return s
  }

  /// Adds `frames` interleaved stereo frames (the tap's layout).
  public func ingest(_ interleaved: UnsafePointer<Float>, frames: Int) {
    guard frames > 0 else { return }
    _ = ebur128_add_frames_float(state, interleaved, frames)
  }

  /// Starts over (integrated loudness, range and true peak forgotten), at `sampleRate` when
  /// given; the old measurement is kept when the new one cannot be made.
  public func reset(sampleRate rate: Int? = nil) throws(LoudnessError) {
    let fresh = try Self.makeState(rate ?? sampleRate)
    var old: UnsafeMutablePointer<ebur128_state>? = state
    ebur128_destroy(&old)
    state = fresh
    sampleRate = rate ?? sampleRate
  }

  /// The figures now.
  public var reading: LoudnessReading {
    func level(_ f: (UnsafeMutablePointer<ebur128_state>, UnsafeMutablePointer<Double>) -> Int32) -> Double {
      var v = -Double.infinity
      guard f(state, &v) == Int32(EBUR128_SUCCESS.rawValue), v.isFinite else { return -200 }
      return max(v, -200)
    }
    var r = LoudnessReading()
    r.momentary = level(ebur128_loudness_momentary)
    r.shortTerm = level(ebur128_loudness_shortterm)
    r.integrated = level(ebur128_loudness_global)
    var lra = 0.0
    if ebur128_loudness_range(state, &lra) == Int32(EBUR128_SUCCESS.rawValue), lra.isFinite { r.range = lra }
    var peak = 0.0
    for c in 0..<2 {
      var p = 0.0
      if ebur128_true_peak(state, UInt32(c), &p) == Int32(EBUR128_SUCCESS.rawValue) { peak = max(peak, p) }
    }
    r.truePeak = peak > 0 ? max(20 * log10(peak), -200) : -200
    return r
  }
}
