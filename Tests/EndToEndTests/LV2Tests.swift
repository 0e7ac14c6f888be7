import Foundation
import TestSupport
import Testing

/// LV2 plugins hosted by the release binary on a real jackd (dummy backend): real plugins from
/// the Debian packages the setup installs (lv2-examples, x42-plugins, mda-lv2).
extension EndToEnd {
  @Suite("LV2 plugins live", .serialized)
  struct LV2Tests {
    /// The period for tests that compare samples (`JackServer.takePeriod`).
    static let period = JackServer.takePeriod

    static func measured(_ line: String) { print("[measured] \(line)") }

    /// eg-amp's own arithmetic (`coef = gain > -90 ? powf(10, gain * 0.05) : 0`, in Float).
    static func ampCoefficient(_ gain: Float) -> Float { gain > -90 ? powf(10, gain * 0.05) : 0 }

    /// Waits out the 1 s start ramp, then records `frames` frames of the generator (`direct`)
    /// and of LiveMic's two outputs, all of the same frames. A window the server spoilt (a gap
    /// in the frame times, an xrun, the generator's own signal off, a cycle LiveMic missed) is
    /// recorded again (`retaking`): what a late client's buffers hold then is not LiveMic's.
    static func recordAfterRamp(_ rig: LiveRig, frames: Int = 24000) throws -> (
      times: [UInt32], direct: [Float], left: [Float], right: [Float]
    ) {
      rig.waitForAudio()
      let capture = rig.client("lmcap")
      let witness = LiveAudioTests.witness(rig)
      let (start, end) = try retaking("a window of \(frames) frames after the ramp") {
        let mark = witness.mark()
        try capture.record(frames: frames)
        let end = capture.frameCount
        return Take((mark.frame, end), spoilt: witness.evidence(since: mark, to: end))
      }
      let direct = capture.recording(channel: 0, from: start, to: end)
      return (
        direct.times, direct.samples, capture.recording(channel: 1, from: start, to: end).samples,
        capture.recording(channel: 2, from: start, to: end).samples
      )
    }

    /// A preset file with `chain` (JSON text of the entries) in a fresh folder.
    static func presetFile(_ chain: String) throws -> URL {
      let file = Paths.temporaryFolder("lv2preset").appendingPathComponent("lv2test.json")
      let json = #"{"name": "lv2test", "volume": 1, "chain": ["# + chain + "]}"
      try json.write(to: file, atomically: true, encoding: .utf8)
      return file
    }

    /// The share of `output` samples equal (within `tolerance`) to the frame code `lag` frames
    /// earlier. By frame time, so a capture cycle lost to an xrun does not shift the comparison.
    static func share(
      _ output: [Float], times: [UInt32], lag: Int, tolerance: Float, limit: Int = .max
    ) -> Double {
      let n = min(output.count, times.count, limit)
      let hits = (0..<n).count { i in
        abs(output[i] - TestSignal.frameCode.value(atFrame: times[i] &- UInt32(lag), sampleRate: 48000))
          <= tolerance
      }
      return Double(hits) / Double(max(n, 1))
    }

    /// How late `output` is behind the frame code (0…`maxLag` frames): the lag most samples
    /// agree with, and the share that does.
    static func delay(of output: [Float], times: [UInt32], maxLag: Int, tolerance: Float) -> (Int, Double)? {
      let candidates = (0...maxLag).filter {
        share(output, times: times, lag: $0, tolerance: tolerance, limit: 256) > 0.5
      }
      return candidates.map { ($0, share(output, times: times, lag: $0, tolerance: tolerance)) }.max {
        $0.1 < $1.1
      }
    }

    /// The chain latency LiveMic logged (`… + N (chain) + …`).
    static func loggedChainLatency(_ log: String) -> Int? {
      guard let match = log.firstMatch(of: /\+ (\d+) \(chain\) \+/) else { return nil }
      return Int(match.1)
    }

