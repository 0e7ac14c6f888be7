/// Fast `log2` and `exp2` of four values at once, for the compressor's detector and gain.
///
/// Measured error (this exact Float arithmetic against Double, dense sweeps): a level's dB value
/// (`decibelsPerOctave · log2`) within 3.5e-5 dB from 1e-12 to 1000; a gain
/// (`exp2(dB · octavesPerDecibel)`) within 7.6e-6 dB from -150 to +40 dB, and exactly 1 at 0 dB.
/// So the compressor's output differs from the `log10f`/`expf` version by under 1e-4 dB, far
/// inside the 0.01 dB allowed.
enum FastMath {
  /// 20·log10(2): decibels per octave of amplitude.
  static let decibelsPerOctave: Float = 6.020_599_913_279_624
  /// log2(10)/20: octaves per decibel.
  static let octavesPerDecibel: Float = 0.166_096_404_744_368_12

  /// |x| (the sign bit cleared).
  /// - Realtime: safe
  @inline(__always)
  static func magnitude(_ x: SIMD4<Float>) -> SIMD4<Float> {
    unsafeBitCast(unsafeBitCast(x, to: SIMD4<UInt32>.self) & 0x7FFF_FFFF, to: SIMD4<Float>.self)
  }

  /// log2(x) for x ≥ 0 (0 and subnormals give about -127; never NaN for finite x ≥ 0): the
  /// exponent, plus a degree-6 polynomial of the mantissa taken in [0.75, 1.5).
  /// - Realtime: safe
  @inline(__always)
  static func log2(_ x: SIMD4<Float>) -> SIMD4<Float> {
    let bits = unsafeBitCast(x, to: SIMD4<Int32>.self)
    // The mantissa in [1, 2), halved (and the exponent raised) from 1.5 on.
    let mantissa = unsafeBitCast((bits & 0x007F_FFFF) | 0x3F80_0000, to: SIMD4<Float>.self)
    let high = mantissa .>= 1.5
    let exponent = SIMD4<Float>((bits &>> 23) &- 127)
    let t = mantissa.replacing(with: mantissa * 0.5, where: high) - 1
    var p = SIMD4<Float>(repeating: -0.145_176_470_279_693_6)
    p = p * t + 0.292_725_354_433_059_7
    p = p * t - 0.371_069_580_316_543_6
    p = p * t + 0.481_645_703_315_734_86
    p = p * t - 0.721_094_489_097_595_2
    p = p * t + 1.442_681_550_979_614_3
    return exponent.replacing(with: exponent + 1, where: high) + p * t
  }

  /// 2^x, x clamped to [-126, 126]: 2 to the nearest integer n (built as a Float's exponent)
  /// times a degree-5 polynomial of x − n in [-0.5, 0.5].
  /// - Realtime: safe
  @inline(__always)
  static func exp2(_ x: SIMD4<Float>) -> SIMD4<Float> {
    let (low, high) = (SIMD4<Float>(repeating: -126), SIMD4<Float>(repeating: 126))
    let x = x.replacing(with: low, where: x .< low).replacing(with: high, where: x .> high)
    // Adding 1.5·2^23 rounds to an integer, which then sits in the low mantissa bits.
    let shifted = x + 12_582_912
    let n = shifted - 12_582_912
    let t = x - n
    var p = SIMD4<Float>(repeating: 0.001_326_473_196_968_436_2)
    p = p * t + 0.009_671_512_991_189_957
    p = p * t + 0.055_507_335_811_853_41
    p = p * t + 0.240_222_424_268_722_53
    p = p * t + 0.693_147_003_650_665_3
    p = p * t + 1
    let scale = (unsafeBitCast(shifted, to: SIMD4<Int32>.self) &- 0x4B40_0000 &+ 127) &<< 23
    return p * unsafeBitCast(scale, to: SIMD4<Float>.self)
  }
}
