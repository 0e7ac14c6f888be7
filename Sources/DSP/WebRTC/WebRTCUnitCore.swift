import CWebRTC
import Synchronization

/// The read-only parameter every WebRTC unit reports last: how many of its 10 ms frames the
/// helper thread had not finished when they were due, so they were played unprocessed.
let lateFramesParameter = ParameterSpec(
  "late_frames", unit: "", range: 0...9_999_999, default: 0, kind: .output,
  "10 ms frames WebRTC's helper thread did not finish in time and played unprocessed, since the stage was made (read-only); a count that grows means the machine is too busy for it."
)

/// A unit that runs one WebRTC processor (`core`) for `features`: the preparing, the latency and
/// the late-frame report are written here once. A unit with more to prepare (the echo
/// canceller's linear stage) writes its own `prepare(...context:)` and `latencyFrames`.
protocol WebRTCUnit: VoiceUnit {
  /// The processor's features (`LIVEMIC_WEBRTC_*`).
  static var features: Int32 { get }
  var core: WebRTCUnitCore { get set }
}

extension WebRTCUnit {
  public var latencyFrames: Int { core.latencyFrames }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    prepare(sampleRate: sampleRate, maxFrames: maxFrames, parameters: parameters, context: .offline)
  }

  /// Makes the WebRTC processor for `context` (its helper thread's priority and latency).
  public mutating func prepare(
    sampleRate: Double, maxFrames: Int, parameters: ParameterValues, context: ProcessingContext
  ) {
    core.prepare(sampleRate: sampleRate, maxFrames: maxFrames, features: Self.features, context: context)
  }

  /// The late-frame count for `lateFramesParameter`, the last parameter; 0 for the others.
  /// - Realtime: safe
  public func outputValue(_ index: Int) -> Float { index == Self.parameters.count - 1 ? core.lateFrames : 0 }

  /// - Realtime: safe
  public mutating func reset() {}
}

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
  mutating func prepare(sampleRate: Double, maxFrames: Int, features: Int32, context: ProcessingContext) {
    processor = WebRTCProcessor(
      sampleRate: sampleRate, maxFrames: maxFrames, features: features, context: context)
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
