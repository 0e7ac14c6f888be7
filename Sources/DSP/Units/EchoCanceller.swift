import CSpeexDSP

/// Acoustic echo cancellation with speexdsp's echo canceller (MDF adaptive filter). Its far-end
/// (reference) signal is, by `reference` (`ReferenceChoice`): the music bed as mixed into the
/// output while it plays (`--music`: the rig's real echo is the music on the speakers leaking
/// into the microphone), else LiveMic's own final output (what the speakers play of the voice:
/// in a microphone-to-speaker rig that is the near-end voice itself a moment later, the feedback
/// suppressor's job more than an echo canceller's).
///
/// Mono, like `denoise`: the near end is the mean of both input channels, the reference the mean
/// of both reference channels, and the result goes to both channels. Latency: two 5 ms speexdsp
/// frames (the FIFO's and the residual echo suppressor's overlap-add), 480 frames = 10 ms at
/// 48 kHz, declared in `latencyFrames`. The adaptive filter models echo paths up to
/// `tailMilliseconds` long.
///
/// Timing: the chain hands its output to the unit after each block (`receiveReference`), so
/// while the unit processes block k it has the reference up to the start of block k only. Frame
/// [t, t + frame) of the microphone is therefore cancelled against the reference
/// [t − B, t − B + frame), B being the block size (JACK's period): always available, and no
/// later than any real echo (the sound of output sample i reaches the microphone's input at the
/// earliest one capture plus one playback period later, ≥ 2B). The filter thus models the echo
/// path minus B frames; a change of block size resets it. `reset` clears the filter and FIFOs.
///
/// After the canceller, speexdsp's residual echo suppressor (a preprocessor linked to the
/// canceller, its noise suppression at 0 dB so that it acts on echo only) attenuates what echo
/// is left by up to `residual_db`. It always runs, so that the latency does not depend on the
/// setting; at 0 dB it passes the signal unchanged (to 16-bit rounding). speexdsp takes whole
/// dB: the smoothed parameter is rounded and approached by at most 1 dB per speexdsp frame
/// (60 dB in 0.3 s), so a change never jumps the suppressor's gains.
public struct EchoCanceller: VoiceUnit {
  public static let typeName = "aec"
  public static let summary =
    "Echo cancellation (speexdsp) of the music bed (or LiveMic's own output) picked up by the microphone; mono, adds 10 ms of latency."
  public static let parameters = [
    ParameterSpec(
      "residual_db", unit: "dB", range: 0...60, default: 0,
      "Largest extra attenuation of the echo left after cancellation (0: none)."),
    ReferenceChoice.parameter,
  ]
  public static var wantsReference: Bool { true }

  /// Length of echo path the filter models.
  public static let tailMilliseconds = 200.0
  /// Reference history kept (frames, a power of two): the largest usable block size is this
  /// minus two speexdsp frames.
  static let referenceCapacity = 1 << 15

  private var engine: Engine?
  private var reference = ReferenceChoice()

  public init() {}

  /// The speexdsp frame.
  public static let frameMilliseconds = 5.0

