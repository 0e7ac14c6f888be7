import DSP
import Synchronization

/// Peak and RMS of LiveMic's input and output channels, accumulated by the audio thread and
/// read (and reset) by the supervisor, about 20 times a second.
///
/// A reading holds whole cycles of every channel: the audio thread sums a cycle's channels in
/// its own memory and publishes them with the cycle's frame count at its end, as running totals
/// behind a sequence number (odd while it writes); the reader takes a snapshot whose sequence
/// number was even and unchanged around it, and reports the difference from its last one.
///
/// The audio thread meters only while someone reads (`isWanted`): nobody following the meters,
/// a cycle spends nothing on them.
///
/// Thread: `record`, `finishCycle` on the audio thread; `read` and `setWanted` on one other
/// thread; `isWanted` anywhere.
public final class Meters: @unchecked Sendable {
  /// Channels: input left, input right, output left, output right.
  public static let channelCount = 4
  private let peaks: UnsafeMutablePointer<Atomic<UInt32>>
  /// Running totals: per channel the sum of squares in units of 2⁻³² (fixed point), then the
  /// frames; written by the audio thread only (wrapping: readers take differences).
  private let totals: UnsafeMutablePointer<Atomic<UInt64>>
  private let sequence = Atomic<UInt64>(0)
  /// The current cycle's sums (audio thread only).
  private let cycleSums: UnsafeMutablePointer<UInt64>
  /// The totals of the last reading (the reader only).
  private let lastTotals: UnsafeMutablePointer<UInt64>
  /// Whether the audio thread meters (the reader says; off until someone reads).
  private let wanted = Atomic<Bool>(false)

  /// Whether the audio thread meters its cycles; read once per cycle.
  /// - Realtime: safe
  @inline(__always)
  public var isWanted: Bool { wanted.load(ordering: .relaxed) }

  /// Starts or stops the metering. Started, the next `read` covers the cycles from here on (the
  /// reading in between is dropped), so a reading never spans a time the meters were off.
  /// Thread: the reader's.
  public func setWanted(_ on: Bool) {
    guard on != wanted.load(ordering: .relaxed) else { return }
    wanted.store(on, ordering: .relaxed)
    if on { _ = read() }
  }

  public init() {
    peaks = .allocate(capacity: Self.channelCount)
    totals = .allocate(capacity: Self.channelCount + 1)
    cycleSums = .allocate(capacity: Self.channelCount)
    lastTotals = .allocate(capacity: Self.channelCount + 1)
    for i in 0..<Self.channelCount { (peaks + i).initialize(to: Atomic(0)) }
    for i in 0...Self.channelCount { (totals + i).initialize(to: Atomic(0)) }
    cycleSums.initialize(repeating: 0, count: Self.channelCount)
    lastTotals.initialize(repeating: 0, count: Self.channelCount + 1)
  }

  deinit {
    peaks.deinitialize(count: Self.channelCount)
    totals.deinitialize(count: Self.channelCount + 1)
    peaks.deallocate()
    totals.deallocate()
    cycleSums.deallocate()
    lastTotals.deallocate()
  }

  /// Adds one cycle of a channel (published by `finishCycle`).
  /// - Realtime: safe
  @inline(__always)
  func record(_ channel: Int, _ samples: UnsafePointer<Float>, _ n: Int) {
    let (peak, sum) = BlockMath.peakAndEnergy(samples, n)
    // Peaks are positive floats: their bit patterns order like the values.
    var seen = peaks[channel].load(ordering: .relaxed)
    while peak.bitPattern > seen {
      let (exchanged, original) = peaks[channel].compareExchange(
        expected: seen, desired: peak.bitPattern, ordering: .relaxed)
      if exchanged { break }
      seen = original
    }
    cycleSums[channel] &+= sum.isFinite ? UInt64(min(Double(sum), 1e9) * 4_294_967_296) : 0
  }

  /// Publishes the cycle's sums and its `n` frames, all at once (after the channels).
  /// - Realtime: safe
  @inline(__always)
  func finishCycle(_ n: Int) {
    let s = sequence.load(ordering: .relaxed)
    sequence.store(s &+ 1, ordering: .relaxed)
    atomicMemoryFence(ordering: .releasing)
    for i in 0..<Self.channelCount {
      totals[i].store(totals[i].load(ordering: .relaxed) &+ cycleSums[i], ordering: .relaxed)
      cycleSums[i] = 0
    }
    totals[Self.channelCount].store(
      totals[Self.channelCount].load(ordering: .relaxed) &+ UInt64(n), ordering: .relaxed)
    sequence.store(s &+ 2, ordering: .releasing)
  }

  /// Peak and RMS (in dBFS, -200 for silence) per channel since the last read, then resets.
  public func read() -> [(peakDecibels: Double, rmsDecibels: Double)] {
    var snapshot = [UInt64](repeating: 0, count: Self.channelCount + 1)
    while true {
      let before = sequence.load(ordering: .acquiring)
      if before & 1 == 1 { continue }  // a cycle is being published: a few stores
      for i in 0...Self.channelCount { snapshot[i] = totals[i].load(ordering: .relaxed) }
      atomicMemoryFence(ordering: .acquiring)
      if sequence.load(ordering: .relaxed) == before { break }
    }
    let n = max(Double(snapshot[Self.channelCount] &- lastTotals[Self.channelCount]), 1)
    let result = (0..<Self.channelCount).map { i in
      let peak = Double(Float(bitPattern: peaks[i].exchange(0, ordering: .relaxed)))
      let sum = Double(snapshot[i] &- lastTotals[i]) / 4_294_967_296
      let db = { (x: Double) in x > 1e-10 ? 20 * log10(x) : -200 }
      return (db(peak), db((sum / n).squareRoot()))
    }
    for i in 0...Self.channelCount { lastTotals[i] = snapshot[i] }
    return result
  }
}

#if canImport(Glibc)
  import Glibc
#endif
