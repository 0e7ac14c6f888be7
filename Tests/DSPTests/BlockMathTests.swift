import Testing

@testable import DSP

/// The block reductions against the plain loops they replace, at every length around the
/// eight-lane boundary, with the values that must not slip through.
@Suite struct BlockMathTests {
  static func naive(_ x: [Float]) -> (peak: Float, energy: Float) {
    var (peak, energy): (Float, Double) = (0, 0)
    for v in x {
      if abs(v) > peak { peak = abs(v) }
      energy += Double(v) * Double(v)
    }
    return (peak, Float(energy))
  }

  @Test("peak and energy match the plain loop at lengths 0 to 40; a NaN is left out of the peak")
  func peakAndEnergy() {
    var seed: UInt32 = 1
    for n in 0...40 {
      let x = (0..<n).map { _ -> Float in
        seed = seed &* 1_664_525 &+ 1_013_904_223
        return Float(Int32(bitPattern: seed)) / Float(Int32.max)
      }
      let (peak, energy) = x.withUnsafeBufferPointer { p in
        p.baseAddress.map { BlockMath.peakAndEnergy($0, n) } ?? (0, 0)
      }
      let expected = Self.naive(x)
      #expect(peak == expected.peak, "n = \(n)")
      #expect(abs(energy - expected.energy) <= 1e-5 * max(expected.energy, 1), "n = \(n)")
    }
    for at in [0, 5, 8, 13] {
      var x = [Float](repeating: 0.25, count: 16)
      x[at] = .nan
      x[15 - at] = -0.75
      let (peak, energy) = x.withUnsafeBufferPointer { p in
        p.baseAddress.map { BlockMath.peakAndEnergy($0, 16) } ?? (0, 0)
      }
      #expect(peak == 0.75 && energy.isNaN, "NaN at \(at): peak \(peak), energy \(energy)")
    }
  }

  @Test("a non-finite sample anywhere in either channel, the tail included, makes the block not finite")
  func allFinite() {
    for n in [1, 7, 8, 9, 31, 32, 33] {
      let clean = [Float](repeating: 0.5, count: n)
      #expect(Self.finite(clean, clean))
      for at in 0..<n {
        for bad in [Float.nan, .infinity, -.infinity] {
          var x = clean
          x[at] = bad
          #expect(!Self.finite(x, clean) && !Self.finite(clean, x), "n = \(n), \(bad) at \(at)")
        }
      }
    }
    let huge = [Float](repeating: .greatestFiniteMagnitude, count: 12)
    #expect(Self.finite(huge, huge), "finite, however large")
  }

  @Test(
    "copySanitized copies as sanitize makes safe, mono and stereo, at lengths around the eight-lane groups")
  func copySanitized() {
    let specials: [Float] = [.nan, .infinity, -.infinity, 1e30, -2000, 999, -.nan]
    for n in [0, 1, 7, 8, 9, 16, 23, 64] {
      for at in [-1] + Array(0..<n) {
        var left = (0..<n).map { Float($0) * 0.01 - 0.3 }
        var right = (0..<n).map { -Float($0) * 0.02 + 0.1 }
        if at >= 0 {
          left[at] = specials[at % specials.count]
          right[(at + 3) % n] = specials[(at + 1) % specials.count]  // the right channel's own check
        }
        for mono in [false, true] {
          let inRight = mono ? left : right
          var expectedLeft = left
          var expectedRight = inRight
          var gotLeft = [Float](repeating: 7, count: n)
          var gotRight = [Float](repeating: 7, count: n)
          guard n > 0 else { continue }
          expectedLeft.withUnsafeMutableBufferPointer { l in
            expectedRight.withUnsafeMutableBufferPointer { r in
              VoiceChain.sanitize(left: l.baseAddress!, right: r.baseAddress!, frames: n)
            }
          }
          left.withUnsafeBufferPointer { inL in
            inRight.withUnsafeBufferPointer { inR in
              gotLeft.withUnsafeMutableBufferPointer { l in
                gotRight.withUnsafeMutableBufferPointer { r in
                  VoiceChain.copySanitized(
                    inL.baseAddress!, mono ? inL.baseAddress! : inR.baseAddress!, into: l.baseAddress!,
                    r.baseAddress!, frames: n)
                }
              }
            }
          }
          #expect(gotLeft == expectedLeft && gotRight == expectedRight, "n = \(n), at \(at), mono \(mono)")
        }
      }
    }
  }

  static func finite(_ left: [Float], _ right: [Float]) -> Bool {
    left.withUnsafeBufferPointer { l in
      right.withUnsafeBufferPointer { r in
        guard let l = l.baseAddress, let r = r.baseAddress else { return true }
        return BlockMath.allFinite(l, r, min(left.count, right.count))
      }
    }
  }

  @Test("the squared distance matches the plain loop at lengths 0 to 40, offsets 0 to 9")
  func squaredDistance() {
    let samples: [Float] = (0..<64).map { i in Float((i * 37) % 23) / 7 - Float(i % 5) }
    for n in 0...40 {
      for offset in 0..<10 {
        var plain: Float = 0
        for i in 0..<n { plain += (samples[i] - samples[i + offset]) * (samples[i] - samples[i + offset]) }
        let fast = samples.withUnsafeBufferPointer { p in
          BlockMath.squaredDistance(p.baseAddress!, p.baseAddress! + offset, n)
        }
        #expect(
          abs(fast - plain) <= 1e-4 * max(1, plain), "n \(n), offset \(offset): \(fast) against \(plain)")
      }
    }
  }
}
