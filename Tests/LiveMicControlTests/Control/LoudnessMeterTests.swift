import Foundation
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The loudness meter computes its figures only while someone reads them, and a first reading
/// after a quiet spell is still fresh and right.
@Suite struct LoudnessMeterTests {
  /// Pushes `seconds` of a 1 kHz sine of `amplitude` on both channels into the meter's ring, as
  /// the audio thread would (in 256-frame blocks).
  static func feed(_ meter: LoudnessMeter, seconds: Double, amplitude: Float) {
    let block = 256
    var left = [Float](repeating: 0, count: block)
    var phase = 0
    for _ in 0..<Int(seconds * 48000) / block {
      for i in 0..<block {
        left[i] = amplitude * sinf(2 * .pi * 1000 * Float(phase + i) / 48000)
      }
      phase += block
      left.withUnsafeBufferPointer { samples in
        guard let base = samples.baseAddress else { return }
        meter.consumer.push(left: base, right: base, frames: block)
      }
    }
  }

  /// Waits until the meter thread has analyzed `frames` frames (at most 5 s).
  static func waitForAnalysis(_ meter: LoudnessMeter, frames: Int) {
    let deadline = Date().addingTimeInterval(5)
    while meter.analyzedFrames.load(ordering: .relaxed) < UInt64(frames), Date() < deadline { usleep(2000) }
  }

  @Test("Nobody reads: no figures are computed; the first reading waits for fresh, right ones")
  func lazyFigures() throws {
    let meter = try LoudnessMeter(sampleRate: 48000, pace: WriterPace())
    defer { meter.finish() }
    // 1 kHz at amplitude 0.1 on both channels: 10 log10(2 * 0.005) = -20 LUFS (BS.1770 reads a
    // 1 kHz sine at its mean square: the -0.691 dB offset undoes the K filter there).
    Self.feed(meter, seconds: 1, amplitude: 0.1)
    Self.waitForAnalysis(meter, frames: 48000 / 256 * 256)
    usleep(100_000)  // several of the thread's passes with the ring empty
    #expect(meter.computedReadings.load(ordering: .relaxed) == 0)
    let reading = meter.reading
    #expect(meter.computedReadings.load(ordering: .relaxed) >= 1)
    #expect(abs(reading.momentary - -20) < 0.3, "momentary \(reading.momentary) LUFS")
    #expect(abs(reading.integrated - -20) < 0.3, "integrated \(reading.integrated) LUFS")
  }

  @Test("While someone reads, the figures are computed about 20 times a second, not more")
  func readingRate() throws {
    let meter = try LoudnessMeter(sampleRate: 48000, pace: WriterPace())
    defer { meter.finish() }
    Self.feed(meter, seconds: 0.5, amplitude: 0.1)
    _ = meter.reading
    let start = meter.computedReadings.load(ordering: .relaxed)
    let started = Date()
    while Date().timeIntervalSince(started) < 0.5 {
      _ = meter.reading
      usleep(5000)
    }
    let computed = meter.computedReadings.load(ordering: .relaxed) - start
    let elapsed = Date().timeIntervalSince(started)
    // One every 50 ms at most (the thread's 20 ms rest rounds the interval up to 60 ms).
    #expect(computed >= 1 && Double(computed) <= elapsed / 0.05 + 1, "\(computed) readings in \(elapsed) s")
  }
}
