import Dispatch

/// The xrun totals the supervisor saw over the last minute (sampled at every wake, at least
/// once a second), for "xruns in the last minute" in the log, `xrun` and `health`.
///
/// Thread: the supervisor (value type).
struct XrunHistory {
  /// The window kept.
  static let windowNanoseconds: UInt64 = 60_000_000_000
  private var samples: [(nanoseconds: UInt64, total: UInt64)] = []

  /// Adds the total seen at `now` and forgets the samples older than the window.
  mutating func record(_ total: UInt64, at now: DispatchTime = .now()) {
    let t = now.uptimeNanoseconds
    samples.append((t, total))
    samples.removeAll { t &- $0.nanoseconds > Self.windowNanoseconds }
  }

  /// The oldest total in the window (nil before the first sample).
  var oldestTotal: UInt64? { samples.first?.total }

  /// The xruns since the oldest sample, up to `total` (0 before the first sample).
  func lastMinute(total: UInt64) -> UInt64 { total - min(oldestTotal ?? total, total) }

  /// Forgets every sample (a new client counts from zero).
  mutating func removeAll() { samples.removeAll() }
}
