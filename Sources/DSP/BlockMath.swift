/// Reductions over a block of samples, eight lanes at a time. A serial Float sum is one long
/// dependency chain the compiler may not reorder (about 4 cycles a sample); eight partial sums
/// take an eighth of that. Thread: any; nothing here allocates.
public enum BlockMath {
  /// The largest magnitude and the sum of squares of `samples[0..<n]`. A NaN sample is left
  /// out of the peak and makes the sum NaN.
  /// - Realtime: safe
  @inline(__always)
  public static func peakAndEnergy(_ samples: UnsafePointer<Float>, _ n: Int) -> (peak: Float, energy: Float)
  {
    let raw = UnsafeRawPointer(samples)
    var peaks = SIMD8<Float>(repeating: 0)
    var sums = SIMD8<Float>(repeating: 0)
    var f = 0
    while f + 8 <= n {
      let x = raw.loadUnaligned(fromByteOffset: f * 4, as: SIMD8<Float>.self)
      // |x| by clearing the sign bits (the generic pointwiseMax is not inlined here).
      let bits = raw.loadUnaligned(fromByteOffset: f * 4, as: SIMD8<UInt32>.self) & 0x7FFF_FFFF
      let magnitude = unsafeBitCast(bits, to: SIMD8<Float>.self)
      peaks.replace(with: magnitude, where: magnitude .> peaks)  // false for NaN: left out
      sums += x * x
      f += 8
    }
    var peak: Float = 0
    for i in 0..<8 where peaks[i] > peak { peak = peaks[i] }
    var energy = sums.sum()
    while f < n {
      let x = samples[f]
      if abs(x) > peak { peak = abs(x) }
      energy += x * x
      f += 1
    }
    return (peak, energy)
  }

  /// Whether every sample of `left[0..<n]` and `right[0..<n]` is finite.
  /// - Realtime: safe
  @inline(__always)
  public static func allFinite(_ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>, _ n: Int) -> Bool
  {
    let (l, r) = (UnsafeRawPointer(left), UnsafeRawPointer(right))
    // x · 0 is 0 for a finite x and NaN for an infinite or NaN one; NaN survives any sum.
    var sums = SIMD8<Float>(repeating: 0)
    var f = 0
    while f + 8 <= n {
      sums += l.loadUnaligned(fromByteOffset: f * 4, as: SIMD8<Float>.self) * 0
      sums += r.loadUnaligned(fromByteOffset: f * 4, as: SIMD8<Float>.self) * 0
      f += 8
    }
    var sum = sums.sum()
    while f < n {
      sum += left[f] * 0 + right[f] * 0
      f += 1
    }
    return sum.isFinite
  }
}
