import DSP
import Foundation
import Testing

/// The feedback suppressor open-loop: a howl (a growing pure tone) is found and cut quickly, a
/// sung note is left alone, notches are released after the howl. The closed-loop acceptance test
/// is `FeedbackLoopTests`.
@Suite struct FeedbackTests {
  typealias T = TestSignals

  /// Runs `x` (mono, on both channels) through a `feedback` chain in blocks of 64 frames; returns
  /// the output and, per block, the number of active notches.
  static func run(_ x: [Float], _ values: [String: Float] = [:]) -> (output: [Float], notches: [Int]) {
    let chain = T.chain("feedback", values)
    let active = T.index(chain, "feedback.active_notches")
    var left = x
    var right = x
    var notches: [Int] = []
    notches.reserveCapacity(x.count / 64 + 1)
    var offset = 0
    while offset < left.count {
      let n = min(64, left.count - offset)
      chain.process(left: &left, right: &right, blockFrames: n, from: offset, frames: n)
      notches.append(Int(chain.targets.value(active)))
      offset += n
    }
    return (left, notches)
  }

  /// The level (dB) of the `hz` component of `x` over `range`.
  static func toneDecibels(_ x: [Float], hz: Double, _ range: Range<Int>) -> Double {
    let (re, im) = T.dft(Array(x[range]), atHz: hz)
    return 10 * log10((re * re + im * im) / Double(range.count * range.count) * 4 + 1e-30)
  }

  static func rmsDecibels(_ x: ArraySlice<Float>) -> Double {
    var sum = 0.0
    for v in x { sum += Double(v) * Double(v) }
    return 10 * log10(sum / Double(max(x.count, 1)) + 1e-30)
  }

  /// A howl: uniform noise (peak −40 dBFS), then from `onset` a `hz` tone from −50 dBFS growing
  /// by `rate` dB/s up to −6 dBFS (and held there until `stop`).
  static func howl(
    frames: Int, onset: Int, stop: Int? = nil, hz: Double = 1234.5, rate: Double = 60
  ) -> [Float] {
    let noise = T.noise(frames: frames, amplitude: 0.01)
    return (0..<frames).map { n in
      guard n >= onset, n < (stop ?? frames) else { return noise[n] }
      let t = Double(n - onset) / T.sampleRate
      let amplitude = min(0.003 * pow(10, rate * t / 20), 0.5)
      return noise[n] + Float(amplitude * sin(2 * Double.pi * hz * t))
    }
  }

  @Test(
    "A howl is found within 200 ms of its onset and cut by at least 20 dB",
    arguments: [(hz: 1234.5, rate: 60.0), (hz: 345.6, rate: 120), (hz: 2876.5, rate: 80)])
  func howlIsCut(_ howl: (hz: Double, rate: Double)) {
    let onset = 24_000
    let frames = 96_000
    let x = Self.howl(frames: frames, onset: onset, hz: howl.hz, rate: howl.rate)
    let (y, notches) = Self.run(x)
    #expect(notches[..<(onset / 64)].allSatisfy { $0 == 0 }, "no notch before the howl")
    let first = notches.firstIndex { $0 > 0 } ?? notches.count
    let detection = Double(first * 64 - onset) / T.sampleRate * 1000
    // Attenuation of the tone once it is loud, 0.5 s after the onset to the end.
    let window = (onset + 24_000)..<frames
    let cut = Self.toneDecibels(x, hz: howl.hz, window) - Self.toneDecibels(y, hz: howl.hz, window)
    T.measured(
      "feedback: howl at \(howl.hz) Hz, +\(Int(howl.rate)) dB/s from -50 dBFS: notched after "
        + "\(Int(detection)) ms, attenuated by \(String(format: "%.1f", cut)) dB")
    #expect(detection < 200)
    #expect(cut >= 20)
    #expect(notches.last! == 1, "one notch for one howl")
  }

