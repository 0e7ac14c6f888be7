import Foundation
import Testing

@testable import LiveMicControl

/// The shipped presets that denoise keep a singer's long note: rendered offline (`livemic
/// render`, `-c output.volume=1`), the note loses at most 1 dB between its onset and its last
/// 1.5 s (issue 16; before the held-sound guard: 11.5 dB through `voice`, 10.5 through
/// `hearing`, 6.0 through `announce`).
@Suite struct HeldNotePresetTests {
  static let rate = 48000

  /// The sung note: 262 Hz, seven partials (1/k), ±30 cents of vibrato at 5.5 Hz, 4 s at
  /// -20 dBFS RMS, a 10 ms fade-in (the same as DSPTests' `HeldNoteTests.sungNote`).
  static func sungNote() -> [Float] {
    var phase = 0.0
    var x = (0..<(4 * rate)).map { i -> Double in
      let t = Double(i) / Double(rate)
      phase += 2 * Double.pi * 262 * pow(2, 30 / 1200 * sin(2 * Double.pi * 5.5 * t)) / Double(rate)
      return (1...7).reduce(0.0) { $0 + sin(Double($1) * phase) / Double($1) } * min(t / 0.01, 1)
    }
    let rms = (x.reduce(0) { $0 + $1 * $1 } / Double(x.count)).squareRoot()
    x = x.map { $0 * 0.1 / rms }
    return x.map(Float.init)
  }

  static func rmsDecibels(_ x: [Float], _ range: Range<Int>) -> Double {
    let ms = x[range].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(range.count, 1))
    return 10 * log10(max(ms, 1e-20))
  }

  @Test(
    "every preset that denoises keeps a sung note within 1 dB",
    arguments: ["voice", "hearing", "announce", "stream", "podcast"])
  func presetKeepsTheNote(_ preset: String) throws {
    let note = Self.sungNote()
    let input = LoudnessTests.temporary("held-note-\(UUID().uuidString.prefix(6)).wav")
    defer { try? FileManager.default.removeItem(atPath: input) }
    try LoudnessTests.writeWav(input, rate: Self.rate, frames: note.count) { f, _ in note[f] }
    let stereo = try LoudnessTargetRenderTests.render(input, preset: preset, target: nil, ["output.volume=1"])
    let left = stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
    let onset = Int(0.1 * Double(Self.rate))..<Int(0.6 * Double(Self.rate))
    let end = (note.count - 3 * Self.rate / 2)..<note.count
    let drop = Self.rmsDecibels(left, onset) - Self.rmsDecibels(left, end)
    print("[measured] \(preset): a 4 s sung note loses " + String(format: "%.1f dB", drop))
    #expect(abs(drop) <= 1, "\(preset): \(drop) dB")
  }
}
