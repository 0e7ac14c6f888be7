import DSP
import Dispatch
import Foundation
import LiveMicEngine
import LiveMicOffline
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The always-on loudness meter: a consumer of the `output` tap (so nothing new runs on the
/// audio thread) and a thread that drains its ring into a `LoudnessAnalyzer`. The figures are
/// computed and published about 20 times a second while someone reads them (`reading` within
/// `leaseNanoseconds`), and not at all otherwise: libebur128 sums the last 3 s of samples for
/// every short-term figure (about 260 µs a call here), which at 50 readings a second took 1.3%
/// of a core on an idle rig. The measurement itself (integrated loudness, range, true peak)
/// goes on either way, so a first reading after a quiet spell is as right as any. It outlives
/// JACK clients; on a sample-rate change the measurement starts over at the new rate.
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
  /// Readings computed and published so far.
  let computedReadings = Atomic<UInt64>(0)
  /// Until when (`DispatchTime` uptime, ns) someone reads the figures: each `reading` extends it.
  private let wantedUntil = Atomic<UInt64>(0)
  /// How long a reading keeps the figures computed (a `watch livemic ctl loudness` finds them on).
  static let leaseNanoseconds: UInt64 = 10_000_000_000
  /// The interval between computed readings while someone reads (about 20 a second).
  static let readingIntervalNanoseconds: UInt64 = 50_000_000
  /// How long the first reading after a quiet spell waits for fresh figures.
  static let firstReadingWaitNanoseconds: UInt64 = 500_000_000

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
    Thread.startOwn("livemic-loudness") { [self] in run() }
  }

  /// The latest figures. The first reading after `leaseNanoseconds` without one (figures are
  /// computed only while someone reads) waits for the meter thread's next computation, at most
  /// `firstReadingWaitNanoseconds`.
  var reading: LoudnessReading {
    let now = DispatchTime.now().uptimeNanoseconds
    let leaseEnd = wantedUntil.exchange(now + Self.leaseNanoseconds, ordering: .acquiringAndReleasing)
    if leaseEnd < now {
      let seen = computedReadings.load(ordering: .acquiring)
      let deadline = now + Self.firstReadingWaitNanoseconds
      while computedReadings.load(ordering: .acquiring) == seen,
        DispatchTime.now().uptimeNanoseconds < deadline
      {
        usleep(1000)
      }
    }
    return published.withLock { $0 }
  }

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
    // When figures were last computed (uptime, ns); 0: never.
    var lastComputed: UInt64 = 0
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
      // Figures while someone reads them, at most every `readingIntervalNanoseconds` (also
      // while JACK freewheels and this loop turns every millisecond).
      let computes =
        started < wantedUntil.load(ordering: .acquiring)
        && started &- lastComputed >= Self.readingIntervalNanoseconds
      if computes {
        let figures = analyzer.reading
        published.withLock { $0 = figures }
        lastComputed = started
        computedReadings.add(1, ordering: .releasing)
      }
      if total > 0 { analyzedFrames.add(UInt64(total), ordering: .relaxed) }
      if total > 0 || computes {
        busyNanoseconds.add(DispatchTime.now().uptimeNanoseconds - started, ordering: .relaxed)
      }
      pace.rest()
    }
  }
}
