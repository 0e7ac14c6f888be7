import CWebRTC
import Synchronization

/// How the chains of this process run. Offline (`livemic render`, `bench`, the tests), units that
/// hand work to a helper thread in real time do it inline, deterministically. Live, the helper
/// threads run at `helperPriority` (SCHED_FIFO; 0: normal scheduling).
///
/// Thread: set before a chain is built (the session sets the priority from each new client).
public enum ProcessingContext {
  private static let offline = Atomic<Bool>(false)
  private static let priority = Atomic<Int32>(0)
  /// True when nothing runs in real time.
  public static var isOffline: Bool { offline.load(ordering: .relaxed) }
  /// Says that nothing in this process runs in real time (or, `false`, that it does).
  public static func runOffline(_ on: Bool = true) { offline.store(on, ordering: .relaxed) }
  /// The SCHED_FIFO priority of helper threads (below the audio thread's), 0 for none.
  public static var helperPriority: Int32 { priority.load(ordering: .relaxed) }
  /// Sets it: one below the JACK client's real-time priority, or 0 when the client is not real-time.
  public static func setHelperPriority(_ value: Int32) { priority.store(max(value, 0), ordering: .relaxed) }

  private static let period = Atomic<Int>(0)
  /// The host's period (JACK's buffer size) in frames, 0 when unknown: a unit that hands work to
  /// a helper thread declares latency enough for a whole period.
  public static var hostPeriodFrames: Int { period.load(ordering: .relaxed) }
  /// Sets it (the session, before it builds a chain for a client or a new buffer size).
  public static func setHostPeriod(frames: Int) { period.store(max(frames, 0), ordering: .relaxed) }

  /// The helper-thread latency for frames of `frameLength`: the frame itself, then the time the
  /// helper has to process it, at least one frame and at least one host period (a period longer
  /// than a frame pushes several frames at once, and all of them are due before the next
  /// cycle). Offline the frames are processed inline: two frames, whatever the block.
  public static func helperLatencyFrames(frameLength: Int) -> Int {
    frameLength + (isOffline ? frameLength : max(frameLength, hostPeriodFrames))
  }

  /// Whether units built for `hostPeriodFrames` declare another latency at a period of
  /// `frames` (then they are built again): only when either period is longer than a 10 ms frame
  /// at `sampleRate`.
  public static func helperLatencyChanges(toPeriod frames: Int, sampleRate: Double) -> Bool {
    let frame = Int(sampleRate / 100)
    return max(frame, hostPeriodFrames) != max(frame, frames)
  }
}

/// One WebRTC audio-processing instance (libwebrtc-audio-processing, through the `CWebRTC`
/// shim) for the mono mean of a stereo block.
///
/// WebRTC's `ProcessStream` takes a mutex and may allocate, so in real time it runs on the
/// shim's helper thread, one real-time priority below JACK's client thread when the client runs
/// in real time (`ProcessingContext.helperPriority`): the audio
/// thread only writes preallocated rings, posts a semaphore and reads the output later by
/// `latencyFrames`: the 10 ms frame itself, then a frame of time for the helper or, at JACK
/// periods over 10 ms (480 frames at 48 kHz), a whole period
/// (`ProcessingContext.helperLatencyFrames`; the session builds the chain again when the period
/// grows). A frame the helper has not finished in time is played dry and counted
/// (`lateFrames`). Offline
/// (`ProcessingContext.isOffline`) the frames are processed inline, deterministically, with the
/// same latency.
///
/// Thread: made off the audio thread; `run` on it.
final class WebRTCProcessor {
  let handle: OpaquePointer
  let latencyFrames: Int
  private let maxFrames: Int
  private let mono: UnsafeMutablePointer<Float>
  private let reference: UnsafeMutablePointer<Float>

  /// `offline`: the frames processed inline (`ProcessingContext.isOffline` unless a test says).
  init?(sampleRate: Double, maxFrames: Int, features: Int32, offline: Bool = ProcessingContext.isOffline) {
    let frame = Int(sampleRate / 100)
    guard
      let handle = livemic_webrtc_create(
        Int32(sampleRate), features, Int32(ProcessingContext.helperLatencyFrames(frameLength: frame)),
        ProcessingContext.helperPriority, offline ? 1 : 0)
    else { return nil }
    self.handle = handle
    self.maxFrames = max(maxFrames, 1)
    latencyFrames = Int(livemic_webrtc_latency_frames(handle))
    mono = .allocate(capacity: self.maxFrames)
    mono.initialize(repeating: 0, count: self.maxFrames)
    reference = .allocate(capacity: self.maxFrames)
    reference.initialize(repeating: 0, count: self.maxFrames)
  }

  deinit {
    livemic_webrtc_destroy(handle)
    mono.deallocate()
    reference.deallocate()
  }

  /// The 10 ms frames played dry because the helper was late (0 offline).
  /// - Realtime: safe
  var lateFrames: UInt64 { livemic_webrtc_late_frames(handle) }