  /// Two frames: the FIFO's and the residual suppressor's own.
  public var latencyFrames: Int { 2 * (engine?.buffers.frame ?? 0) }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    engine = Self.makeEngine(sampleRate: sampleRate, linearOnly: false)
    engine?.targetResidual = parameters.current(0)
  }

  /// An engine of `frameMilliseconds` frames modelling `tailMilliseconds` of echo path;
  /// `linearOnly` as for `Engine.init`. Not real-time.
  static func makeEngine(sampleRate: Double, linearOnly: Bool) -> Engine {
    let frame = SpeexFrames.frameSize(sampleRate: sampleRate, milliseconds: Self.frameMilliseconds)
    let tail = Int((Self.tailMilliseconds / 1000 * sampleRate / Double(frame)).rounded(.up)) * frame
    return Engine(frame: frame, tail: tail, sampleRate: Int32(sampleRate), linearOnly: linearOnly)
  }

  /// - Realtime: safe
  public mutating func reset() { engine?.reset() }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    guard let engine else { return }
    engine.targetResidual = p.current(0)
    reference.outputOnly = p.current(1) >= 0.5
    engine.process(block)
  }

  /// - Realtime: safe
  public mutating func receiveReference(_ block: StereoBlock, from source: ReferenceSource) {
    guard reference.accepts(source) else { return }
    engine?.receive(block)
  }

  /// Owns the speexdsp states, the frame FIFO and the reference ring.
  /// Thread: created off the audio thread; used on it.
  final class Engine {
    let echo: OpaquePointer
    /// The residual echo suppressor; nil for a `linearOnly` engine.
    let residual: OpaquePointer?
    let buffers: SpeexFrameBuffers
    /// The reference, 16-bit, indexed by frame number modulo `referenceCapacity`.
    private let ring: UnsafeMutablePointer<Int16>
    private let argument: UnsafeMutablePointer<Int32>
    /// Frames of near-end (microphone) and reference signal seen; equal after every block
    /// while the stage runs (both count the chain's frames).
    var nearTotal = 0
    private var referenceTotal = 0
    /// How far behind the near end the reference frame is taken: the last block size.
    private var lag = 0

    /// speexdsp's DC notch (`filter_dc_notch16` in mdf.c, float build): its radius for the
    /// sample rate, its second coefficient, and its two state values (cleared when speexdsp's
    /// state is).
    private let notchRadius: Float
    private let notchDen2: Float
    private var notchMemory: (Float, Float) = (0, 0)

    /// `linearOnly`: only the adaptive filter, the band under speexdsp's DC notch added back
    /// and no residual suppressor (one frame of latency, not two): the first stage of
    /// `webrtc-aec`. Not real-time.
    init(frame: Int, tail: Int, sampleRate: Int32, linearOnly: Bool = false) {
      let radius: Float = sampleRate < 12000 ? 0.9 : sampleRate < 24000 ? 0.982 : 0.992
      notchRadius = radius
      notchDen2 = Float(Double(radius * radius) + 0.7 * Double((1 - radius) * (1 - radius)))
      buffers = SpeexFrameBuffers(frame: frame)
      echo = speex_echo_state_init(Int32(frame), Int32(tail))
      residual = linearOnly ? nil : speex_preprocess_state_init(Int32(frame), sampleRate)
      ring = .allocate(capacity: EchoCanceller.referenceCapacity)
      ring.initialize(repeating: 0, count: EchoCanceller.referenceCapacity)
      argument = .allocate(capacity: 1)
      argument.pointee = sampleRate
      speex_echo_ctl(echo, SPEEX_ECHO_SET_SAMPLING_RATE, argument)
      guard let residual else { return }
      for (request, value) in [
        (SPEEX_PREPROCESS_SET_DENOISE, 1), (SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, 0),
        (SPEEX_PREPROCESS_SET_AGC, 0), (SPEEX_PREPROCESS_SET_DEREVERB, 0),
      ] {
        argument.pointee = Int32(value)
        speex_preprocess_ctl(residual, request, argument)
      }
      speex_preprocess_ctl(residual, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
    }

    deinit {
      if let residual { speex_preprocess_state_destroy(residual) }
      speex_echo_state_destroy(echo)
      ring.deallocate()
      argument.deallocate()
    }

    /// - Realtime: safe
    func reset() {
      buffers.reset()
      ring.update(repeating: 0, count: EchoCanceller.referenceCapacity)
      speex_echo_state_reset(echo)
      notchMemory = (0, 0)
      nearTotal = 0
      referenceTotal = 0
    }

    /// The residual suppression asked for (dB, the smoothed parameter).
    var targetResidual: Float = 0
    /// The suppression speexdsp has (whole dB; -1 before the first frame).
    private var appliedResidual: Int32 = -1

    /// Moves the residual echo suppression towards `targetResidual` by at most
    /// `residualStepDecibels` (the first time, straight to it).
    /// - Realtime: safe
    func stepResidual() {
      let target = Int32(targetResidual.rounded())
      guard let residual, target != appliedResidual else { return }
      let next =
        appliedResidual < 0
        ? target
        : appliedResidual + max(min(target - appliedResidual, residualStepDecibels), -residualStepDecibels)
      appliedResidual = next
      argument.pointee = -next
      speex_preprocess_ctl(residual, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, argument)
      speex_preprocess_ctl(residual, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, argument)
    }

    /// Largest change of the residual suppression per speexdsp frame.
    let residualStepDecibels: Int32 = 1

    /// Cancels the echo in the frame of near-end signal that ended at frame number `frameEnd`.
    /// - Realtime: safe
    func cancel(frameEnd: Int) {
      let frame = buffers.frame
      buffers.pendingToNear()
      // The reference frame `lag` frames earlier, if it is all in the ring (else silence: before
      // the first block's reference arrives, or after a bypass).
      let start = frameEnd &- frame &- lag
      let mask = EchoCanceller.referenceCapacity - 1
      if lag > 0 && start >= 0 && start &+ frame <= referenceTotal
        && referenceTotal &- start <= EchoCanceller.referenceCapacity
      {
        for i in 0..<frame { buffers.far[i] = ring[(start &+ i) & mask] }
      } else {
        buffers.far.update(repeating: 0, count: frame)
      }
      stepResidual()
      speex_echo_cancellation(echo, buffers.near, buffers.far, buffers.out)
      if let residual {
        _ = speex_preprocess_run(residual, buffers.out)
      } else {
        restoreNotchedBand()
      }
      buffers.setReady(from: buffers.out)
    }

    /// Cancels the echo in a block of near-end signal, in place (through the frame FIFO).
    /// - Realtime: safe
    func process(_ block: StereoBlock) {
      let start = nearTotal
      buffers.run(block) { end in self.cancel(frameEnd: start &+ end) }
      nearTotal = start &+ block.frames
    }

    /// speexdsp's canceller passes its near end through a DC notch before it cancels (a second-
    /// order high-pass near 50 Hz at 48 kHz: radius 0.992, 0.982 under 24 kHz, 0.9 under
    /// 12 kHz), which took 0.7 dB off a voice's band below 300 Hz whether or not there was any
    /// echo. Without a residual suppressor (`linearOnly`) this runs the same notch on the same near-end frame and adds
    /// back what it removed, so the frame leaves as the microphone minus the echo estimate, and
    /// the music's echo below the notch is left to the next stage. (The built-in `aec` keeps
    /// the notch: it is most of what it removes of a music bed's sub-bass.)
    /// - Realtime: safe
    @inline(__always)
    private func restoreNotchedBand() {
      let (radius, den2) = (notchRadius, notchDen2)
      var (m0, m1) = notchMemory
      for i in 0..<buffers.frame {
        let vin = Float(buffers.near[i])
        let vout = m0 + vin
        m0 = m1 + 2 * (-vin + radius * vout)
        m1 = vin - den2 * vout
        let restored = Float(buffers.out[i]) + (vin - radius * vout)
        buffers.out[i] = Int16(max(min(restored.rounded(), 32767), -32768))
      }
      notchMemory = (m0, m1)
    }

    /// Stores a block of the reference in the ring.
    /// - Realtime: safe
    func receive(_ block: StereoBlock) {
      let mask = EchoCanceller.referenceCapacity - 1
      // The stage did not process this whole block (it was bypassed, or reset mid-block): the
      // two counts no longer describe the same frames; start the near end again from here.
      if nearTotal != referenceTotal &+ block.frames {
        nearTotal = referenceTotal &+ block.frames
        speex_echo_state_reset(echo)
        notchMemory = (0, 0)
      }
      for f in 0..<block.frames {
        ring[(referenceTotal &+ f) & mask] = SpeexFrames.toInt16(0.5 * (block.left[f] + block.right[f]))
      }
      referenceTotal &+= block.frames
      // The lag must be at least the block size (the reference is there up to the block's start)
      // and at most twice it (the earliest echo: one capture plus one playback period). A block
      // within those bounds keeps the lag and the filter: a short last block or a split block
      // (an offline render) does not reset the canceller, which re-exposed the echo at once (a
      // 0.107 step in the output, first blamed on `residual_db`).
      let size = min(block.frames, EchoCanceller.referenceCapacity - 2 * buffers.frame)
      let newLag = size > lag || 2 * size < lag ? size : lag
      if newLag != lag {
        lag = newLag
        speex_echo_state_reset(echo)
      }
    }
  }
}