  @Test(
    "A sung note with harmonics is not notched",
    arguments: [(vibrato: 0.015, label: "with vibrato"), (vibrato: 0, label: "held exactly")])
  func sungNoteIsLeftAlone(_ note: (vibrato: Double, label: String)) {
    let frames = 4 * 48_000
    var phase = 0.0
    let noise = T.noise(frames: frames, amplitude: 0.003)
    let x: [Float] = (0..<frames).map { n in
      let t = Double(n) / T.sampleRate
      phase += 2 * Double.pi * 220 * (1 + note.vibrato * sin(2 * Double.pi * 5.5 * t)) / T.sampleRate
      var s = 0.0
      for k in 1...12 { s += sin(Double(k) * phase) / Double(k) }
      return Float(0.2 * s) + noise[n]
    }
    let (y, notches) = Self.run(x)
    let reduction = Self.rmsDecibels(x[48_000...]) - Self.rmsDecibels(y[48_000...])
    T.measured(
      "feedback: 220 Hz sung note \(note.label): most notches \(notches.max()!), level reduced by "
        + String(format: "%.3f", reduction) + " dB")
    #expect(notches.max()! == 0)
    #expect(reduction < 0.1)
  }

  @Test("Notches are released after the howl stops; the outputs report them")
  func notchesRelease() {
    let onset = 4_800
    let stop = 48_000
    let frames = 48_000 * 4
    let x = Self.howl(frames: frames, onset: onset, stop: stop)
    let chain = T.chain("feedback", ["release_s": 1])
    let strongest = chain.parameter("feedback.strongest_hz")!
    #expect(strongest.spec.kind == .output)
    #expect(chain.set("feedback.active_notches", 3) == nil, "outputs are read-only")
    let (_, notches) = Self.run(x, ["release_s": 1])
    #expect(notches[stop / 64] == 1)
    // Held 1 s after the last detection, then faded over 1 s.
    let released = (notches.lastIndex { $0 > 0 } ?? 0) * 64
    T.measured(
      "feedback: notch released \(String(format: "%.2f", Double(released - stop) / T.sampleRate)) s after the howl stopped (release_s 1)"
    )
    #expect(released < stop + 3 * 48_000)
    #expect(notches.last! == 0)
  }

  @Test("The strongest notch's frequency is reported within 2 Hz of the howl")
  func strongestFrequency() {
    let x = Self.howl(frames: 48_000, onset: 4_800)
    let chain = T.chain("feedback")
    _ = T.processMono(chain, x, blockSize: 64)
    let hz = chain.targets.value(chain.parameter("feedback.strongest_hz")!.index)
    T.measured("feedback: strongest_hz \(hz) for a 1234.5 Hz howl")
    #expect(abs(hz - 1234.5) < 2)
  }
}

extension FeedbackTests {
  /// A howl building slowly (a loop gain just above unity) under continuous speech: the speech
  /// masks it for some hops and stands beside it for others, so its track is broken up and
  /// rarely more than 24 dB out; it must still be found while 10 dB below the talker's RMS.
  @Test(
    "A howl building at 12 dB/s under speech (RMS −20 dBFS) is notched before it reaches −30 dBFS",
    arguments: [1234.5, 3390.0])
  func slowHowlUnderSpeech(_ hz: Double) throws {
    guard
      let speech = try FeedbackLoopTests.speech(
        "Testing the feedback suppressor: one, two, three, four, five. Six, seven, eight, nine, ten.")
    else { return }
    let onset = 24_000
    let rate = 12.0
    let x: [Float] = speech.indices.map { n in
      guard n >= onset else { return speech[n] }
      let t = Double(n - onset) / T.sampleRate
      return speech[n] + Float(0.0018 * pow(10, rate * t / 20) * sin(2 * Double.pi * hz * t))
    }
    let (_, notches) = Self.run(x)
    let first = try #require(notches.firstIndex { $0 > 0 }, "the howl was never notched")
    let seconds = Double(first * 64 - onset) / T.sampleRate
    let level = 20 * log10(0.0018) + rate * seconds
    T.measured(
      "feedback: howl at \(hz) Hz, +12 dB/s from -55 dBFS under speech: notched after "
        + String(format: "%.2f s, at %.1f dBFS", seconds, level))
    #expect(level <= -30)
  }
}
