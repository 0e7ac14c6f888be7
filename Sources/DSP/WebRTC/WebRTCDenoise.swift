import CWebRTC
import Synchronization

/// WebRTC's noise suppression (the `webrtc` engine of `denoise`): a speech/noise classifier on
/// spectral features, stronger on non-stationary noise than speexdsp's. Mono; latency 27 ms
/// at 48 kHz (two 10 ms frames and WebRTC's own 7 ms; at a JACK period over 10 ms, one frame, the
/// period and WebRTC's own), declared.
public struct WebRTCDenoise: WebRTCUnit {
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
  static var features: Int32 { Int32(LIVEMIC_WEBRTC_NOISE) }
  var core = WebRTCUnitCore()

  public init() {}

  /// The WebRTC level for a suppression in dB.
  /// - Realtime: safe
  static func level(suppressionDecibels db: Float) -> Int32 { db >= 20 ? 3 : db >= 15 ? 2 : db >= 10 ? 1 : 0 }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    core.run(block, setting: SIMD2(Self.level(suppressionDecibels: p.current(0)), 0)) {
      livemic_webrtc_set_noise_level($0, $1[0])
    }
  }
}
