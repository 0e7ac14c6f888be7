import CSpeexDSP

/// Noise suppression with speexdsp's preprocessor (spectral MMSE estimation of steady noise).
///
/// Mono: it processes the mean of both channels and writes the result to both (LiveMic's input
/// is one microphone, copied to both channels unless `-i 2`). Latency: two 5 ms speexdsp frames
/// (the FIFO's and the preprocessor's overlap-add), 480 frames = 10 ms at 48 kHz, declared in
/// `latencyFrames`.
/// The preprocessor's VAD (off by default; setting it only prints a warning), AGC and
/// dereverberation stay off; `reset` clears the frame FIFO but keeps the noise estimate
/// (speexdsp has no reset for it, and the noise has not changed).
public struct Denoise: VoiceUnit {
  public static let typeName = "denoise"
  public static let summary =
    "Noise suppression (speexdsp) of steady background noise; mono (both channels get the processed mean), adds 10 ms of latency."
  public static let parameters = [
    ParameterSpec(
      "suppression_db", unit: "dB", range: 0...60, default: 25,
      "Largest attenuation of the noise (0 leaves it; applied in whole dB).")
  ]

  /// The preprocessor and its FIFO (nil until prepared).
  private var engine: Engine?
  /// The suppression, in whole dB, the preprocessor was last given.
  private var appliedSuppression: Float = -1

  public init() {}

  /// The speexdsp frame. The preprocessor's output lags its input by one frame (its overlap-add
  /// synthesis) on top of the FIFO's frame: 5 ms frames make 10 ms of latency.
  public static let frameMilliseconds = 5.0

  /// Two frames: the FIFO's and the preprocessor's own.
  public var latencyFrames: Int { 2 * (engine?.buffers.frame ?? 0) }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    engine = Engine(
      frame: SpeexFrames.frameSize(sampleRate: sampleRate, milliseconds: Self.frameMilliseconds),
      sampleRate: Int32(sampleRate))
    appliedSuppression = -1
  }

  /// - Realtime: safe
  public mutating func reset() { engine?.buffers.reset() }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    guard let engine else { return }
    let suppression = p.current(0).rounded()
    if suppression != appliedSuppression {
      appliedSuppression = suppression
      engine.setSuppression(decibels: suppression)
    }
    let buffers = engine.buffers
    buffers.run(block) { _ in
      buffers.pendingToNear()
      _ = speex_preprocess_run(engine.state, buffers.near)
      buffers.setReady(from: buffers.near)
    }
  }

  /// Owns the speexdsp preprocessor state (freed with the last reference).
  /// Thread: created off the audio thread; used on it.
  final class Engine {
    let state: OpaquePointer
    let buffers: SpeexFrameBuffers
    /// A preallocated `spx_int32_t` for `speex_preprocess_ctl`'s argument.
    private let argument: UnsafeMutablePointer<Int32>

    init(frame: Int, sampleRate: Int32) {
      buffers = SpeexFrameBuffers(frame: frame)
      state = speex_preprocess_state_init(Int32(frame), sampleRate)
      argument = .allocate(capacity: 1)
      for (request, value) in [
        (SPEEX_PREPROCESS_SET_DENOISE, 1), (SPEEX_PREPROCESS_SET_AGC, 0),
        (SPEEX_PREPROCESS_SET_DEREVERB, 0),
      ] {
        argument.pointee = Int32(value)
        speex_preprocess_ctl(state, request, argument)
      }
    }

    deinit {
      speex_preprocess_state_destroy(state)
      argument.deallocate()
    }

    /// Sets the largest noise attenuation (speexdsp takes it as negative dB).
    /// - Realtime: safe
    func setSuppression(decibels: Float) {
      argument.pointee = -Int32(decibels)
      speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, argument)
    }
  }
}