    @Test(
      "eg-amp: the output is the input × 10^(gain/20), bit for bit, in the same cycle",
      arguments: [-6, 0, 3.5, -20] as [Float])
    func egAmpIsBitExact(gain: Float) throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--plugin", Installed.amp, "-c", "eg-amp.gain=\(gain)"], signal: .frameCode,
        period: Self.period)
      defer { rig.stop() }
      let coef = Self.ampCoefficient(gain)
      // `recordAfterRamp` retakes a window the server spoilt (the generator's own signal off its
      // frame code among the evidence), so what is left is LiveMic's.
      let (times, direct, left, right) = try Self.recordAfterRamp(rig)
      var mismatches = 0
      var generatorMismatches = 0
      for i in 0..<direct.count {
        let input = TestSignal.frameCode.value(atFrame: times[i], sampleRate: 48000)
        if direct[i].bitPattern != input.bitPattern { generatorMismatches += 1 }
        let expected = input * coef
        if left[i].bitPattern != expected.bitPattern || right[i].bitPattern != expected.bitPattern {
          mismatches += 1
        }
      }
      Self.measured(
        "eg-amp gain \(gain) dB: \(mismatches) of \(direct.count) samples differ from input × \(coef)")
      #expect(direct.count >= 24000)
      #expect(generatorMismatches == 0, "the generator's own signal is not what the test expects")
      #expect(
        mismatches == 0, "\(mismatches) of \(direct.count) samples are not input × \(coef) of the same frame")
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
    }

    @Test("eg-amp +12 dB → MDA Delay → reverb → x42 dpl at -6 dBFS: the output stays under the threshold")
    func limiterHoldsTheChain() throws {
      let threshold: Float = -6
      let preset = try Self.presetFile(
        """
        {"lv2": "\(Installed.amp)", "id": "amp", "params": {"gain": 12}},
        {"lv2": "\(Installed.delay)", "id": "delay"},
        {"unit": "reverb", "params": {"mix": 40}},
        {"lv2": "\(Installed.dpl)", "id": "dpl", "params": {"threshold": \(threshold)}}
        """)
      defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
      let rig = try LiveAudioTests.rig(
        ["-p", preset.path], signal: .sine(frequencyHz: 1000, amplitude: 0.9), period: Self.period)
      defer { rig.stop() }
      let (_, direct, left, right) = try Self.recordAfterRamp(rig, frames: 48000)
      let ceiling = powf(10, threshold / 20)
      let inputPeak = direct.map(abs).max() ?? 0
      let peak = max(left.map(abs).max() ?? 0, right.map(abs).max() ?? 0)
      Self.measured(
        "limited chain: input peak \(inputPeak) (× 3.98 by eg-amp), output peak \(peak), "
          + "ceiling \(ceiling), rms \(rms(left[...]))")
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      #expect(left.allSatisfy(\.isFinite) && right.allSatisfy(\.isFinite))
      // dpl (Fons Adriaensen's Peaklim) looks ahead 1.3 ms (64 frames) and moves its gain to
      // what a peak needs through one-pole smoothers with a time constant of a tenth of that,
      // so by design a peak can exceed the threshold by a residue of the order of e^-10 of the
      // gain change. Measured: up to 0.5011920 against 10^(-6/20) = 0.5011872 (+9.6e-6
      // relative, +0.00008 dB); allowed: 1e-4 relative (+0.0009 dB).
      #expect(
        peak <= ceiling * (1 + 1e-4), "output peak \(peak) above the \(threshold) dBFS threshold \(ceiling)")
      #expect(peak > ceiling * 0.8, "output peak \(peak): the limiter should be working near its threshold")
      #expect(rms(left[...]) > 0.2 && rms(right[...]) > 0.2)
    }

    @Test("worker:schedule: zeroconvolv loads its preset's IR through the worker and passes the signal")
    func workerLoadsImpulseResponse() throws {
      let preset = try Self.presetFile(
        #"{"lv2": "\#(Installed.zeroconvolv)", "id": "zc", "preset": "No-OP Mono"}"#)
      defer { try? FileManager.default.removeItem(at: preset.deletingLastPathComponent()) }
      let rig = try LiveAudioTests.rig(["-p", preset.path], signal: .frameCode, period: Self.period)
      defer { rig.stop() }
      // "No-OP Mono" is a delta impulse: once the worker has swapped the convolver in, the
      // output is the input, delayed by the convolver's buffering.
      // The worker swaps the IR in asynchronously; the supervisor logs the latency it then
      // reports. Measured after that, on a window the server did not spoil.
      _ = rig.livemic.waitForLog("chain latency is now", seconds: 5)
      let (times, _, left, right) = try Self.recordAfterRamp(rig, frames: 9600)
      let delay = Self.delay(of: left, times: times, maxLag: 4096, tolerance: 1e-5)
      Self.measured(
        "zeroconvolv No-OP Mono: output = input delayed by \(String(describing: delay)) (frames, share)")
      let (lag, share) = try #require(delay, "the output is not the input at any lag up to 4096 frames")
      #expect(share > 0.99)
      // The plugin reports its latency only once its worker has swapped the IR in; the
      // supervisor notices within a second and tells JACK.
      func jack() -> UInt32 {
        rig.client("lmcap").latency(of: "lmclient:out_1", capture: true).max
          - rig.client("lmcap").latency(of: "lmclient:in_1", capture: true).max
      }
      _ = waitUntil(seconds: 3) { jack() == UInt32(lag) }
      Self.measured("zeroconvolv: reported to JACK \(jack()), measured \(lag)")
      #expect(jack() == UInt32(lag), "JACK is told \(jack()) frames; the signal is \(lag) frames late")
      // Logged as a change, or (the worker swapped the IR in before LiveMic's first report: seen
      // on PipeWire under load) already in the start's latency line.
      #expect(
        rig.livemic.log.contains("chain latency is now \(lag) frames")
          || rig.livemic.log.contains("+ \(lag) (chain)"),
        "\(rig.livemic.log)")
      #expect(left == right, "both instances of the mono plugin get the same (mono) input")
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      #expect(
        rig.livemic.waitForLog("plugin 'zc': "),
        "the plugin's log lines reach LiveMic's log: \(rig.livemic.log)")
    }

    @Test("options + worker: convoLV2 without an IR instantiates, reads the block length and runs silent")
    func convolverWithoutImpulseResponseRuns() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--plugin", Installed.convo], signal: .sine(frequencyHz: 440, amplitude: 0.5),
        period: Self.period)
      defer { rig.stop() }
      let cyclesBefore = rig.client("lmcap").cycles.load(ordering: .relaxed)
      let (_, direct, left, right) = try Self.recordAfterRamp(rig, frames: 9600)
      let cycles = rig.client("lmcap").cycles.load(ordering: .relaxed) - cyclesBefore
      Self.measured("convoLV2 without IR: input rms \(rms(direct[...])), output rms \(rms(left[...]))")
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      // convoLV2 logs the nominal block length it read from the options: the server's period.
      #expect(
        rig.livemic.waitForLog("plugin 'convolv2_mono': Buffer size: \(Self.period)"), "\(rig.livemic.log)")
      #expect(rms(direct[...]) > 0.3)
      #expect(left.allSatisfy { $0 == 0 } && right.allSatisfy { $0 == 0 }, "no IR: convoLV2 outputs silence")
      #expect(cycles > 50, "the server kept running cycles with LiveMic in them")
    }

    @Test("options: x42 fil4 (stereo EQ, flat settings) instantiates and passes the signal")
    func equalizerPassesSignal() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--plugin", Installed.fil4], signal: .sine(frequencyHz: 1000, amplitude: 0.3),
        period: Self.period)
      defer { rig.stop() }
      let (_, direct, left, right) = try Self.recordAfterRamp(rig, frames: 24000)
      let gainL = 20 * log10(rms(left[...]) / rms(direct[...]))
      let gainR = 20 * log10(rms(right[...]) / rms(direct[...]))
      Self.measured("fil4 at default settings, 1 kHz: \(gainL) dB left, \(gainR) dB right")
      #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
      #expect(left.allSatisfy(\.isFinite) && right.allSatisfy(\.isFinite))
      #expect(abs(gainL) < 0.5 && abs(gainR) < 0.5, "fil4 changed a 1 kHz sine by \(gainL) / \(gainR) dB")
    }

    @Test("latency: x42 dpl's reported latency is added to what LiveMic reports through JACK")
    func pluginLatencyIsReported() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "--plugin", Installed.dpl, "-c", "dpl_stereo.threshold=0"], signal: .frameCode,
        period: Self.period)  // not 64, so the plugin's latency cannot be mistaken for a period
      defer { rig.stop() }
      let log = rig.livemic.log
      let chain = try #require(Self.loggedChainLatency(log), "no latency line in \(log)")
      // The server propagates latency asynchronously (PipeWire after LiveMic's supervisor has
      // set the ranges its latency callback asked for): allow it a moment.
      _ = waitUntil(seconds: 3) {
        rig.client("lmcap").latency(of: "lmclient:out_1", capture: true).max
          == rig.client("lmcap").latency(of: "lmclient:in_1", capture: true).max + UInt32(chain)
          && rig.client("lmcap").latency(of: "lmclient:in_1", capture: false).max
            == rig.client("lmcap").latency(of: "lmclient:out_1", capture: false).max + UInt32(chain)
      }
      let input = rig.client("lmcap").latency(of: "lmclient:in_1", capture: true)
      let output = rig.client("lmcap").latency(of: "lmclient:out_1", capture: true)
      let inputPlayback = rig.client("lmcap").latency(of: "lmclient:in_1", capture: false)
      let outputPlayback = rig.client("lmcap").latency(of: "lmclient:out_1", capture: false)
      // The signal itself: dpl below its threshold passes frame-code unchanged, late by its
      // look-ahead.
      let (times, _, left, _) = try Self.recordAfterRamp(rig, frames: 9600)
      let atLatency = Self.share(left, times: times, lag: chain, tolerance: 0)
      let nextTo = max(
        Self.share(left, times: times, lag: chain - 1, tolerance: 0),
        Self.share(left, times: times, lag: chain + 1, tolerance: 0))
      Self.measured(
        "dpl: chain latency \(chain) frames (log); capture in_1 \(input), out_1 \(output); "
          + "playback in_1 \(inputPlayback), out_1 \(outputPlayback); "
          + "share of samples equal to the input \(chain) frames earlier: \(atLatency) (±1 frame: \(nextTo))")
      #expect(chain > 0, "dpl reports its look-ahead: \(log)")
      #expect(log.contains("+ \(chain) (chain) +"))
      #expect(output.min == input.min + UInt32(chain) && output.max == input.max + UInt32(chain))
      #expect(
        inputPlayback.min == outputPlayback.min + UInt32(chain)
          && inputPlayback.max == outputPlayback.max + UInt32(chain))
      #expect(atLatency > 0.99 && nextTo < 0.01, "the signal is delayed by exactly the reported latency")
    }

    @Test("an unknown URI and an unmet required feature are reported in one line; the rest runs")
    func unusablePluginsAreLeftOut() throws {
      let folder = Paths.temporaryFolder("lv2bundle")
      defer { try? FileManager.default.removeItem(at: folder) }
      let uri = "http://example.org/livemic-test/needs-unsupported"
      let feature = "http://example.org/ns/unsupported-feature"
      try Self.writeBundle(in: folder, uri: uri, requiredFeature: feature)
      let unknown = "http://example.org/livemic-test/no-such-plugin"
      let rig = try LiveAudioTests.rig(
        [
          "-p", "flat", "--plugin", unknown, "--plugin", uri, "--plugin", Installed.amp, "-c",
          "eg-amp.gain=-6",
        ],
        signal: .frameCode, period: Self.period, environment: ["LV2_PATH": folder.path + ":/usr/lib/lv2"])
      defer { rig.stop() }
      let log = rig.livemic.log
      #expect(
        log.contains(
          "livemic: error: plugin stage 'no-such-plugin' is left out: no LV2 plugin with URI '\(unknown)' "
            + "is installed ('livemic plugins' lists them)\n"), "\(log)")
      #expect(
        log.contains(
          "livemic: error: plugin stage 'needs-unsupported' is left out: LiveMic cannot host '\(uri)': "
            + "it requires the feature \(feature), which LiveMic does not provide\n"), "\(log)")
      let (_, direct, left, right) = try Self.recordAfterRamp(rig, frames: 9600)
      let coef = Self.ampCoefficient(-6)
      let wrong = (0..<direct.count).filter {
        left[$0] != direct[$0] * coef || right[$0] != direct[$0] * coef
      }
      #expect(wrong.isEmpty, "\(wrong.count) samples: the rest of the chain (eg-amp -6 dB) should run")
    }

    /// A test plugin's bundle (`Tests/Support/SOURCE`: manifest.ttl, BINARY.ttl, BINARY.c),
    /// built into `folder` with the system's C compiler.
    static func buildBundle(_ source: String, binary: String, in folder: URL) throws -> URL {
      let sources = Paths.root.appendingPathComponent("Tests/Support/\(source)")
      let bundle = folder.appendingPathComponent("\(binary).lv2")
      try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
      for file in ["manifest.ttl", "\(binary).ttl"] {
        try FileManager.default.copyItem(
          at: sources.appendingPathComponent(file), to: bundle.appendingPathComponent(file))
      }
      let built = try runTool(
        "cc",
        [
          "-shared", "-fPIC", "-o", bundle.appendingPathComponent("\(binary).so").path,
          sources.appendingPathComponent("\(binary).c").path,
        ])
      try #require(built != nil, "cc failed to build the test plugin \(source)")
      return bundle
    }

    @Test(
      "plugins broken in place (lv2:inPlaceBroken) get buffers of their own: a mono one run once, a stereo one, a mono one run twice; exact output, guard zero"
    )
    func inPlaceBrokenPluginsGetTheirOwnBuffers() throws {
      // Tests/Support/lv2-separate: each clears its outputs before it adds its inputs in, so
      // given one buffer for an input and an output it is silent. The mono one halves its
      // input; the stereo one halves the left and quarters the right (exact in floats).
      let folder = Paths.temporaryFolder("lv2separate")
      defer { try? FileManager.default.removeItem(at: folder) }
      _ = try Self.buildBundle("lv2-separate", binary: "separate", in: folder)
      let (mono, stereo) = ("urn:livemic:test:separate-mono", "urn:livemic:test:separate-stereo")
      let environment = ["LV2_PATH": folder.path + ":/usr/lib/lv2"]
      // On a mono input the mono plugin alone runs once (its output copied to the right); after
      // the stereo plugin the channels differ, so it runs as two instances.
      let cases: [(plugins: [String], left: Float, right: Float)] = [
        ([mono], 0.5, 0.5), ([stereo, mono], 0.25, 0.125),
      ]
      for chain in cases {
        let rig = try LiveAudioTests.rig(
          ["-p", "flat"] + chain.plugins.flatMap { ["--plugin", $0] }, signal: .frameCode,
          period: Self.period, guarded: true, environment: environment)
        defer { rig.stop() }
        #expect(!rig.livemic.log.contains("left out"), "\(rig.livemic.log)")
        let (_, direct, left, right) = try Self.recordAfterRamp(rig, frames: 9600)
        let wrong = (0..<direct.count).filter {
          left[$0] != direct[$0] * chain.left || right[$0] != direct[$0] * chain.right
        }
        #expect(
          wrong.isEmpty && rms(direct[...]) > 0.01,
          "\(chain.plugins): \(wrong.count) of \(direct.count) samples wrong (silent when it runs in place)")
        rig.stop()
        rig.expectNothingCounted()
      }
    }

    /// A bundle holding one 1-in/1-out plugin that requires `requiredFeature` (no binary:
    /// LiveMic refuses it before instantiating).
    static func writeBundle(in folder: URL, uri: String, requiredFeature: String) throws {
      let bundle = folder.appendingPathComponent("needs-unsupported.lv2")
      try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
      let prefixes = """
        @prefix doap: <http://usefulinc.com/ns/doap#> .
        @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
        @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .

        """
      let manifest =
        prefixes + "<\(uri)> a lv2:Plugin ; lv2:binary <plugin.so> ; rdfs:seeAlso <plugin.ttl> .\n"
      let plugin =
        prefixes + """
          <\(uri)> a lv2:Plugin ;
            doap:name "LiveMic test plugin with an unmet feature" ;
            lv2:requiredFeature <\(requiredFeature)> ;
            lv2:port [ a lv2:AudioPort, lv2:InputPort ; lv2:index 0 ; lv2:symbol "in" ; lv2:name "In" ] ,
              [ a lv2:AudioPort, lv2:OutputPort ; lv2:index 1 ; lv2:symbol "out" ; lv2:name "Out" ] .

          """
      try manifest.write(to: bundle.appendingPathComponent("manifest.ttl"), atomically: true, encoding: .utf8)
      try plugin.write(to: bundle.appendingPathComponent("plugin.ttl"), atomically: true, encoding: .utf8)
    }

    static let guardedPlugins = [
      "--plugin", Installed.amp, "--plugin", Installed.dpl, "--plugin", Installed.delay,
    ]

    @Test("real-time guard: eg-amp + x42 dpl + MDA Delay, 2,000+ cycles and a buffer-size change: zero")
    func pluginsAreRealtimeSafe() throws {
      let run = GuardedRun(
        rig: try LiveAudioTests.rig(
          ["-p", "voice"] + Self.guardedPlugins, signal: .sine(frequencyHz: 220, amplitude: 0.3),
          period: 256, guarded: true))
      defer { run.rig.stop() }
      #expect(!run.rig.livemic.log.contains("left out"), "\(run.rig.livemic.log)")
      let out = try run.acrossBufferSizeChange(recording: 9600, cyclesAfter: 500)
      // Not silent (voice's feedback suppressor and denoiser take a steady sine far down).
      #expect(rms(out[...]) > 1e-5, "no audio after the buffer-size change")
      let result = run.finish()
      Self.measured("rtguard with eg-amp + dpl + MDA Delay: \(result.sorted { $0.key < $1.key })")
    }

    @Test(
      "the independent rtcheck agrees with eg-amp + x42 dpl + MDA Delay",
      .enabled(if: FileManager.default.isExecutableFile(atPath: Paths.rtcheck.path)))
    func rtcheckAgreesWithPlugins() throws {
      // Not on LiveRig: rtcheck runs LiveMic under itself (RtcheckRun), where LiveRig runs it directly.
      let folder = Paths.temporaryFolder("lv2rtcheck")
      defer { try? FileManager.default.removeItem(at: folder) }
      let output = folder.appendingPathComponent("rt.txt")
      let server = try JackServer()
      let probe = try TestClient(name: "lmprobe", server: server.name, signal: nil, captureChannels: 0)
      let run = try RtcheckRun(
        ["-s", server.name, "-n", "lmrtcheck", "-p", "voice"] + Self.guardedPlugins, output: output)
      func cycles() -> Int { run.cycles }
      #expect(waitUntil(seconds: 30) { cycles() >= 2000 }, "only \(cycles()) cycles")
      let result = RealtimeGuard.counters(output)
      Self.measured("rtcheck with eg-amp + dpl + MDA Delay: \(result.sorted { $0.key < $1.key })")
      RealtimeGuard.expectNothingCounted(output, "rtcheck")
      run.stop()
      probe.close()
      server.stop()
    }
  }
}
