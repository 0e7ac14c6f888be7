/// The smallest of the last `count` values pushed: a ring scanned whole (a few hundred values at
/// most, once a 5 ms frame). Places not yet pushed, or pushed as `.greatestFiniteMagnitude`, mean
/// "nothing known". The denoiser's floors (`RemovalLimit`, `StaleEstimate`, `BurstGuard`).
/// Thread: made off the audio thread; pushed and read on it.
struct WindowMinimum: ~Copyable {
  let count: Int
  private let values: UnsafeMutablePointer<Float>
  private var next = 0

  init(count: Int) {
    self.count = max(count, 1)
    values = .allocate(capacity: self.count)
    values.initialize(repeating: .greatestFiniteMagnitude, count: self.count)
  }

  deinit { values.deallocate() }

  /// Forgets every value.
  /// - Realtime: safe
  mutating func reset() {
    values.update(repeating: .greatestFiniteMagnitude, count: count)
    next = 0
  }

  /// Puts `value` in place of the oldest.
  /// - Realtime: safe
  mutating func push(_ value: Float) {
    values[next] = value
    next = next + 1 == count ? 0 : next + 1
  }

  /// The smallest value of the window.
  /// - Realtime: safe
  var minimum: Float {
    var m = Float.greatestFiniteMagnitude
    for i in 0..<count { m = min(m, values[i]) }
    return m
  }
}
