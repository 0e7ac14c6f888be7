import Foundation
import Testing

/// The release binary on a real jackd (dummy backend): real signals in, samples out.
extension EndToEnd {
  @Suite("Live audio on a real JACK server", .serialized)
  struct LiveAudioTests {
    /// A `LiveRig` with a generator (`lmgen`) on LiveMic's input and a three-input capture
    /// (`lmcap`; in_1: the generator directly, in_2/in_3: LiveMic's outputs), LiveMic run with
    /// `arguments`; at `JackServer.takePeriod` unless the test chooses another period. Ready once
    /// LiveMic answers `status` (requests are answered only once the latency is logged and the
    /// connections made).
    static func rig(
      _ arguments: [String], signal: TestSignal, period: Int = JackServer.takePeriod, guarded: Bool = false,
      environment: [String: String] = [:]
    ) throws -> LiveRig {
      // 60 s of capture: a test's takes must not run out of it when a loaded machine slows the
      // test down (the OSC test needed more than 12 s once under --load).
      let clients: [LiveRig.Client] = [
        .init(name: "lmgen", signal: signal), .init(name: "lmcap", captureChannels: 3, seconds: 60),
      ]
      // The direct path is connected before LiveMic starts, so a recording from the start has the
      // input beside LiveMic's first output.
      var directPath: Error?
      let rig = try LiveRig(period: period, clients: clients, guarded: guarded, environment: environment) {
        c in
        let (generator, capture) = (c[0], c[1])
        do {
          try capture.connect(generator.portName("out"), capture.portName("in_1"))
        } catch {
          directPath = error
        }
        return [
          "--connect-in", generator.portName("out"),
          "--connect-out", "\(capture.portName("in_2")),\(capture.portName("in_3"))",
        ] + arguments
      }
      if let directPath { throw directPath }
      return rig
    }

    /// The rig's witness: the generator on channel 0, this rig's LiveMic's missed cycles.
    static func witness(_ rig: LiveRig) -> Witness {
      let generator = rig.client("lmgen")
      return rig.witness(rig.client("lmcap"), generators: generator.signal.map { [(0, $0)] } ?? [])
    }

    @Test("flat: a known signal comes out bit-identical and in the same cycle")
    func flatIsBitIdenticalSameCycle() throws {
      let rig = try Self.rig(["-p", "flat"], signal: .frameCode)
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      // Wait out the 1 s start ramp, then record half a second.
      rig.waitForAudio()
      // A take the server spoilt (a gap, an xrun, the generator's own signal off, a cycle
      // LiveMic missed) is taken again; LiveMic's output is judged on clean takes only.
      let witness = Self.witness(rig)
      let (direct, left, right) = try retaking("a window of 24000 frames") {
        let mark = witness.mark()
        try capture.record(frames: 24000)
        let end = capture.frameCount
        let window = (0...2).map { capture.recording(channel: $0, from: mark.frame, to: end) }
        return Take((window[0], window[1], window[2]), spoilt: witness.evidence(since: mark, to: end))
      }
      var mismatches = 0
      var generatorMismatches = 0
      for i in 0..<direct.samples.count {
        let expected = TestSignal.frameCode.value(atFrame: direct.times[i], sampleRate: 48000)
        if direct.samples[i].bitPattern != expected.bitPattern { generatorMismatches += 1 }
        if left.samples[i].bitPattern != expected.bitPattern
          || right.samples[i].bitPattern != expected.bitPattern
        {
          mismatches += 1
        }
      }
      #expect(direct.samples.count >= 24000)
      #expect(generatorMismatches == 0, "the generator's own signal is not what the test expects")
      #expect(
        mismatches == 0,
        "\(mismatches) of \(direct.samples.count) samples differ from the input of the same frame")
      #expect(rms(left.samples[...]) > 0.2)
    }

