import DSP
import Foundation
import TestSupport
import Testing

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
    let result = try Programs.run(path, arguments)
    return (result.status, result.err)
  }

  /// The impulse response of sox's `effect` (e.g. `["bass", "6"]`) at 48 kHz, `frames` long,
  /// for an impulse of `amplitude`; nil (with a recorded issue) when sox is unavailable or fails.
  static func impulseResponse(_ effect: [String], frames: Int, amplitude: Float) throws -> [Float]? {
    guard path != nil else {
      Issue.record(
        "sox is not installed (looked in \(candidates.joined(separator: ", "))); install it (apt-get install sox) to run this comparison"
      )
      return nil
    }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
      "dsptests-sox-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let input = dir.appendingPathComponent("in.wav")
    let output = dir.appendingPathComponent("out.wav")
    try FloatWAV.write(
      TestSignals.impulse(frames: frames, amplitude: amplitude), sampleRate: Int(TestSignals.sampleRate),
      to: input)
    let result = try run([input.path, "-e", "floating-point", "-b", "32", output.path] + effect)
    guard result.status == 0 else {
      Issue.record("sox \(effect.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
      return nil
    }
    return try FloatWAV.read(output)
  }
}
