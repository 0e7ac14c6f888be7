import Synchronization

/// The most recent gap in the server's frame times that the audio thread saw (a cycle the
/// server ran without LiveMic), packed into one word so a reader gets a consistent copy.
///
/// Written by the audio thread (`ProcessState`), read by anyone (`ctl status`, whose
/// `last_missed_cycle` lets a test tell whether a miss fell inside a stretch it measured).
public struct MissedCycle: Equatable, Sendable {
  /// `missed_cycles` after this gap, modulo 2¹⁶ (ties the gap to the running count).
  public var numberLow16: UInt16
  /// The frame time the cycle should have started at (the gap's first missing frame).
  public var expectedFrameTime: UInt32
  /// Frames missing before the cycle that saw the gap, at most 65535 (longer gaps saturate).
  public var missingFrames: UInt16

  /// - Realtime: safe
  public init(numberLow16: UInt16, expectedFrameTime: UInt32, missingFrames: UInt16) {
    self.numberLow16 = numberLow16
    self.expectedFrameTime = expectedFrameTime
    self.missingFrames = missingFrames
  }

  /// One word: number (16 bits), missing frames (16 bits), expected frame time (32 bits).
  /// - Realtime: safe
  @inline(__always)
  public var packed: UInt64 {
    UInt64(numberLow16) << 48 | UInt64(missingFrames) << 32 | UInt64(expectedFrameTime)
  }

  /// Unpacks `packed`; nil for 0 (no gap yet: the first gap has number 1).
  public init?(packed: UInt64) {
    guard packed != 0 else { return nil }
    numberLow16 = UInt16(truncatingIfNeeded: packed >> 48)
    missingFrames = UInt16(truncatingIfNeeded: packed >> 32)
    expectedFrameTime = UInt32(truncatingIfNeeded: packed)
  }

  /// The full `missed_cycles` count at this gap, given a count read after it.
  public func number(countAfter: UInt64) -> UInt64 {
    countAfter &- UInt64(UInt16(truncatingIfNeeded: countAfter) &- numberLow16)
  }
}

/// The last `capacity` missed cycles (`MissedCycle.packed`, slot = number mod capacity), so a
/// reader can place each gap of a stretch, not only the latest. Written by the audio thread,
/// read by anyone; a slot is one atomic word.
public final class MissedCycleHistory: Sendable {
  public static let capacity = 8
  private let s0 = Atomic<UInt64>(0), s1 = Atomic<UInt64>(0), s2 = Atomic<UInt64>(0), s3 = Atomic<UInt64>(0)
  private let s4 = Atomic<UInt64>(0), s5 = Atomic<UInt64>(0), s6 = Atomic<UInt64>(0), s7 = Atomic<UInt64>(0)

  public init() {}

  /// Stores `gap` in its slot.
  /// - Realtime: safe
  @inline(__always)
  public func store(_ gap: MissedCycle) {
    let value = gap.packed
    switch Int(gap.numberLow16) % Self.capacity {
    case 0: s0.store(value, ordering: .relaxed)
    case 1: s1.store(value, ordering: .relaxed)
    case 2: s2.store(value, ordering: .relaxed)
    case 3: s3.store(value, ordering: .relaxed)
    case 4: s4.store(value, ordering: .relaxed)
    case 5: s5.store(value, ordering: .relaxed)
    case 6: s6.store(value, ordering: .relaxed)
    default: s7.store(value, ordering: .relaxed)
    }
  }

  /// The gaps held now (any order). Thread: any.
  public var gaps: [MissedCycle] {
    let words = [
      s0.load(ordering: .relaxed), s1.load(ordering: .relaxed), s2.load(ordering: .relaxed),
      s3.load(ordering: .relaxed), s4.load(ordering: .relaxed), s5.load(ordering: .relaxed),
      s6.load(ordering: .relaxed), s7.load(ordering: .relaxed),
    ]
    return words.compactMap { MissedCycle(packed: $0) }
  }
}