    @Test("the output starts quiet and ramps up over about a second")
    func startRamp() throws {
      let rig = try Self.rig(["-p", "flat"], signal: .sine(frequencyHz: 500, amplitude: 0.5))
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      try capture.record(frames: 48000 * 3 / 2)
      let end = capture.frameCount
      let direct = capture.recording(channel: 0, to: end)
      let out = capture.recording(channel: 1, to: end)
      // The first cycle LiveMic ran in is the first with any output.
      guard let first = out.samples.firstIndex(where: { $0 != 0 }) else {
        Issue.record("no output at all")
        return
      }
      let early =
        rms(out.samples[first..<min(first + 2400, out.samples.count)])
        / max(rms(direct.samples[first..<min(first + 2400, direct.samples.count)]), 1e-9)
      let lateRange = (first + 52800)..<min(first + 60000, out.samples.count)
      // The window after the ramp is judged as recorded unless the server spoilt it (a gap in
      // the frame times, the generator's own signal off; LiveMic's status is not asked here, so
      // its start is not delayed); then later windows are taken (the ramp is over by then).
      let witness = Witness(capture: capture, generators: [(0, .sine(frequencyHz: 500, amplitude: 0.5))])
      var firstTake = true
      let late = try retaking("the level after the ramp") {
        if firstTake {
          firstTake = false
          let spoilt = witness.evidence(
            since: .init(
              frame: lateRange.lowerBound, xruns: capture.xruns.load(ordering: .relaxed), missed: nil),
            to: lateRange.upperBound)
          return Take(rms(out.samples[lateRange]) / rms(direct.samples[lateRange]), spoilt: spoilt)
        }
        let take = try witness.take(frames: 7200, channels: [1, 0])
        return Take(rms(take.value[0][...]) / rms(take.value[1][...]), spoilt: take.spoilt)
      }
      #expect(early < 0.01, "first 50 ms at \(early) of the input level")
      #expect(abs(late - 1) < 1e-6, "after 1.1 s at \(late) of the input level")
    }

    @Test(
      "a gain change changes the measured level by the expected dB",
      arguments: [
        (["-c", "input.bypass=0", "-c", "input.gain_db=-6"], -6.0),
        (["-c", "input.bypass=0", "-c", "input.gain_db=9.5"], 9.5),
        (["-c", "output.volume=0.5"], 20 * log10(0.5)),
      ])
    func gainChangesLevel(arguments: [String], expectedDecibels: Double) throws {
      let rig = try Self.rig(["-p", "flat"] + arguments, signal: .sine(frequencyHz: 1000, amplitude: 0.2))
      defer { rig.stop() }
      rig.waitForAudio()
      let witness = Self.witness(rig)
      let measured = try retaking("the level change") {
        let take = try witness.take(frames: 9600, channels: [1, 0])
        return Take(20 * log10(rms(take.value[0][...]) / rms(take.value[1][...])), spoilt: take.spoilt)
      }
      #expect(
        abs(measured - expectedDecibels) < 0.01, "measured \(measured) dB, expected \(expectedDecibels) dB")
    }

    @Test("latency: LiveMic adds only what its units declare and reports it through JACK")
    func latencyReported() throws {
      // voice's denoise declares its speexdsp frames (480 at 48 kHz); podcast adds nothing.
      let rig = try Self.rig(["-p", "voice"], signal: .frameCode)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      #expect(livemic.log.contains("+ 480 (chain) +"), "\(livemic.log)")
      // PipeWire hands latency updates to other clients asynchronously: allow it a moment.
      var (input, output) = ((min: UInt32(0), max: UInt32(0)), (min: UInt32(0), max: UInt32(0)))
      let reported = waitUntil(seconds: 5) {
        input = capture.latency(of: "lmclient:in_1", capture: true)
        output = capture.latency(of: "lmclient:out_1", capture: true)
        return input.min + 480 == output.min && input.max + 480 == output.max
      }
      #expect(reported, "in \(input) out \(output)")
    }
  }
}
