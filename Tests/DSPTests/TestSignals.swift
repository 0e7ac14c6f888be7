import DSP
import Foundation
import Testing

/// Shared signals, chain helpers and measurements for the DSP tests. Everything runs at 48 kHz
/// unless a test says otherwise.
enum TestSignals {
  static let sampleRate = 48_000.0
  /// Frames per sub-block of a chain (parameters are smoothed once per sub-block).
  static var subBlock: Int { VoiceChain.subBlockFrames }
  /// Impulse-response length for the response measurements (2.7 s; every filter under test has
  /// decayed below Float resolution long before).
  static let responseLength = 1 << 17

  /// Prints one measurement (worst deviation, largest step, …) so a run shows each test's
  /// margin; `grep '\[measured\]'` collects them.
  static func measured(_ line: String) { print("[measured] \(line)") }

  // MARK: Signals

  static func sine(hz: Double, amplitude: Float, frames: Int, phase: Double = 0) -> [Float] {
    (0..<frames).map { n in amplitude * Float(sin(2 * Double.pi * hz * Double(n) / sampleRate + phase)) }
  }

  static func impulse(frames: Int, amplitude: Float = 1, at index: Int = 0) -> [Float] {
    var x = [Float](repeating: 0, count: frames)
    x[index] = amplitude
    return x
  }

  /// Deterministic uniform noise in [-amplitude, amplitude] (xorshift64*).
  static func noise(frames: Int, amplitude: Float, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [Float] {
    var s = seed
    return (0..<frames).map { _ in
      s ^= s >> 12
      s ^= s << 25
      s ^= s >> 27
      let u = Double((s &* 0x2545_F491_4F6C_DD1D) >> 11) / Double(1 << 53)
      return amplitude * Float(2 * u - 1)
    }
  }

  /// `count` log-spaced frequencies from `low` to `high` inclusive.
  static func logFrequencies(_ count: Int = 30, from low: Double = 20, to high: Double = 20_000) -> [Double] {
    (0..<count).map { low * pow(high / low, Double($0) / Double(count - 1)) }
  }

  // MARK: Chains

  static func chain(_ stages: [StageDescription]) -> VoiceChain {
    do {
      return try ChainAssembly.build(stages, sampleRate: sampleRate)
    } catch {
      fatalError("test chain failed to build: \(error)")
    }
  }

  /// A chain of one unit, `id` equal to its type name.
  static func chain(_ type: String, _ values: [String: Float] = [:], bypassed: Bool = false) -> VoiceChain {
    chain([StageDescription(id: type, type: type, values: values, bypassed: bypassed)])
  }

  /// The index of `chain`'s parameter `key` (a test's own chain: it has it).
  static func index(_ chain: VoiceChain, _ key: String) -> Int {
    guard let p = chain.parameter(key) else { fatalError("the chain has no parameter \(key)") }
    return p.index
  }

  /// Processes a stereo signal in place in blocks of `blockSize` frames.
  static func process(_ chain: VoiceChain, left: inout [Float], right: inout [Float], blockSize: Int = 256) {
    precondition(left.count == right.count)
    chain.process(left: &left, right: &right, blockFrames: blockSize)
  }

  /// Processes `x` on both channels and returns the left output (a test of a mono signal).
  static func processMono(_ chain: VoiceChain, _ x: [Float], blockSize: Int = 256) -> [Float] {
    var left = x
    var right = x
    process(chain, left: &left, right: &right, blockSize: blockSize)
    return left
  }

  // MARK: Measurements

  /// The DFT of `h` at `hz` (sum of h[n] e^{-jωn} in Double; the phasor is re-seeded exactly every
  /// 1024 samples so its rounding error stays ~1e-13). Trailing zeros are skipped.
  static func dft(_ h: [Float], atHz hz: Double) -> (re: Double, im: Double) {
    let w = 2 * Double.pi * hz / sampleRate
    let (cw, sw) = (cos(w), -sin(w))
    var (re, im) = (0.0, 0.0)
    var (c, s) = (1.0, 0.0)
    let end = (h.lastIndex { $0 != 0 } ?? -1) + 1
    for n in 0..<end {
      if n & 1023 == 0 { (c, s) = (cos(w * Double(n)), -sin(w * Double(n))) }
      let x = Double(h[n])
      re += x * c
      im += x * s
      (c, s) = (c * cw - s * sw, c * sw + s * cw)
    }
    return (re, im)
  }

  /// Magnitude of `h`'s DFT at `hz` in dB, relative to `reference` (the impulse's amplitude).
  static func magnitudeDecibels(_ h: [Float], atHz hz: Double, reference: Double = 1) -> Double {
    let (re, im) = dft(h, atHz: hz)
    return 10 * log10((re * re + im * im) / (reference * reference))
  }

  /// The largest |x[n] - x[n-1]| for n in `range` (n - 1 may precede the range).
  static func maxJump(_ x: [Float], in range: Range<Int>) -> Float {
    var m: Float = 0
    for n in max(range.lowerBound, 1)..<range.upperBound { m = max(m, abs(x[n] - x[n - 1])) }
    return m
  }

  static func peak(_ x: some Collection<Float>) -> Float { x.reduce(0) { max($0, abs($1)) } }

  /// The first frame of `x` whose magnitude exceeds `threshold`, or nil.
  static func firstIndex(of x: [Float], above threshold: Float) -> Int? {
    x.firstIndex { abs($0) > threshold }
  }

  // MARK: State inspection

  /// The number of subnormal Float (or Double) values stored anywhere inside `value` (a unit
  /// struct): its stored properties, nested structs (`StereoBiquad`), arrays and tuples, found
  /// with `Mirror`.
  static func subnormalStateCount(in value: Any) -> Int {
    var count = 0
    func visit(_ v: Any) {
      if let f = v as? Float {
        if f.isSubnormal { count += 1 }
      } else if let d = v as? Double {
        if d.isSubnormal { count += 1 }
      } else if let a = v as? [Float] {
        for f in a where f.isSubnormal { count += 1 }
      } else {
        for child in Mirror(reflecting: v).children { visit(child.value) }
      }
    }
    visit(value)
    return count
  }

  /// The number of Float values (scalars and array elements) `Mirror` finds in `value`.
  static func storedFloatCount(in value: Any) -> Int {
    var count = 0
    func visit(_ v: Any) {
      if v is Float {
        count += 1
      } else if let a = v as? [Float] {
        count += a.count
      } else {
        for child in Mirror(reflecting: v).children { visit(child.value) }
      }
    }
    visit(value)
    return count
  }
}

/// Runs one unit directly (no `UnitStage`) with fixed parameter values, in 32-frame blocks, so
/// its stored state can be inspected with `Mirror`.
struct UnitHarness<U: VoiceUnit> {
  var unit = U()
  var previous: [Float]
  var current: [Float]

