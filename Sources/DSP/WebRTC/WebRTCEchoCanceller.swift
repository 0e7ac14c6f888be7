import CWebRTC
import Synchronization

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
public struct WebRTCEchoCanceller: WebRTCUnit {
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
  static var features: Int32 { Int32(LIVEMIC_WEBRTC_ECHO) }
  var core = WebRTCUnitCore()
  /// speexdsp's adaptive filter, run first (`EchoCanceller.Engine`, linear only).
  private var linear: EchoCanceller.Engine?
  private var reference = ReferenceChoice()

  public init() {}

  /// WebRTC's latency and the linear stage's frame.
  public var latencyFrames: Int { core.latencyFrames + (linear?.buffers.frame ?? 0) }

  /// Makes the linear stage, then the WebRTC processor for `context` (its helper thread's
  /// priority and latency).
  public mutating func prepare(
    sampleRate: Double, maxFrames: Int, parameters: ParameterValues, context: ProcessingContext
  ) {
    linear = EchoCanceller.makeEngine(sampleRate: sampleRate, linearOnly: true)
    core.prepare(sampleRate: sampleRate, maxFrames: maxFrames, features: Self.features, context: context)
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
  public mutating func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {
    guard reference.accepts(source) else { return }
    linear?.receive(block)
    core.processor?.receive(block)
  }
}
