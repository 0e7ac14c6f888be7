import Foundation
import Testing

@testable import DSP

/// The held-sound guard tells a held note from speech: a note (with a vibrato however wide) is
/// held for nearly all of its length, speech's gliding intonation hardly ever, so the denoiser
/// goes on cleaning speech in noise.
@Suite struct HarmonicGuardTests {
  /// The share of 5 ms frames of `x` during which the guard says a sound is held.
  static func heldShare(_ x: [Float]) -> Double {
    let guardian = HarmonicGuard(sampleRate: TestSignals.sampleRate)
    let frame = 240
    var held = 0
    var frames = 0
    x.withUnsafeBufferPointer { samples in
      guard let base = samples.baseAddress else { return }
      var offset = 0
      while offset + frame <= x.count {
        if guardian.feed(base + offset, count: frame) { held += 1 }
        frames += 1
        offset += frame
      }
    }
    return Double(held) / Double(max(frames, 1))
  }

  @Test("Speech is hardly ever held; sung notes, with a narrow or a wide vibrato, nearly always")
  func speechIsNotHeld() throws {
    let speech = try #require(Speech.samples, "espeak-ng and sox make the voice (scripts/setup --test)")
    let spoken = Self.heldShare(speech)
    TestSignals.measured("guard: speech held " + String(format: "%.1f%%", 100 * spoken) + " of the time")
    for (name, note) in [
      ("sung note", HeldNoteTests.sungNote), ("wide vibrato", HeldNoteTests.wideVibrato),
      ("fast wide vibrato", HeldNoteTests.fastWideVibrato),
    ] {
      let share = Self.heldShare(note)
      TestSignals.measured("guard: \(name) held " + String(format: "%.1f%%", 100 * share) + " of the time")
      #expect(share >= 0.85, "\(name): held \(share)")
    }
    // Before the pitch checks (2026-12-03): speech held 10.1% of the time; `scripts/bench-quality`'s
    // mean SI-SDR gain over stationary noise went from 5.22 to 5.66 dB with them.
    #expect(spoken <= 0.02, "speech held \(spoken) of the time")
  }
}
