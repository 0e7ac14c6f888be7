import CSndfile
import DSP
import Foundation
import TestSupport
import Testing

@testable import LV2Host
@testable import LiveMicControl
@testable import LiveMicPresets

/// Installed plugins the tests use (their URIs: TestSupport's `Installed`), built with the
/// tests' host settings.
extension Installed {
  static let settings = HostSettings(
    sampleRate: 48000, maxBlockFrames: 256, nominalBlockFrames: 256, fixedBlocks: false)

  static func plugin(_ id: String, _ uri: String, values: [String: Float] = [:], preset: String? = nil)
    -> ChainEntry
  {
    .plugin(PluginDescription(id: id, uri: uri, values: values, preset: preset))
  }

  /// Builds `entries` strictly: a plugin that cannot be made is an error.
  static func build(_ entries: [ChainEntry]) throws -> BuiltChain {
    try ChainBuilder.build(entries, settings: settings, strict: true)
  }

  /// The plugin error building `entry` strictly gives, if any.
  static func error(building entry: ChainEntry) -> PluginError? {
    do {
      _ = try build([entry])
      return nil
    } catch BuildError.plugin(_, let error) {
      return error
    } catch {
      return nil
    }
  }

  static func value(_ chain: VoiceChain, _ key: String) -> Float? {
    chain.parameter(key).map { chain.targets.value($0.index) }
  }

  /// Runs `left`/`right` through `chain` in blocks of 256 frames, in place.
  static func process(_ chain: VoiceChain, _ left: inout [Float], _ right: inout [Float]) {
    chain.process(left: &left, right: &right, blockFrames: 256)
  }

  /// A deterministic test signal in [-0.5, 0.5).
  static func noise(_ count: Int, seed: UInt32) -> [Float] {
    var x = seed
    return (0..<count).map { _ in
      x = x &* 1_664_525 &+ 1_013_904_223
      return Float(Int32(bitPattern: x) >> 8) / Float(1 << 24)
    }
  }
}

/// Discovery, preset application, parameters and channel rules, with real plugins and no JACK.
/// Serialized: lilv's world is used from one thread at a time.
@Suite("LV2 plugins", .serialized)
struct PluginTests {
  let world = ChainBuilder.world

  @Test("LV2World.info: ports, ranges, latency port, features and hostability of real plugins")
  func info() throws {
    let amp = try #require(world.info(uri: Installed.amp))
    #expect(amp.ports.map(\.symbol) == ["gain", "in", "out"])
    #expect(amp.ports.map(\.kind) == [.control, .audio, .audio])
    let gain = amp.ports[0]
    #expect(gain.isInput && gain.minimum == -90 && gain.maximum == 24 && gain.defaultValue == 0)
    #expect(gain.unit == "dB" && !gain.toggled && !gain.enumeration)
    #expect(gain.scalePoints.map(\.value) == [-10, -5, 0, 5])
    #expect(amp.audioInputs == 1 && amp.audioOutputs == 1 && amp.instancesOnStereoChain == 2)
    #expect(amp.canHost && amp.latencyPort == nil && amp.requiredFeatures.isEmpty)

    let dpl = try #require(world.info(uri: Installed.dpl))
    let latency = try #require(dpl.latencyPort.map { dpl.ports[$0] })
    #expect(
      latency.symbol == "latency" && latency.kind == .control && !latency.isInput && latency.reportsLatency)
    #expect(dpl.audioInputs == 2 && dpl.audioOutputs == 2 && dpl.instancesOnStereoChain == 1)
    #expect(dpl.ports.filter { $0.kind == .atom }.map(\.isInput) == [true, false])

    let fil4 = try #require(world.info(uri: Installed.fil4))
    #expect(fil4.requiredFeatures == [URI.uridMap])
    #expect(fil4.optionalFeatures.contains(URI.options) && fil4.canHost)

    let convo = try #require(world.info(uri: Installed.convo))
    for feature in [URI.workerSchedule, URI.options, URI.boundedBlockLength, URI.uridMap] {
      #expect(convo.requiredFeatures.contains(feature) && URI.alwaysProvided.contains(feature), "\(feature)")
    }
    #expect(convo.canHost)

