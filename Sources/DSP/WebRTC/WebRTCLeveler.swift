import CWebRTC
import Synchronization

/// WebRTC's adaptive digital gain control with its limiter (the `webrtc` engine of `leveler`).
/// Mono; latency 21 ms at 48 kHz (more at JACK periods over 10 ms, as for `WebRTCDenoise`),
/// declared.
public struct WebRTCLeveler: WebRTCUnit {
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
  static var features: Int32 { Int32(LIVEMIC_WEBRTC_GAIN) }
  var core = WebRTCUnitCore()

  public init() {}

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    let target = Int32(min(max(-p.current(0).rounded(), 0), 31))
    let gain = Int32(min(max(p.current(1).rounded(), 0), 90))
    core.run(block, setting: SIMD2(target, gain)) { livemic_webrtc_set_gain($0, $1[0], $1[1]) }
  }
}
