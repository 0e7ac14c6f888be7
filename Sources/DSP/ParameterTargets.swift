import Synchronization

/// The target values of every parameter of a chain, as atomics: the control side writes them,
/// the audio thread reads them once per sub-block and smooths towards them.
///
/// Thread: `set` from any thread (one writer at a time per parameter), `value` from any thread.
public final class ParameterTargets: @unchecked Sendable {
  /// Inlinable into the engine and the LV2 host: a read is one load, not a call.
  @usableFromInline let storage: UnsafeMutablePointer<Atomic<UInt32>>
  /// How many parameters the chain has.
  public let count: Int

  /// Allocates one atomic per value. Not real-time.
  public init(initialValues: [Float]) {
    count = initialValues.count
    storage = .allocate(capacity: max(count, 1))
    for i in 0..<count {
      (storage + i).initialize(to: Atomic(initialValues[i].bitPattern))
    }
  }

  deinit {
    storage.deinitialize(count: count)
    storage.deallocate()
  }

  /// Sets a target; the audio thread picks it up at its next sub-block.
  /// - Realtime: safe
  @inlinable @inline(__always)
  public func set(_ index: Int, _ value: Float) {
    storage[index].store(value.bitPattern, ordering: .relaxed)
  }

  /// The current target.
  /// - Realtime: safe
  @inlinable @inline(__always)
  public func value(_ index: Int) -> Float {
    Float(bitPattern: storage[index].load(ordering: .relaxed))
  }
}
