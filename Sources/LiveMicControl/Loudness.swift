import CEbur128
import DSP
import Dispatch
import Foundation
import LiveMicEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// EBU R128 loudness figures: LUFS for loudness, LU for the range, dBTP for the true peak;
/// -200 for a figure with nothing measured yet (silence, or below the absolute gate).
///
/// Thread: any (value type).
public struct LoudnessReading: Sendable, Equatable {
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

  /// The fields of the `loudness` object (in `meters`, `status` and the meter stream).
  var fields: [String: Double] {
    let r = { (x: Double) in (x * 10).rounded() / 10 }
    return [
      "momentary_lufs": r(momentary), "shortterm_lufs": r(shortTerm), "integrated_lufs": r(integrated),
      "range_lu": r(range), "true_peak_dbtp": r(truePeak),
    ]
  }
}

/// Why a loudness analyzer could not be made; one sentence.
public struct LoudnessError: Error, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
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

/// The always-on loudness meter: a consumer of the `output` tap (so nothing new runs on the
/// audio thread) and a thread that drains its ring into a `LoudnessAnalyzer` and publishes the
/// figures about 20 times a second. It outlives JACK clients; on a sample-rate change the
/// measurement starts over at the new rate.
///
/// Thread: created, re-rated, reset, read and stopped by the supervisor; the meter thread owns
/// the analyzer.
final class LoudnessMeter: @unchecked Sendable {
  let consumer: TapConsumer
  private let published = Locked(LoudnessReading())
  private let resetRequested = Atomic<Bool>(false)
  /// A sample rate to start over at (0: none).
  private let pendingRate = Atomic<Int>(0)
  private let stopRequested = Atomic<Bool>(false)
  private let done = DispatchSemaphore(value: 0)
  private let analyzer: LoudnessAnalyzer
  /// Frames the meter thread analyzed.
  let analyzedFrames = Atomic<UInt64>(0)
  /// Nanoseconds the meter thread spent analyzing (for its CPU cost).
  let busyNanoseconds = Atomic<UInt64>(0)

  /// Frames moved per read of the ring.
  static let chunkFrames = 4096
  /// How long the thread rests after emptying the ring.
  private let pace: WriterPace

  /// Makes the analyzer and starts the thread, which rests at `pace` after emptying the ring;
  /// the caller attaches `consumer` to the tap table.
  init(sampleRate: Int, pace: WriterPace) throws(LoudnessError) {
    self.pace = pace
    analyzer = try LoudnessAnalyzer(sampleRate: sampleRate)
    // 2 s of ring at up to 96 kHz: a rate change keeps the same consumer.
    consumer = TapConsumer(tap: .output, seconds: 2, sampleRate: Double(max(sampleRate, 96000)))
    let thread = Thread { [self] in run() }
    thread.name = "livemic-loudness"
    thread.start()
  }

  /// The latest figures.
  var reading: LoudnessReading { published.withLock { $0 } }

  /// Asks the meter thread to start over (integrated loudness, range and true peak).
  func reset() {
    resetRequested.store(true, ordering: .releasing)
    published.withLock { $0 = LoudnessReading() }
  }

  /// Asks the meter thread to start over at `sampleRate` when it differs from the current one.
  func follow(sampleRate: Int) { pendingRate.store(sampleRate, ordering: .releasing) }

  /// After the consumer has been detached: ends the thread (waiting at most `timeoutSeconds`).
  func finish(timeoutSeconds: Double = 2) {
    stopRequested.store(true, ordering: .releasing)
    _ = done.wait(timeout: .now() + timeoutSeconds)
  }

  private func run() {
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * Self.chunkFrames)
    defer {
      buffer.deallocate()
      done.signal()
    }
    while !stopRequested.load(ordering: .acquiring) {
      let rate = pendingRate.exchange(0, ordering: .acquiringAndReleasing)
      if rate > 0 && rate != analyzer.sampleRate {
        do { try analyzer.reset(sampleRate: rate) } catch { Log.error(error.description) }
      }
      if resetRequested.exchange(false, ordering: .acquiringAndReleasing) {
        try? analyzer.reset()
      }
      let started = DispatchTime.now().uptimeNanoseconds
      var total = 0
      while true {
        let n = consumer.read(into: buffer, maxFrames: Self.chunkFrames)
        guard n > 0 else { break }
        analyzer.ingest(buffer, frames: n)
        total += n
      }
      if total > 0 {
        let figures = analyzer.reading
        published.withLock { $0 = figures }
        analyzedFrames.add(UInt64(total), ordering: .relaxed)
        busyNanoseconds.add(DispatchTime.now().uptimeNanoseconds - started, ordering: .relaxed)
      }
      pace.rest()
    }
  }
}

/// The loudness meter's part of the session: started with the first client, kept across
/// reconnections, reset by the `loudness` command. Thread: the supervisor.
extension LiveSession {
  /// Starts the loudness meter and attaches it to the output tap; a failure is logged and the
  /// session runs without it.
  func startLoudness(_ client: JackClient) {
    guard loudness == nil else { return }
    do {
      let meter = try LoudnessMeter(sampleRate: Int(client.sampleRate), pace: writerPace)
      guard taps.attach(meter.consumer) else {
        meter.finish()
        Log.error("the loudness meter cannot start: all \(TapTable.slotCount) tap slots are taken")
        return
      }
      loudness = meter
    } catch {
      Log.error("the loudness meter cannot start: \(error.description)")
    }
  }

  /// Detaches and ends the loudness meter.
  func stopLoudness(audioRunning: Bool) {
    guard let meter = loudness else { return }
    taps.detach(meter.consumer, audioRunning: audioRunning)
    meter.finish()
    loudness = nil
  }

  /// The `loudness` object of `status`.
  var loudnessStatus: [String: Any] {
    guard let meter = loudness else { return [:] }
    var fields: [String: Any] = meter.reading.fields
    fields["dropped_frames"] = Int(meter.consumer.droppedFrames.load(ordering: .relaxed))
    return ["loudness": fields]
  }

  /// The `loudness` command: `{"cmd":"loudness"}` (the figures) or
  /// `{"cmd":"loudness","action":"reset"}` (start integrated loudness, range and true peak over).
  func loudnessCommand(_ request: [String: JSONValue]) throws(ControlError) -> [String: Any] {
    guard let meter = loudness else { throw ControlError("the loudness meter is not running") }
    let action = request["action"]?.string ?? "show"
    switch action {
    case "show":
      return ["loudness": meter.reading.fields]
    case "reset":
      meter.reset()
      Log.info("loudness measurement reset (control)")
      stream.emit("loudness-reset", [:])
      return ["loudness": LoudnessReading().fields, "reset": true]
    default:
      throw ControlError("unknown loudness action '\(action)' (show, reset)")
    }
  }
}