    let refused = try #require(world.info(uri: Installed.noAudio))
    #expect(refused.unsupportedReason == PluginInfo.layoutProblem(inputs: 0, outputs: 0))
  }

  @Test(
    "stage ids derive from the URI",
    arguments: [
      (Installed.amp, "eg-amp"), (Installed.dpl, "dpl_stereo"),
      (Installed.delay, "delay"),
      (Installed.convo, "convolv2_mono"), ("http://example.org/plugins/3band", "lv2_3band"),
      ("http://example.org/my plug/", "my_plug"), ("urn:example:Thing", "urn_example_thing"),
    ])
  func suggestedIds(uri: String, id: String) {
    #expect(PluginIdentifiers.suggestedId(for: uri) == id)
  }

  @Test("block-length features are promised only where the blocks allow them")
  func conditionalFeatures() {
    let free = Installed.settings
    #expect(free.provides(URI.boundedBlockLength) && free.provides(URI.workerSchedule))
    #expect(!free.provides(URI.fixedBlockLength) && !free.provides(URI.powerOf2BlockLength))
    let jack = HostSettings(
      sampleRate: 48000, maxBlockFrames: 256, nominalBlockFrames: 256, fixedBlocks: true)
    #expect(jack.provides(URI.fixedBlockLength) && jack.provides(URI.powerOf2BlockLength))
    let odd = HostSettings(sampleRate: 48000, maxBlockFrames: 96, nominalBlockFrames: 96, fixedBlocks: true)
    #expect(odd.provides(URI.fixedBlockLength) && !odd.provides(URI.powerOf2BlockLength))
    #expect(!free.provides("http://example.org/ns/unsupported-feature"))
  }

  @Test("an LV2 preset applies, by label or URI; explicit values win over it")
  func lv2PresetApplies() throws {
    func detune(_ entry: ChainEntry) throws -> Float? {
      Installed.value(try Installed.build([entry]).chain, "detune.detune")
    }
    #expect(try detune(Installed.plugin("detune", Installed.detune)) == 0.2)
    #expect(try detune(Installed.plugin("detune", Installed.detune, preset: "Out Of Tune")) == 0.8)
    let uri = "http://drobilla.net/plugins/mda/presets#Detune-out-of-tune"
    #expect(try detune(Installed.plugin("detune", Installed.detune, preset: uri)) == 0.8)
    let both = Installed.plugin("detune", Installed.detune, values: ["detune": 0.5], preset: "Out Of Tune")
    #expect(try detune(both) == 0.5)
  }

  @Test("an unknown preset, control or out-of-range value is one error; not strict, the stage is left out")
  func descriptionErrors() throws {
    let labels = ["Out Of Tune", "Stereo Detune", "Symphonic"]
    #expect(
      Installed.error(building: Installed.plugin("detune", Installed.detune, preset: "Nope"))
        == .unknownPreset(uri: Installed.detune, preset: "Nope", available: labels))
    #expect(
      Installed.error(building: Installed.plugin("amp", Installed.amp, values: ["volume": 1]))
        == .unknownControl(id: "amp", symbol: "volume", known: ["gain"]))
    #expect(
      Installed.error(building: Installed.plugin("amp", Installed.amp, values: ["gain": 30]))
        == .outOfRange(id: "amp", symbol: "gain", value: 30, range: -90...24))
    #expect(
      PluginError.outOfRange(id: "amp", symbol: "gain", value: 30, range: -90...24).description
        == "30 is outside the range of 'amp.gain' (-90 to 24)")
    #expect(
      Installed.error(building: Installed.plugin("x", "http://example.org/nope"))
        == .unknownURI("http://example.org/nope"))
    #expect(
      Installed.error(building: Installed.plugin("none", Installed.noAudio))
        == .unsupported(uri: Installed.noAudio, reason: PluginInfo.layoutProblem(inputs: 0, outputs: 0)!))

    let built = try ChainBuilder.build(
      [Installed.plugin("detune", Installed.detune, preset: "Nope"), Installed.plugin("amp", Installed.amp)],
      settings: Installed.settings)
    #expect(
      built.skipped.map(\.message) == [
        "plugin stage 'detune' is left out: the plugin '\(Installed.detune)' has no preset 'Nope' "
          + "(it has: Out Of Tune, Stereo Detune, Symphonic)"
      ])
    #expect(built.plugins.map(\.id) == ["amp"] && built.chain.parameter("detune.detune") == nil)
  }

  /// fil4 smooths its own gain and filter settings from internal start values over about
  /// 300 ms; a chain swapped in live is heard from its first block, so the warm-up must have run
  /// that long. Measured before the fix: the first 5 ms at 0.1 RMS, then 0.04, rising to the
  /// tone's 0.177 only after 300 ms (a live `ctl mode highpass plugin` dipped 5 dB).
  @Test(
    "a plugin chain is heard settled: fil4's high-pass passes a 440 Hz tone at full level from its first block"
  )
  func warmedUntilSettled() throws {
    let built = try Installed.build([
      Installed.plugin("hp", Installed.fil4, values: ["HighPass": 1, "HPfreq": 80])
    ])
    let tone = (0..<4800).map { 0.25 * sinf(2 * .pi * 440 * Float($0) / 48000) }
    var (left, right) = (tone, tone)
    Installed.process(built.chain, &left, &right)
    let rms = { (x: ArraySlice<Float>) in (x.map { $0 * $0 }.reduce(0, +) / Float(x.count)).squareRoot() }
    let steady = rms(tone[...])
    let windows = stride(from: 0, to: 4800, by: 240).map { rms(left[$0..<($0 + 240)]) }
    #expect(
      windows.allSatisfy { abs(20 * log10($0 / steady)) < 0.5 },
      "5 ms windows: \(windows), the tone: \(steady)")
  }

  @Test("a mono plugin runs as two instances, one per channel; a stereo one as one")
  func monoRunsTwice() throws {
    let built = try Installed.build([
      Installed.plugin("amp", Installed.amp, values: ["gain": -6]), Installed.plugin("dpl", Installed.dpl),
    ])
    #expect(built.plugins.map { $0.instances.count } == [2, 1])
    let amp = try Installed.build([Installed.plugin("amp", Installed.amp, values: ["gain": -6])])
    let (a, b) = (Installed.noise(4800, seed: 1), Installed.noise(4800, seed: 2))
    var (left, right) = (a, b)
    Installed.process(amp.chain, &left, &right)
    let coef = powf(10, -6 * 0.05)
    #expect(left == a.map { $0 * coef } && right == b.map { $0 * coef }, "each channel on its own instance")
  }

  @Test(
    "on a mono input a mono plugin runs once and both channels get its output, bit for bit what two instances give; after a reverb it runs twice again"
  )
  func monoInputRunsOnce() throws {
    var mono = Installed.settings
    mono.identicalChannels = true
    let entries = [
      Installed.plugin("amp", Installed.amp, values: ["gain": -6]),
      .unit(StageDescription(id: "reverb", type: "reverb")), Installed.plugin("amp2", Installed.amp),
    ]
    let once = try ChainBuilder.build(entries, settings: mono, strict: true)
    #expect(once.plugins.map { $0.instances.count } == [1, 2], "the reverb makes the channels differ")
    let twice = try Installed.build(entries)
    #expect(twice.plugins.map { $0.instances.count } == [2, 2])
    let x = Installed.noise(4800, seed: 5)
    var (left, right) = (x, x)
    Installed.process(once.chain, &left, &right)
    var (left2, right2) = (x, x)
    Installed.process(twice.chain, &left2, &right2)
    #expect(left == left2 && right == right2, "one instance gives what two give")
  }

  @Test("a 1→2 plugin gets the mean of left and right")
  func monoInStereoOut() throws {
    // zeroconvolv's configurable mono→stereo variant without an IR copies its input to both
    // outputs, at the dry level (0 dB here, once its own 20 Hz gain ramp has settled).
    let built = try Installed.build([Installed.plugin("m2s", Installed.monoToStereo, values: ["dry": 0])])
    #expect(built.plugins.first?.instances.count == 1)
    var (left, right) = ([Float](repeating: 0.1, count: 48000), [Float](repeating: 0.1, count: 48000))
    Installed.process(built.chain, &left, &right)
    let (a, b) = (Installed.noise(4800, seed: 3), Installed.noise(4800, seed: 4))
    (left, right) = (a, b)
    Installed.process(built.chain, &left, &right)
    let mean = zip(a, b).map { ($0 + $1) * 0.5 }
    #expect(left == mean && right == mean)
  }

  @Test("parameters: control inputs, bypass, then control outputs, which are read-only")
  func parameters() throws {
    let built = try Installed.build([Installed.plugin("dpl", Installed.dpl)])
    let chain = built.chain
    #expect(
      chain.parameters.map(\.key) == [
        "dpl.enable", "dpl.gain", "dpl.threshold", "dpl.release", "dpl.truepeak", "dpl.bypass", "dpl.level",
        "dpl.latency",
      ])
    #expect(chain.parameter("dpl.enable")?.spec.kind == .toggle)
    #expect(chain.parameter("dpl.threshold")?.spec.kind == .continuous)
    #expect(chain.parameter("dpl.latency")?.spec.kind == .output)
    #expect(chain.set("dpl.latency", 3) == nil && chain.set("dpl.level", 0) == nil)
    #expect(chain.set("dpl.threshold", -3) == -3 && chain.set("dpl.threshold", -99) == -10)
    // The warm-up block has run the plugin: its latency output is published and counted.
    let latency = try #require(Installed.value(chain, "dpl.latency"))
    #expect(
      latency > 0 && Int(latency) == built.plugins[0].latencyFrames && chain.latencyFrames == Int(latency))
    // Enumerations snap to their labelled values, integers round; both apply without smoothing.
    let other = try Installed.build([
      Installed.plugin("leslie", "http://drobilla.net/plugins/mda/Leslie"),
      Installed.plugin("dr", "http://gareus.org/oss/lv2/meters#dr14stereo"),
    ]).chain
    #expect(other.parameter("leslie.mode")?.spec.kind == .choice([0, 0.5, 1]))
    #expect(other.set("leslie.mode", 0.4) == 0.5)
    #expect(other.parameter("dr.reset")?.spec.kind == .integer && other.set("dr.reset", 0.7) == 1)
    #expect(other.parameter("dr.dr1")?.spec.kind == .output)
  }

  @Test(
    "a mono plugin run as two instances shows both instances' control outputs, the right's as SYMBOL_right")
  func bothInstancesOutputs() throws {
    let built = try Installed.build([Installed.plugin("dpl", "http://gareus.org/oss/lv2/dpl#mono")])
    let chain = built.chain
    #expect(built.plugins.first?.instances.count == 2)
    let keys = chain.parameters.map(\.key)
    #expect(
      keys.suffix(4) == ["dpl.level", "dpl.latency", "dpl.level_right", "dpl.latency_right"], "\(keys)")
    #expect(chain.parameter("dpl.level_right")?.spec.kind == .output)
    // Left loud (limited), right quiet: each instance's reduction is its own.
    var (left, right) = (
      Installed.noise(48000, seed: 1).map { $0 * 1.9 }, Installed.noise(48000, seed: 2).map { $0 * 0.01 }
    )
    Installed.process(chain, &left, &right)
    let (l, r) = (Installed.value(chain, "dpl.level") ?? 0, Installed.value(chain, "dpl.level_right") ?? 0)
    print("[measured] dpl#mono: level \(l) (left, loud), level_right \(r) (right, quiet)")
    #expect(l != r, "both instances report \(l)")
  }

  /// A mono 32-bit float WAV file of `samples` at 48 kHz.
  static func writeMono(_ path: String, _ samples: [Float]) throws {
    var info = SF_INFO()
    info.samplerate = 48000
    info.channels = 1
    info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    let file = try #require(sf_open(path, Int32(SFM_WRITE), &info), "cannot write \(path)")
    _ = sf_writef_float(file, samples, sf_count_t(samples.count))
    sf_close(file)
  }

  @Test(
    "patch:Set: eg-sampler loads the sample its entry's \"properties\" name (through its worker), reports it, and plays it on a note"
  )
  func propertySetLoadsSample() throws {
    let folder = NSTemporaryDirectory() + "livemic-props-\(getpid())"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let clip = Installed.noise(1000, seed: 7)
    try Self.writeMono(folder + "/clip.wav", clip)
    var description = PluginDescription(id: "sampler", uri: "http://lv2plug.in/plugins/eg-sampler")
    description.properties = ["sample": "clip.wav", "gain": "0"]
    description.propertiesFolder = folder
    let built = try Installed.build([.plugin(description)])
    let stage = try #require(built.plugins.first)
    // The plugin tells the host which file it runs once its worker has loaded it (a patch:Set on
    // its notify port).
    var reported: PropertyValue?
    for _ in 0..<300 where reported != .path(folder + "/clip.wav") {
      var (l, r) = ([Float](repeating: 0, count: 256), [Float](repeating: 0, count: 256))
      Installed.process(built.chain, &l, &r)
      reported = stage.propertyValues()["sample"]
      if reported != .path(folder + "/clip.wav") { usleep(10_000) }
    }
    #expect(reported == .path(folder + "/clip.wav"), "\(String(describing: reported)): \(stage.drainLog())")
    // A note 10 frames into a block plays the sample from there, sample for sample.
    var note: [UInt8] = [0x90, 60, 100]
    built.chain.midiEvents.clear()
    built.chain.midiEvents.append(frame: 10, data: &note, size: 3)
    // One block of 512 frames (the events are the block's); the plugin runs it as two of 256.
    var (left, right) = ([Float](repeating: 0, count: 512), [Float](repeating: 0, count: 512))
    built.chain.process(left: &left, right: &right, blockFrames: 512)
    built.chain.midiEvents.clear()
    #expect(left[0..<10].allSatisfy { $0 == 0 })
    let worst = (10..<512).map { abs(left[$0] - clip[$0 - 10]) }.max() ?? 1
    print("[measured] eg-sampler, sample set by patch:Set, note at frame 10: worst error \(worst)")
    #expect(worst < 1e-6 && left == right)
    // Live: a missing file and an unknown property are one-sentence errors; a number property
    // is sent as a number.
    #expect(throws: PluginError.self) { try stage.setProperty("sample", text: folder + "/missing.wav") }
    #expect(throws: PluginError.self) { try stage.setProperty("room", text: "3") }
    #expect(try stage.setProperty("gain", text: "-6") == .float(-6))
  }

  @Test(
    "sidechain: LSP's sidechain compressor keyed by the music bed turns the voice down by the reduction it reports"
  )
  func sidechainKeyedByMusic() throws {
    var description = PluginDescription(
      id: "duck", uri: "http://lsp-plug.in/plugins/lv2/sc_compressor_stereo", values: ["sct": 2, "cr": 8])
    description.sidechain = .music
    let built = try Installed.build([.plugin(description)])
    let chain = built.chain
    #expect(chain.wantsMusicFeed)
    let frames = 256
    let music = Installed.noise(frames, seed: 3).map { $0 * 1.6 }  // about -7 dBFS RMS
    let silence = [Float](repeating: 0, count: frames)
    var phase = 0
    /// The voice's RMS over the last second of `seconds`, with `key` as the music each block.
    func voiceLevel(seconds: Int, key: [Float]) -> Double {
      var sum = 0.0
      var count = 0
      let blocks = seconds * 48000 / frames
      for b in 0..<blocks {
        var left = (0..<frames).map { Float(0.1 * sin(2 * Double.pi * 440 * Double(phase + $0) / 48000)) }
        var right = left
        phase += frames
        key.withUnsafeBufferPointer {
          chain.feedMusic(left: $0.baseAddress, right: $0.baseAddress, frames: frames)
        }
        chain.process(left: &left, right: &right, blockFrames: frames)
        if b >= blocks - 48000 / frames {
          sum += left.reduce(0) { $0 + Double($1) * Double($1) }
          count += frames
        }
      }
      return (sum / Double(count)).squareRoot()
    }
    let quiet = voiceLevel(seconds: 2, key: silence)
    let ducked = voiceLevel(seconds: 2, key: music)
    let dropDecibels = 20 * log10(ducked / quiet)
    let reported = try #require(Installed.value(chain, "duck.rlm"))
    let reportedDecibels = 20 * log10(Double(reported))
    print(
      "[measured] LSP sc compressor keyed by music: the voice fell \(dropDecibels) dB; reported \(reportedDecibels) dB"
    )
    #expect(dropDecibels < -3, "the music did not turn the voice down: \(dropDecibels) dB")
    #expect(
      abs(dropDecibels - reportedDecibels) < 1, "fell \(dropDecibels) dB, reported \(reportedDecibels) dB")
    let back = voiceLevel(seconds: 2, key: silence)
    #expect(abs(20 * log10(back / quiet)) < 0.5, "the voice did not come back: \(back) against \(quiet)")
  }

  @Test(
    "patch:Set: x42 convoLV2 loads the impulse response its entry's \"properties\" name; the output is the convolution"
  )
  func propertySetLoadsImpulseResponse() throws {
    let folder = NSTemporaryDirectory() + "livemic-ir-\(getpid())"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    // An impulse response of two taps: 0.5 at frame 10 and -0.25 at frame 30.
    try Self.writeMono(folder + "/ir.wav", (0..<64).map { $0 == 10 ? 0.5 : $0 == 30 ? -0.25 : 0 })
    var description = PluginDescription(id: "ir", uri: Installed.convo)
    description.properties = ["impulse": "ir.wav"]
    description.propertiesFolder = folder
    let built = try Installed.build([.plugin(description)])
    let stage = try #require(built.plugins.first)
    var reported: PropertyValue?
    for _ in 0..<300 where reported != .path(folder + "/ir.wav") {
      var (l, r) = ([Float](repeating: 0, count: 256), [Float](repeating: 0, count: 256))
      Installed.process(built.chain, &l, &r)
      reported = stage.propertyValues()["impulse"]
      if reported != .path(folder + "/ir.wav") { usleep(10_000) }
    }
    // Whether or not the plugin reports the file back, the output must be the convolution.
    var converged = false
    var worst: Float = 1
    var gain: Float = 0
    for _ in 0..<100 where !converged {
      let input = Installed.noise(2048, seed: 11)
      var (left, right) = (input, input)
      Installed.process(built.chain, &left, &right)
      let latency = stage.latencyFrames
      // convoLV2 scales the IR by its own gain: fit it on one tap, then check the whole shape.
      let expected = (0..<input.count).map { i -> Float in
        (i - 10 - latency >= 0 ? 0.5 * input[i - 10 - latency] : 0)
          - (i - 30 - latency >= 0 ? 0.25 * input[i - 30 - latency] : 0)
      }
      let dot = zip(left, expected).reduce(Float(0)) { $0 + $1.0 * $1.1 }
      let norm = expected.reduce(Float(0)) { $0 + $1 * $1 }
      gain = norm > 0 ? dot / norm : 0
      worst = (64..<input.count).map { abs(left[$0] - gain * expected[$0]) }.max() ?? 1
      converged = gain > 0.1 && worst < 1e-4
      if !converged { usleep(10_000) }
    }
    print(
      "[measured] convoLV2 with ir.wav by patch:Set: gain \(gain), worst error \(worst), reported \(String(describing: reported))"
    )
    #expect(converged, "the output is not the convolution: gain \(gain), worst \(worst); \(stage.drainLog())")
  }

  @Test("a bad property in an entry is refused before the plugin runs, in one sentence")
  func badProperty() {
    var description = PluginDescription(id: "sampler", uri: "http://lv2plug.in/plugins/eg-sampler")
    description.properties = ["sample": "/nonexistent/clip.wav"]
    #expect(
      Installed.error(building: .plugin(description))?.description
        == "the property 'sampler.sample' names the file '/nonexistent/clip.wav', which does not exist")
    description.properties = ["room": "x"]
    #expect(
      Installed.error(building: .plugin(description))?.description
        == "stage 'sampler' has no property 'room' to set (it takes: gain, sample)")
    description.properties = ["gain": "loud"]
    #expect(
      Installed.error(building: .plugin(description))?.description
        == "the property 'sampler.gain' takes a number, not 'loud'")
  }

  @Test("worker + state: zeroconvolv's preset IR is loaded through the worker, then the signal passes")
  func workerDeliversImpulseResponse() throws {
    let built = try Installed.build([Installed.plugin("zc", Installed.zeroconvolv, preset: "No-OP Mono")])
    var ready = false
    for _ in 0..<200 where !ready {
      var (left, right) = ([Float](repeating: 0.25, count: 256), [Float](repeating: 0.25, count: 256))
      Installed.process(built.chain, &left, &right)
      // Each channel's instance has its own worker: both must have swapped their IR in.
      ready = abs(left[255] - 0.25) < 1e-4 && abs(right[255] - 0.25) < 1e-4
      if !ready { usleep(10_000) }
    }
    #expect(ready, "the worker never swapped the IR in (output still silent after 2 s)")
    let latency = built.plugins[0].latencyFrames
    let input = Installed.noise(4096, seed: 5)
    var (left, right) = (input, input)
    Installed.process(built.chain, &left, &right)
    let worst = (latency..<input.count).map { abs(left[$0] - input[$0 - latency]) }.max() ?? 1
    print("[measured] zeroconvolv No-OP Mono: latency \(latency) frames, worst error \(worst)")
    #expect(latency > 0 && worst < 1e-5 && left == right)
  }
}

