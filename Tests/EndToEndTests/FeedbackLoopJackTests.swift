import Foundation
import TestSupport
import Testing

/// Speech from espeak-ng at 48 kHz, mono, scaled to an RMS of −20 dBFS.
func spokenSentence(_ text: String) throws -> [Float] {
  guard
    let espeak = ["/usr/bin/espeak-ng", "/usr/local/bin/espeak-ng"].first(where: {
      FileManager.default.isExecutableFile(atPath: $0)
    })
  else {
    throw HarnessError("espeak-ng is not installed (apt-get install espeak-ng, or scripts/setup --test)")
  }
  let folder = Paths.temporaryFolder("speech")
  defer { try? FileManager.default.removeItem(at: folder) }
  let raw = folder.appendingPathComponent("raw.wav").path
  let wav = folder.appendingPathComponent("speech.wav").path
  for (tool, arguments) in [
    (espeak, ["-s", "170", "-w", raw, text]),
    ("/usr/bin/sox", [raw, "-e", "floating-point", "-b", "32", "-r", "48000", "-c", "1", wav]),
  ] {
    let result = try Programs.run(tool, arguments)
    guard result.status == 0 else { throw HarnessError("\(tool) failed (\(result.status)): \(result.err)") }
  }
  var x = try readAudio(wav).samples
  let scale = Float(0.1 / rms(x[...]))
  for i in x.indices { x[i] *= scale }
  return x
}

func decibels(_ x: Double) -> Double { 20 * log10(max(x, 1e-12)) }

/// The frequency (10 Hz grid, 100 Hz–6 kHz) where `x` is strongest, with that bin's share of
/// the total power in dB (a sustained sine is near 0 dB, speech or noise far below).
func strongestTone(_ x: ArraySlice<Float>, rate: Double = 48000) -> (hz: Double, shareDecibels: Double) {
  let samples = Array(x)
  let total = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
  var best = (hz: 0.0, power: 0.0)
  for hz in stride(from: 100.0, through: 6000, by: 10) {
    let w = 2 * Double.pi * hz / rate
    var (s1, s2) = (0.0, 0.0)
    let k = 2 * cos(w)
    for v in samples {
      let s = Double(v) + k * s1 - s2
      (s2, s1) = (s1, s)
    }
    let power = (s1 * s1 + s2 * s2 - k * s1 * s2) * 2 / Double(samples.count)
    if power > best.power { best = (hz, power) }
  }
  return (best.hz, 10 * log10(max(best.power, 1e-30) / max(total, 1e-30)))
}

extension EndToEnd {
  /// The feedback suppressor's acceptance test over JACK (the offline one is
  /// Tests/DSPTests/FeedbackLoopTests.swift): LiveMic's output → `RoomClient` (loudspeaker band,
  /// resonances, tanh, 15 ms, gain G) → LiveMic's input, with speech mixed in. At G = −7 dB —
  /// 4 dB above where the room alone stays stable offline (−11 dB), 6 dB below where it stays
  /// stable with the suppressor (−1 dB) — the chain without `feedback` must howl and the chain
  /// with it must not.
  @Suite("Feedback loop over JACK", .serialized)
  struct FeedbackLoopJackTests {
    struct Outcome {
      var speechEnd: Double
      var tail: Double
      var peak: Double
      var tone: (hz: Double, shareDecibels: Double)
      var xruns: Int
      var stable: Bool { speechEnd <= 6 && tail <= -20 }
    }

    static let gainDecibels = -7.0

