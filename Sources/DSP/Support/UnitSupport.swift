// Helpers for the units' inner loops.

/// Four-frame vector access to sample buffers, for the units' vectorized loops.
///
/// A block's frame count need not be a multiple of four: loops run `while f + 4 <= frames` over
/// vectors and finish the rest one frame at a time. Loads and stores are unaligned.
extension UnsafeMutablePointer where Pointee == Float {
  /// The four samples from `offset`.
  /// - Realtime: safe
  @inline(__always)
  func load4(_ offset: Int) -> SIMD4<Float> {
    UnsafeRawPointer(self + offset).loadUnaligned(as: SIMD4<Float>.self)
  }

  /// Writes four samples from `offset`.
  /// - Realtime: safe
  @inline(__always)
  func store4(_ offset: Int, _ value: SIMD4<Float>) {
    UnsafeMutableRawPointer(self + offset).storeBytes(of: value, as: SIMD4<Float>.self)
  }
}

extension SIMD4 where Scalar == Float {
  /// 1, 2, 3, 4: lane k of a ramp `from + step * (f + ramp)` is frame f + k's value, the value a
  /// per-frame `x += step` reaches at that frame.
  static var ramp: SIMD4<Float> { SIMD4(1, 2, 3, 4) }

  /// Lanes whose magnitude is below 1e-20 set to zero (`DSPMath.flush` on each lane).
  /// - Realtime: safe
  @inline(__always)
  func flushed() -> SIMD4<Float> {
    let tiny = SIMD4<Float>(repeating: 1e-20)
    return replacing(with: 0, where: (self .< tiny) .& (self .> -tiny))
  }
}

extension SIMD2 where Scalar == Float {
  /// Lanes whose magnitude is below 1e-20 set to zero (`DSPMath.flush` on each lane).
  /// - Realtime: safe
  @inline(__always)
  func flushed() -> SIMD2<Float> {
    let tiny = SIMD2<Float>(repeating: 1e-20)
    return replacing(with: 0, where: (self .< tiny) .& (self .> -tiny))
  }
}

/// `max(a, b)` (the same result, NaN included) as one `maxss`: Swift's `max` is a compare and a
/// blend.
/// - Realtime: safe
@inline(__always)
func larger(_ a: Float, _ b: Float) -> Float { b > a ? b : a }

/// `min(a, b)` (the same result, NaN included) as one `minss`.
/// - Realtime: safe
@inline(__always)
func smaller(_ a: Float, _ b: Float) -> Float { b < a ? b : a }

/// A value derived from a parameter (a gain from decibels, a smoothing coefficient), recomputed
/// only when the parameter changes: `powf` and `expf` once per sub-block and unit cost as much as
/// a few frames of the unit's work.
///
/// Thread: the owning unit's.
struct Derived {
  /// The parameter value `value` was computed from (NaN until the first use).
  private var key = Float.nan
  private var value: Float = 0

  /// `compute(x)`, from the last call's result when `x` is the same.
  /// - Realtime: safe
  @inline(__always)
  mutating func callAsFunction(_ x: Float, _ compute: (Float) -> Float) -> Float {
    if x != key {
      key = x
      value = compute(x)
    }
    return value
  }

  /// The result for `x` if it is the one stored (a ramp's start is the previous block's end).
  /// - Realtime: safe
  @inline(__always)
  func cached(_ x: Float) -> Float? { x == key ? value : nil }
}