@Suite("Presets with LV2 entries")
struct LV2PresetTests {
  @Test("an lv2 entry parses with its id, params, preset and bypass; the id defaults to the URI's")
  func parses() throws {
    let text = #"""
      {"name": "p", "chain": [
        {"lv2": "http://lv2plug.in/plugins/eg-amp", "id": "amp", "params": {"gain": -3, "x": true},
         "preset": "Loud", "bypass": true},
        {"lv2": "http://gareus.org/oss/lv2/dpl#stereo"}, {"unit": "limiter"}]}
      """#
    let preset = try Preset.parse(Data(text.utf8), path: "p.json")
    #expect(
      preset.chain[0]
        == Installed.plugin("amp", Installed.amp, values: ["gain": -3, "x": 1], preset: "Loud").bypassing())
    #expect(preset.chain[1] == Installed.plugin("dpl_stereo", Installed.dpl))
    #expect(preset.entries.map(\.id) == ["amp", "dpl_stereo", "limiter", "output"])
    let stages = try preset.stages(applying: [
      ParameterOverride(key: "amp.gain", value: 6), ParameterOverride(key: "dpl_stereo.bypass", value: 1),
    ])
    guard case .plugin(let amp) = stages[0], case .plugin(let dpl) = stages[1] else {
      Issue.record("\(stages)")
      return
    }
    #expect(amp.values["gain"] == 6 && dpl.bypassed)
  }

  @Test(
    "bad lv2 entries give the documented one-sentence error",
    arguments: [
      (#"{"lv2": 3}"#, "key 'chain[0].lv2': expected the plugin's URI"),
      (#"{"lv2": ""}"#, "key 'chain[0].lv2': expected the plugin's URI"),
      (
        #"{"lv2": "urn:a", "gain": 1}"#,
        "key 'chain[0].gain': unknown key (allowed: bypass, cv, id, lv2, midi, on, params, preset, properties, sidechain, state)"
      ),
      (#"{"lv2": "urn:a", "id": 1}"#, "key 'chain[0].id': expected a string"),
      (#"{"lv2": "urn:a", "bypass": "yes"}"#, "key 'chain[0].bypass': expected true or false"),
      (
        #"{"lv2": "urn:a", "midi": 1}"#,
        "key 'chain[0].midi': expected true or false (whether the plugin gets MIDI)"
      ),
      (
        #"{"lv2": "urn:a", "sidechain": "eq"}, {"unit": "eq"}"#,
        "key 'chain[0].sidechain': 'eq' is not an earlier stage"
      ),
      (
        #"{"lv2": "urn:a", "sidechain": 1}"#,
        "key 'chain[0].sidechain': expected \"input\", \"music\" or the id"
      ),
      (
        #"{"lv2": "urn:a", "on": "drums"}"#,
        "key 'chain[0].on': expected \"voice\" (the default) or \"music\""
      ),
      (#"{"lv2": "urn:a", "preset": 2}"#, "key 'chain[0].preset': expected a preset URI or label"),
      (
        #"{"lv2": "urn:a", "params": [1]}"#,
        "key 'chain[0].params': expected an object of control values by port symbol"
      ),
      (#"{"lv2": "urn:a", "params": {"gain": "loud"}}"#, "key 'chain[0].params.gain': expected a number"),
      (#"{"lv2": "urn:a", "id": "eq"}, {"unit": "eq"}"#, "key 'chain[1].id': stage id 'eq' is used twice"),
    ])
  func malformed(entry: String, message: String) {
    let text = #"{"name": "x", "chain": ["# + entry + "]}"
    do {
      _ = try Preset.parse(Data(text.utf8), path: "bad.json")
      Issue.record("parsed: \(text)")
    } catch {
      #expect(error.description.hasPrefix("preset 'bad.json', \(message)"), "\(error.description)")
      #expect(!error.description.contains("\n"))
    }
  }
}

extension ChainEntry {
  fileprivate func bypassing() -> ChainEntry {
    guard case .plugin(var d) = self else { return self }
    d.bypassed = true
    return .plugin(d)
  }
}