  /// Runs the block's mono mean through WebRTC and writes the result to both channels.
  /// - Realtime: safe
  func run(_ block: StereoBlock) {
    forEachMonoChunk(of: block, in: mono) { chunk, n in
      livemic_webrtc_run(handle, mono, mono, Int32(n))
      chunk.left.update(from: mono, count: n)
      chunk.right.update(from: mono, count: n)
    }
  }

  /// Hands the block's mono mean over as the far-end reference (after the near end of the same
  /// block: a frame is processed once both have reached its end).
  /// - Realtime: safe
  func receive(_ block: StereoBlock) {
    forEachMonoChunk(of: block, in: reference) { _, n in
      livemic_webrtc_push_reference(handle, reference, Int32(n))
    }
  }

  /// Walks the block in chunks of at most `maxFrames`: each chunk's mono mean into `buffer`,
  /// then `body` with the chunk and its length.
  /// - Realtime: safe
  @inline(__always)
  private func forEachMonoChunk(
    of block: StereoBlock, in buffer: UnsafeMutablePointer<Float>, _ body: (StereoBlock, Int) -> Void
  ) {
    var offset = 0
    while offset < block.frames {
      let n = min(maxFrames, block.frames - offset)
      let (l, r) = (block.left + offset, block.right + offset)
      for f in 0..<n { buffer[f] = 0.5 * (l[f] + r[f]) }
      body(StereoBlock(left: l, right: r, frames: n), n)
      offset += n
    }
  }

}

/// WebRTC's noise suppression (the `webrtc` engine of `denoise`): a speech/noise classifier on
/// spectral features, stronger on non-stationary noise than speexdsp's. Mono; latency 27 ms
/// at 48 kHz (two 10 ms frames and WebRTC's own 7 ms; at a JACK period over 10 ms, one frame, the
/// period and WebRTC's own), declared.
public struct WebRTCDenoise: VoiceUnit {
  public static let typeName = "webrtc-denoise"
  public static let summary =
    "Noise suppression with WebRTC's audio processing (the library of PulseAudio's and PipeWire's echo cancellers); mono, adds 27 ms of latency at 48 kHz (more at JACK periods over 10 ms: a period instead of one of its two frames)."
  public static let parameters = [
    ParameterSpec(
      "suppression_db", unit: "dB", range: 0...60, default: 25,
      "Largest attenuation of the noise: WebRTC's levels low (6), moderate (10), high (15) and very high (20 dB), the nearest at or below this."
    ),
    lateFramesParameter,
  ]
  private var core = WebRTCUnitCore()

  public init() {}

  public var latencyFrames: Int { core.latencyFrames }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    core.prepare(sampleRate: sampleRate, maxFrames: maxFrames, features: Int32(LIVEMIC_WEBRTC_NOISE))
  }

  /// The WebRTC level for a suppression in dB.
  /// - Realtime: safe
  static func level(suppressionDecibels db: Float) -> Int32 { db >= 20 ? 3 : db >= 15 ? 2 : db >= 10 ? 1 : 0 }

  /// - Realtime: safe
  public mutating func reset() {}

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    core.run(block, setting: SIMD2(Self.level(suppressionDecibels: p.current(0)), 0)) {
      livemic_webrtc_set_noise_level($0, $1[0])
    }
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 1 ? core.lateFrames : 0 }
}

/// The read-only parameter every WebRTC unit reports last: how many of its 10 ms frames the
/// helper thread had not finished when they were due, so they were played unprocessed.
let lateFramesParameter = ParameterSpec(
  "late_frames", unit: "", range: 0...9_999_999, default: 0, kind: .output,
  "10 ms frames WebRTC's helper thread did not finish in time and played unprocessed, since the stage was made (read-only); a count that grows means the machine is too busy for it."
)

/// What each WebRTC unit keeps: its processor and the setting it last handed to it.
/// Thread: prepared off the audio thread; run on it.
struct WebRTCUnitCore {
  /// Nil before `prepare`, or when the library could not make one (the unit then passes audio).
  private(set) var processor: WebRTCProcessor?
  /// The setting last handed to the processor; nil until the first block.
  private var applied: SIMD2<Int32>?

  /// The processor's declared latency (0 without one).
  var latencyFrames: Int { processor?.latencyFrames ?? 0 }

  /// `lateFramesParameter`'s value: the processor's late frames (0 without one).
  /// - Realtime: safe
  var lateFrames: Float { processor.map { Float($0.lateFrames) } ?? 0 }

  /// Makes the processor for `features` (`LIVEMIC_WEBRTC_*`). Not real-time.
  mutating func prepare(
    sampleRate: Double, maxFrames: Int, features: Int32, offline: Bool = ProcessingContext.isOffline
  ) {
    processor = WebRTCProcessor(
      sampleRate: sampleRate, maxFrames: maxFrames, features: features, offline: offline)
    applied = nil
  }