    /// One run of the loop, and the evidence that the server spoilt it (nil: clean): cycles
    /// LiveMic missed while the room played (on PipeWire a lost cycle is no xrun, and in a closed
    /// loop it is a step the suppressor did not make).
    static func run(_ speech: [Float], suppressor: Bool, preset: String, period: Int) throws -> Take<Outcome>
    {
      let source = speech + [Float](repeating: 0, count: 48_000)
      let server = try JackServer(period: period)
      defer { server.stop() }
      let room = try RoomClient(
        name: "lmroom", server: server.name, source: source, gainDecibels: gainDecibels, delayFrames: 720)
      defer { room.close() }
      let livemic = try LiveMicProcess(
        [
          "-s", server.name, "-n", "lmloop", "-p", preset, "--connect-in", room.portName("out"),
          "--connect-out", room.portName("in"),
        ] + (suppressor ? [] : ["-c", "feedback.bypass=on"]))
      guard livemic.waitForLog("latency capture-to-playback") else {
        throw HarnessError("livemic did not start: \(livemic.log)")
      }
      usleep(1_100_000)  // past the start ramp
      let missedBefore = Witness.missedCycles(client: "lmloop", environment: [:])?.count
      room.start()
      #expect(waitUntil(seconds: 15) { room.played.load(ordering: .acquiring) >= source.count })
      let missedAfter = Witness.missedCycles(client: "lmloop", environment: [:])?.count
      #expect(livemic.interrupt() == 0)
      var spoilt: String?
      if let missedBefore, let missedAfter, missedAfter > missedBefore {
        spoilt = "LiveMic missed \(missedAfter - missedBefore) cycles"
      } else if missedBefore == nil || missedAfter == nil {
        spoilt = "LiveMic did not report its missed cycles"
      }
      let y = room.recording
      guard y.count == source.count else {
        throw HarnessError("the room heard \(y.count) of \(source.count) frames")
      }
      let reference = rms(speech[...])
      let n = speech.count
      let outcome = Outcome(
        speechEnd: decibels(rms(y[(n - 48_000)..<n]) / reference),
        tail: decibels(rms(y[(y.count - 19_200)...]) / reference),
        peak: decibels(Double(y.map { abs($0) }.max() ?? 0)),
        tone: strongestTone(y[(y.count - 19_200)...]), xruns: room.xruns.load(ordering: .relaxed))
      return Take(outcome, spoilt: spoilt)
    }

    /// At 512 frames, not 256: on PipeWire at 256 this VM spoilt all four takes of a run in one
    /// of three (LiveMic missing 2-6 cycles in 4 s), at 512 none of three. At 1024 frames the
    /// suppressor did not hold this loop before 2026-12-02 (the same every run: tail −18.3 dB re
    /// the speech, a 3380 Hz cluster of beating modes that never stood out from its near sides;
    /// the offline `FeedbackLoopTests.stableAtLongPeriods` reproduces it).
    @Test(
      "closed loop over JACK: where the chain without 'feedback' howls, the chain with it stays stable",
      arguments: [512, 1024])
    func suppressorKeepsTheLoopStable(period: Int) throws {
      let started = Date()
      let speech = try spokenSentence("Testing the feedback loop: one, two, three.")
      let folder = Paths.temporaryFolder("loop")
      defer { try? FileManager.default.removeItem(at: folder) }
      let preset = folder.appendingPathComponent("loop.json")
      try #"""
      {"name": "loop", "volume": 1, "chain": [{"unit": "input"}, {"unit": "feedback"},
        {"unit": "limiter", "params": {"ceiling_db": -1}}, {"unit": "output"}]}
      """#.write(to: preset, atomically: true, encoding: .utf8)
      var outcomes: [Bool: Outcome] = [:]
      for suppressor in period == 1024 ? [true] : [false, true] {
        // Only the stable verdict is retaken on a lost cycle: without the suppressor the loop
        // howls whatever the server does (a dropout on PipeWire was seen every take there).
        let o =
          suppressor
          ? try retaking("the loop with the suppressor") {
            try Self.run(speech, suppressor: true, preset: preset.path, period: period)
          } : try Self.run(speech, suppressor: false, preset: preset.path, period: period).value
        outcomes[suppressor] = o
        print(
          "[measured] feedback loop over JACK at \(period) frames, G \(Self.gainDecibels) dB, "
            + (suppressor ? "with" : "without") + " the suppressor: "
            + String(
              format:
                "speech end %+.1f dB, tail %+.1f dB (re the speech RMS), peak %.1f dBFS, strongest tone in the tail %.0f Hz (%.1f dB of its power), %d xruns: ",
              o.speechEnd, o.tail, o.peak, o.tone.hz, o.tone.shareDecibels, o.xruns)
            + (o.stable ? "stable" : "howls"))
      }
      if period != 1024 {
        #expect(outcomes[false]?.stable == false, "without the suppressor the loop should howl")
        #expect((outcomes[false]?.peak ?? -100) > -6, "the howl should reach the limiter's ceiling")
      }
      #expect(outcomes[true]?.stable == true, "with the suppressor the loop should stay stable")
      print(
        "[measured] feedback loop over JACK took "
          + String(format: "%.1f s", Date().timeIntervalSince(started)))
    }
  }
}
