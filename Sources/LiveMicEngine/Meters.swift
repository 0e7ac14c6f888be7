import Synchronization

/// Peak and RMS of LiveMic's input and output channels, accumulated by the audio thread and
/// read (and reset) by the supervisor, about 20 times a second.
///
/// Thread: `record` on the audio thread; `read` on one other thread.
public final class Meters: @unchecked Sendable {
  /// Channels: input left, input right, output left, output right.
  public static let channelCount = 4
  private let peaks: UnsafeMutablePointer<Atomic<UInt32>>
  /// Sums of squares in units of 2⁻³² (fixed point, so the audio thread can add atomically).
  private let sums: UnsafeMutablePointer<Atomic<UInt64>>
  private let frames = Atomic<UInt64>(0)

  public init() {
    peaks = .allocate(capacity: Self.channelCount)
    sums = .allocate(capacity: Self.channelCount)
    for i in 0..<Self.channelCount {
      (peaks + i).initialize(to: Atomic(0))
      (sums + i).initialize(to: Atomic(0))
    }
  }

  deinit {
    peaks.deinitialize(count: Self.channelCount)
    sums.deinitialize(count: Self.channelCount)
    peaks.deallocate()
    sums.deallocate()
  }

  /// Adds one cycle of a channel.
  /// - Realtime: safe
  @inline(__always)
  func record(_ channel: Int, _ samples: UnsafePointer<Float>, _ n: Int) {
    var peak: Float = 0
    var sum: Float = 0
    for f in 0..<n {
      let x = samples[f]
      peak = max(peak, abs(x))
      sum += x * x
    }
    // Peaks are positive floats: their bit patterns order like the values.
    var seen = peaks[channel].load(ordering: .relaxed)
    while peak.bitPattern > seen {
      let (exchanged, original) = peaks[channel].compareExchange(
        expected: seen, desired: peak.bitPattern, ordering: .relaxed)
      if exchanged { break }
      seen = original
    }
    let fixed = sum.isFinite ? UInt64(min(Double(sum), 1e9) * 4_294_967_296) : 0
    sums[channel].add(fixed, ordering: .relaxed)
  }

  /// Counts the frames of one cycle (once per cycle, after the channels).
  /// - Realtime: safe
  @inline(__always)
  func finishCycle(_ n: Int) { frames.add(UInt64(n), ordering: .relaxed) }

  /// Peak and RMS (in dBFS, -200 for silence) per channel since the last read, then resets.
  public func read() -> [(peakDecibels: Double, rmsDecibels: Double)] {
    let n = max(Double(frames.exchange(0, ordering: .relaxed)), 1)
    return (0..<Self.channelCount).map { i in
      let peak = Double(Float(bitPattern: peaks[i].exchange(0, ordering: .relaxed)))
      let sum = Double(sums[i].exchange(0, ordering: .relaxed)) / 4_294_967_296
      let db = { (x: Double) in x > 1e-10 ? 20 * log10(x) : -200 }
      return (db(peak), db((sum / n).squareRoot()))
    }
  }
}

#if canImport(Glibc)
  import Glibc
#endif