  /// Hands `setting` to the processor through `apply` when it differs from the last one, then
  /// runs the block.
  /// - Realtime: safe
  @inline(__always)
  mutating func run(
    _ block: StereoBlock, setting: SIMD2<Int32>, apply: (OpaquePointer, SIMD2<Int32>) -> Void
  ) {
    guard let processor else { return }
    if setting != applied {
      applied = setting
      apply(processor.handle, setting)
    }
    processor.run(block)
  }
}

/// WebRTC's acoustic echo canceller (the `webrtc` engine of `aec`, with the extended filter and
/// delay-agnostic mode, as PulseAudio's and PipeWire's echo-cancel use it), after speexdsp's
/// adaptive filter. The reference is the music bed or the output, as for `aec`
/// (`ReferenceChoice`), handed to both. Mono; latency 33 ms at 48 kHz (WebRTC's 28 and one 5 ms
/// speexdsp frame; more at JACK periods over 10 ms, as for `WebRTCDenoise`), declared.
///
/// Why two stages: WebRTC 0.3's residual suppressor decides by how much echo is left against
/// the microphone, band by band. Alone, with a music bed 10 dB over the voice, it took the voice
/// down by 3.1–3.8 dB in double talk (21 dB below 300 Hz, where the music's bass stood over it)
/// at its lowest setting (EchoRoomTests, scripts/bench-quality). speexdsp's linear filter first
/// takes 10–20 dB of the echo out without touching the voice, so the suppressor finds the voice
/// on top and leaves it: 2.0–2.5 dB in the same room, ERLE 36–38 dB.
public struct WebRTCEchoCanceller: VoiceUnit {
  public static let typeName = "webrtc-aec"
  public static let summary =
    "Echo cancellation with speexdsp's adaptive filter, then WebRTC's audio processing (extended filter, delay-agnostic); mono, adds 33 ms of latency at 48 kHz (more at JACK periods over 10 ms: a period instead of one of WebRTC's two frames)."
  public static let parameters = [
    ParameterSpec(
      "residual_db", unit: "dB", range: 0...60, default: 0,
      "How hard the residual echo is suppressed: below 10 WebRTC's low level, below 25 moderate, else high."),
    ReferenceChoice.parameter,
    lateFramesParameter,
  ]
  public static var wantsReference: Bool { true }
  private var core = WebRTCUnitCore()
  /// speexdsp's adaptive filter, run first (`EchoCanceller.Engine`, linear only).
  private var linear: EchoCanceller.Engine?
  private var reference = ReferenceChoice()

  public init() {}

  /// WebRTC's latency and the linear stage's frame.
  public var latencyFrames: Int { core.latencyFrames + (linear?.buffers.frame ?? 0) }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    linear = EchoCanceller.makeEngine(sampleRate: sampleRate, linearOnly: true)
    core.prepare(sampleRate: sampleRate, maxFrames: maxFrames, features: Int32(LIVEMIC_WEBRTC_ECHO))
  }

  /// - Realtime: safe
  public mutating func reset() { linear?.reset() }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let db = p.current(0)
    reference.outputOnly = p.current(1) >= 0.5
    let level: Int32 = db >= 25 ? 2 : db >= 10 ? 1 : 0
    linear?.process(block)
    core.run(block, setting: SIMD2(level, 0)) { livemic_webrtc_set_echo_level($0, $1[0]) }
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 2 ? core.lateFrames : 0 }

  /// - Realtime: safe
  public mutating func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {
    guard reference.accepts(source) else { return }
    linear?.receive(block)
    core.processor?.receive(block)
  }
}

/// WebRTC's adaptive digital gain control with its limiter (the `webrtc` engine of `leveler`).
/// Mono; latency 21 ms at 48 kHz (more at JACK periods over 10 ms, as for `WebRTCDenoise`),
/// declared.
public struct WebRTCLeveler: VoiceUnit {
  public static let typeName = "webrtc-leveler"
  public static let summary =
    "Automatic gain control with WebRTC's audio processing (adaptive digital, with its limiter); mono, adds 21 ms of latency at 48 kHz (more at JACK periods over 10 ms: a period instead of one of its two frames)."
  public static let parameters = [
    ParameterSpec(
      "target_db", unit: "dBFS", range: -31...0, default: -20,
      "Level to reach (WebRTC's target, in whole dB below full scale)."),
    ParameterSpec(
      "max_gain_db", unit: "dB", range: 0...30, default: 15,
      "Largest gain applied (WebRTC's compression gain)."),
    lateFramesParameter,
  ]
  private var core = WebRTCUnitCore()

  public init() {}

  public var latencyFrames: Int { core.latencyFrames }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    core.prepare(sampleRate: sampleRate, maxFrames: maxFrames, features: Int32(LIVEMIC_WEBRTC_GAIN))
  }

  /// - Realtime: safe
  public mutating func reset() {}

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let target = Int32(min(max(-p.current(0).rounded(), 0), 31))
    let gain = Int32(min(max(p.current(1).rounded(), 0), 90))
    core.run(block, setting: SIMD2(target, gain)) { livemic_webrtc_set_gain($0, $1[0], $1[1]) }
  }

  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == 2 ? core.lateFrames : 0 }
}
