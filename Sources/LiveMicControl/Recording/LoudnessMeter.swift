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
    Thread.startOwn("livemic-loudness") { [self] in run() }
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