  init(_ values: [String: Float] = [:]) {
    var v = U.parameters.map { $0.defaultValue }
    for (name, value) in values {
      guard let i = U.parameters.firstIndex(where: { $0.name == name }) else {
        fatalError("\(U.typeName) has no parameter \(name)")
      }
      v[i] = U.parameters[i].sanitize(value)
    }
    previous = v
    current = v
    let (p, c) = (previous, current)
    p.withUnsafeBufferPointer { pp in
      c.withUnsafeBufferPointer { cc in
        guard let pp = pp.baseAddress, let cc = cc.baseAddress else { return }
        unit.prepare(
          sampleRate: TestSignals.sampleRate, maxFrames: TestSignals.subBlock,
          parameters: ParameterValues(previous: pp, current: cc))
      }
    }
  }

  /// Processes a stereo signal in place, 32 frames at a time, parameters held constant.
  mutating func process(left: inout [Float], right: inout [Float]) {
    let (p, c) = (previous, current)
    let n = TestSignals.subBlock
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        p.withUnsafeBufferPointer { pp in
          c.withUnsafeBufferPointer { cc in
            guard let pp = pp.baseAddress, let cc = cc.baseAddress else { return }
            guard let lb = l.baseAddress, let rb = r.baseAddress else { return }
            let values = ParameterValues(previous: pp, current: cc)
            var offset = 0
            while offset < l.count {
              let frames = min(n, l.count - offset)
              unit.process(
                StereoBlock(left: lb + offset, right: rb + offset, frames: frames), parameters: values)
              offset += frames
            }
          }
        }
      }
    }
  }
}
