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

  /// The sum of squared differences Σ (a[i] − b[i])² over `0..<n` (a difference function's
  /// term: YIN's, the howl analysis'), eight partial sums at a time.
  /// - Realtime: safe
  @inline(__always)
  public static func squaredDistance(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float
  {
    let (ra, rb) = (UnsafeRawPointer(a), UnsafeRawPointer(b))
    var sums = SIMD8<Float>(repeating: 0)
    var f = 0
    while f + 8 <= n {
      let e =
        ra.loadUnaligned(fromByteOffset: f &* 4, as: SIMD8<Float>.self)
        - rb.loadUnaligned(fromByteOffset: f &* 4, as: SIMD8<Float>.self)
      sums += e * e
      f &+= 8
    }
    var total = sums.sum()
    while f < n {
      let e = a[f] - b[f]
      total += e * e
      f &+= 1
    }
    return total
  }

  /// Whether every sample of `left[0..<n]` and `right[0..<n]` is finite.
  /// - Realtime: safe
  @inline(__always)
  public static func allFinite(_ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>, _ n: Int) -> Bool
  {
    allFinite(left, n) && allFinite(right, n)
  }

  /// Whether every sample of `samples[0..<n]` is finite: no sample's exponent bits all set
  /// (infinities and NaNs), eight at a time (a signed compare: SSE2 has no unsigned one).
  /// - Realtime: safe
  @inline(__always)
  public static func allFinite(_ samples: UnsafePointer<Float>, _ n: Int) -> Bool {
    let raw = UnsafeRawPointer(samples)
    let exponent = SIMD8<Int32>(repeating: 0x7F80_0000)
    var bad = SIMDMask<SIMD8<Int32>>(repeating: false)
    var f = 0
    while f &+ 8 <= n {
      let bits = raw.loadUnaligned(fromByteOffset: f &* 4, as: SIMD8<Int32>.self)
      bad .|= (bits & exponent) .== exponent
      f &+= 8
    }
    if any(bad) { return false }
    while f < n {
      if !samples[f].isFinite { return false }
      f += 1
    }
    return true
  }
}
