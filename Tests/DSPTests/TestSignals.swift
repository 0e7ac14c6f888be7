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

  /// Processes a stereo signal in place in blocks of `blockSize` frames.
  static func process(_ chain: VoiceChain, left: inout [Float], right: inout [Float], blockSize: Int = 256) {
    precondition(left.count == right.count)
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        var offset = 0
        while offset < l.count {
          let n = min(blockSize, l.count - offset)
          chain.process(left: l.baseAddress! + offset, right: r.baseAddress! + offset, frames: n)
          offset += n
        }
      }
    }
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
        unit.prepare(
          sampleRate: TestSignals.sampleRate, maxFrames: TestSignals.subBlock,
          parameters: ParameterValues(previous: pp.baseAddress!, current: cc.baseAddress!))
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
            let values = ParameterValues(previous: pp.baseAddress!, current: cc.baseAddress!)
            var offset = 0
            while offset < l.count {
              let frames = min(n, l.count - offset)
              unit.process(
                StereoBlock(left: l.baseAddress! + offset, right: r.baseAddress! + offset, frames: frames),
                parameters: values)
              offset += frames
            }
          }
        }
      }
    }
  }
}

// MARK: WAV files and sox

/// Minimal mono 32-bit float WAV writing and reading (enough for sox round trips).
enum FloatWAV {
  static func write(_ samples: [Float], sampleRate: Int, to url: URL) throws {
    var d = Data()
    func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
    func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
    let dataBytes = UInt32(samples.count * 4)
    d.append(contentsOf: Array("RIFF".utf8)); u32(36 + dataBytes); d.append(contentsOf: Array("WAVE".utf8))
    d.append(contentsOf: Array("fmt ".utf8)); u32(16)
    u16(3); u16(1); u32(UInt32(sampleRate)); u32(UInt32(sampleRate * 4)); u16(4); u16(32)
    d.append(contentsOf: Array("data".utf8)); u32(dataBytes)
    for s in samples { u32(s.bitPattern) }
    try d.write(to: url)
  }

  enum ReadError: Error { case malformed(String) }

  /// Reads a mono or multi-channel 32-bit float WAV (plain or WAVE_FORMAT_EXTENSIBLE); returns
  /// the first channel.
  static func read(_ url: URL) throws -> [Float] {
    let bytes = [UInt8](try Data(contentsOf: url))
    func u32(_ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[i + $1]) << (8 * UInt32($1)) } }
    func u16(_ i: Int) -> UInt16 { UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 }
    guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF" else {
      throw ReadError.malformed("not RIFF")
    }
    var i = 12
    var channels = 0
    while i + 8 <= bytes.count {
      let id = String(decoding: bytes[i..<i + 4], as: UTF8.self)
      let size = Int(u32(i + 4))
      if id == "fmt " {
        let format = u16(i + 8)
        channels = Int(u16(i + 10))
        let bits = u16(i + 22)
        let isFloat = format == 3 || (format == 0xFFFE && u16(i + 32) == 3)
        guard isFloat, bits == 32 else { throw ReadError.malformed("format \(format), \(bits) bits") }
      } else if id == "data" {
        guard channels > 0 else { throw ReadError.malformed("data before fmt") }
        let frames = min(size, bytes.count - i - 8) / (4 * channels)
        return (0..<frames).map { Float(bitPattern: u32(i + 8 + 4 * channels * $0)) }
      }
      i += 8 + size + (size & 1)
    }
    throw ReadError.malformed("no data chunk")
  }
}

enum Sox {
  static let candidates = ["/usr/bin/sox", "/usr/local/bin/sox", "/opt/homebrew/bin/sox"]

  static var path: String? { candidates.first { FileManager.default.isExecutableFile(atPath: $0) } }

  /// Runs sox with `arguments`; returns its exit status and standard error.
  static func run(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
    guard let path else { return (-1, "sox not found") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    let err = Pipe()
    p.standardError = err
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    let data = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
  }

  /// The impulse response of sox's `effect` (e.g. `["bass", "6"]`) at 48 kHz, `frames` long,
  /// for an impulse of `amplitude`; nil (with a recorded issue) when sox is unavailable or fails.
  static func impulseResponse(_ effect: [String], frames: Int, amplitude: Float) throws -> [Float]? {
    guard path != nil else {
      Issue.record("sox is not installed (looked in \(candidates.joined(separator: ", "))); install it (apt-get install sox) to run this comparison")
      return nil
    }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dsptests-sox-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let input = dir.appendingPathComponent("in.wav")
    let output = dir.appendingPathComponent("out.wav")
    try FloatWAV.write(TestSignals.impulse(frames: frames, amplitude: amplitude), sampleRate: Int(TestSignals.sampleRate), to: input)
    let result = try run([input.path, "-e", "floating-point", "-b", "32", output.path] + effect)
    guard result.status == 0 else {
      Issue.record("sox \(effect.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
      return nil
    }
    return try FloatWAV.read(output)
  }
}

// MARK: Magnitude responses of biquad cascades

/// Compares a measured impulse response with the exact response of a cascade of biquads (the
/// same Float coefficients the unit uses, evaluated in Double).
///
/// Float round-off: each section's recursion rounds its state (values of order 1 for a unit
/// impulse) to 24 bits, and that error reaches the output through the section's all-pole part
/// 1/A(z) and the later sections. Below a low cutoff |1/A| is huge (≈ 1/ω0², about 10⁴ at 80 Hz),
/// so the output carries a complex error of about
///   E(f) = ε · Σ_k |1/A_k(f)| · Π_{j>k} |H_j(f)|,   ε = 2⁻²⁴,
/// whatever the filter's own level there. (A Double simulation of the same Float coefficients
/// matches the formula to 1e-9 dB; a Float simulation reproduces the error; measured errors are
/// 0.1–1.6 × E.) Where the response itself is that small (the deep stopband of a high-pass), E
/// is more than 0.1 dB of it. Each point must therefore be within 0.1 dB, or — only where 4·E
/// deviates by more — within 4·E as a complex error. Every point that needed the allowance is
/// returned so tests can bound and report them.
struct CascadeResponse {
  let sections: [BiquadCoefficients]

  struct Point {
    var hz: Double
    var referenceDecibels: Double
    var measuredDecibels: Double
    var deviationDecibels: Double { measuredDecibels - referenceDecibels }
    /// |measured − reference| as complex numbers, relative to the impulse.
    var complexError: Double
    /// 4·E(f), the round-off allowance.
    var roundOffAllowance: Double
    /// Whether 0.1 dB was not met and the point passed on the round-off allowance.
    var usedAllowance: Bool
  }

  static func response(_ c: BiquadCoefficients, atHz hz: Double) -> (b: (Double, Double), a: (Double, Double)) {
    let w = 2 * Double.pi * hz / TestSignals.sampleRate
    let (b0, b1, b2, a1, a2) = (Double(c.b0), Double(c.b1), Double(c.b2), Double(c.a1), Double(c.a2))
    return (
      (b0 + b1 * cos(w) + b2 * cos(2 * w), -(b1 * sin(w) + b2 * sin(2 * w))),
      (1 + a1 * cos(w) + a2 * cos(2 * w), -(a1 * sin(w) + a2 * sin(2 * w)))
    )
  }

  /// The cascade's exact complex response and the round-off scale E(f).
  func reference(atHz hz: Double) -> (re: Double, im: Double, roundOff: Double) {
    var (re, im) = (1.0, 0.0)
    var e = 0.0
    let parts = sections.map { Self.response($0, atHz: hz) }
    for (k, p) in parts.enumerated() {
      let d = p.a.0 * p.a.0 + p.a.1 * p.a.1
      let h = ((p.b.0 * p.a.0 + p.b.1 * p.a.1) / d, (p.b.1 * p.a.0 - p.b.0 * p.a.1) / d)
      (re, im) = (re * h.0 - im * h.1, re * h.1 + im * h.0)
      var g = 1 / d.squareRoot()
      for q in parts[(k + 1)...] { g *= hypot(q.b.0, q.b.1) / hypot(q.a.0, q.a.1) }
      e += g
    }
    return (re, im, e * Double(Float.ulpOfOne) / 2)
  }

  /// Checks `h` (the response to an impulse of `amplitude`) at `frequencies`, recording an issue
  /// per failing point; returns every point.
  @discardableResult
  func check(_ h: [Float], amplitude: Double = 1, at frequencies: [Double], _ label: String,
             sourceLocation: SourceLocation = #_sourceLocation) -> [Point] {
    frequencies.map { f in
      let r = reference(atHz: f)
      let m = TestSignals.dft(h, atHz: f)
      let (mr, mi) = (m.re / amplitude, m.im / amplitude)
      let reference = hypot(r.re, r.im)
      let error = hypot(mr - r.re, mi - r.im)
      let point = Point(
        hz: f, referenceDecibels: 20 * log10(reference), measuredDecibels: 20 * log10(hypot(mr, mi)),
        complexError: error, roundOffAllowance: 4 * r.roundOff,
        usedAllowance: abs(20 * log10(hypot(mr, mi)) - 20 * log10(reference)) > 0.1)
      #expect(
        !point.usedAllowance || error <= point.roundOffAllowance,
        "\(label) at \(f) Hz: measured \(point.measuredDecibels) dB, expected \(point.referenceDecibels) dB (complex error \(error), round-off allowance \(point.roundOffAllowance))",
        sourceLocation: sourceLocation)
      return point
    }
  }
}
