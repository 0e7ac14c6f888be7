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
///
/// Held sounds: speexdsp learns any sound that lasts as noise, so a sung note, a held vowel or
/// a solo line sank by 10 dB over 4 s. With `keep_held` on (the default), a `HarmonicGuard`
/// watches the input; while a held voiced sound goes on (and for `releaseFrames` after it), the
/// unit steps aside: it plays the sound itself, delayed like speexdsp's output, crossfaded over
/// one frame. speexdsp keeps running on every frame (its state follows the input as before; a
/// note it learnt as noise only makes it take the noise after the note down harder). Speech's voiced
/// stretches are mostly shorter than the guard's 250 ms, so speech in noise is suppressed as before;
/// broadband noise is never periodic, and a machine's hum holds its pitch too still to count.
///
/// Noise that stops: speexdsp's estimate falls slowly after a burst of noise ends, and would take
/// the speech after it down with noise that is gone; a `RemovalLimit` holds what a frame loses to
/// what the input's recent floor says noise can be, and a `StaleEstimate` gives back all of it
/// while the input's quietest frame of the last 0.5 s was quieter than the estimate allows
/// (bursts of pink noise: SI-SDR −0.17 → −0.07 → +0.00 dB against the noisy input at 0 dB SNR;
/// steady noise unchanged). Given back in full, the input passes bit for bit.
///
/// Short bursts: a click, a clap or 100 ms of hiss is over before speexdsp has learnt it, so it
/// took next to nothing out of them. A frame `BurstGuard` calls a burst (broadband, sudden,
/// short) goes to speexdsp `burstScale` (26 dB) down and its output comes back up as much:
/// speexdsp weighs it against its estimate raised 26 dB and takes out what that covers (short
/// bursts of white noise: SI-SDR −0.012 → +0.069 dB against the noisy input at 0 dB SNR).
///
/// Below 300 Hz speexdsp's 100 Hz bins leave steady noise only 5–13 dB down; a `LowBandGate`
/// after it takes that band down by up to `suppression_db` − 5 dB more while the input holds
/// only steady noise (no voice, no held sound), and passes speexdsp's output as it is otherwise.
public struct Denoise: VoiceUnit {
  public static let typeName = "denoise"
  public static let summary =
    "Noise suppression (speexdsp) of steady background noise; mono (both channels get the processed mean), adds 10 ms of latency."
  public static let parameters = [
    ParameterSpec(
      "suppression_db", unit: "dB", range: 0...60, default: 25,
      "Largest attenuation of the noise (0 leaves it; applied in whole dB)."),
    .toggle(
      "keep_held", default: true,
      "Keeps held voiced sounds (a sung note, a held vowel, a solo line) from being learnt as noise: while one goes on, the denoiser steps aside."
    ),
  ]

  /// The preprocessor and its FIFO (nil until prepared).
  private var engine: Engine?
  /// The suppression, in whole dB, the preprocessor was last given.
  private var appliedSuppression: Float = -1

  public init() {}

  /// The speexdsp frame. The preprocessor's output lags its input by one frame (its overlap-add
  /// synthesis) on top of the FIFO's frame: 5 ms frames make 10 ms of latency.
  public static let frameMilliseconds = 5.0

  /// How far down a short burst (`BurstGuard`) is given to speexdsp, whose output is raised as
  /// much (26 dB).
  static let burstScale: Float = 0.05

  /// Two frames: the FIFO's and the preprocessor's own.
  public var latencyFrames: Int { 2 * (engine?.buffers.frame ?? 0) }

  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {
    engine = Engine(
      frame: SpeexFrames.frameSize(sampleRate: sampleRate, milliseconds: Self.frameMilliseconds),
      sampleRate: Int32(sampleRate))
    appliedSuppression = -1
  }

  /// - Realtime: safe
  public mutating func reset() { engine?.reset() }

  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {
    guard let engine else { return }
    let suppression = p.current(0).rounded()
    if suppression != appliedSuppression {
      appliedSuppression = suppression
      engine.setSuppression(decibels: suppression)
    }
    let keepHeld = p.current(1) >= 0.5
    let buffers = engine.buffers
    buffers.run(block) { _ in
      let burst = engine.bursts.isBurst(buffers.pending, count: buffers.frame)
      engine.step(held: engine.guardian.feed(buffers.pending, count: buffers.frame) && keepHeld, burst: burst)
    }
  }

  /// Owns the speexdsp preprocessor state (freed with the last reference), the frame FIFO and
  /// the held-sound guard.
  /// Thread: created off the audio thread; used on it.
  final class Engine {
    let state: OpaquePointer
    let buffers: SpeexFrameBuffers
    /// Watches for held voiced sounds.
    let guardian: HarmonicGuard
    /// Takes the steady noise speexdsp leaves below 150 Hz down further.
    let lowBand: LowBandGate
    /// A preallocated `spx_int32_t` for `speex_preprocess_ctl`'s argument.
    private let argument: UnsafeMutablePointer<Int32>
    /// The previous frame's input: what speexdsp's output of this frame corresponds to (its
    /// overlap-add lags one frame), played instead of it while a held sound goes on.
    private let lastPending: UnsafeMutablePointer<Float>
    /// Whose output the FIFO plays: speexdsp's, or the input's (stepped aside).
    private var aside = false
    /// Frames since a held sound was last seen (`Int.max`: never).
    private var framesSinceHeld = Int.max
    /// Frames the unit stays aside after a held sound ends (400 ms: a breath between phrases).
    let releaseFrames: Int
    /// Limits what speexdsp takes out of a frame to what noise the input can still hold.
    let removal: RemovalLimit
    /// Watches speexdsp's noise estimate against the input's recent floor.
    let staleness: StaleEstimate
    /// Tells short broadband bursts, given to speexdsp `burstScale` down.
    let bursts: BurstGuard
    /// The scale speexdsp's input had at the end of the last frame, and at its start: the last
    /// frame's ramp, which its output (a frame later) is divided by.
    private var scaleEnd: Float = 1
    private var scaleStart: Float = 1

    init(frame: Int, sampleRate: Int32) {
      buffers = SpeexFrameBuffers(frame: frame)
      guardian = HarmonicGuard(sampleRate: Double(sampleRate))
      lowBand = LowBandGate(frame: frame, sampleRate: Double(sampleRate))
      releaseFrames = max(Int(0.4 * Double(sampleRate) / Double(frame)), 1)
      removal = RemovalLimit(frame: frame, sampleRate: Double(sampleRate))
      bursts = BurstGuard(frame: frame, sampleRate: Double(sampleRate))
      lastPending = .allocate(capacity: frame)
      lastPending.initialize(repeating: 0, count: frame)
      state = speex_preprocess_state_init(Int32(frame), sampleRate)
      staleness = StaleEstimate(state: state, frame: frame, sampleRate: Double(sampleRate))
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
      lastPending.deallocate()
    }

    /// Clears the FIFO and the guard (the noise estimate stays).
    /// - Realtime: safe
    func reset() {
      buffers.reset()
      guardian.reset()
      lowBand.reset()
      removal.reset()
      staleness.reset()
      bursts.reset()
      (scaleStart, scaleEnd) = (1, 1)
      lastPending.update(repeating: 0, count: buffers.frame)
      (aside, framesSinceHeld) = (false, Int.max)
    }

    /// Sets the largest noise attenuation (speexdsp takes it as negative dB).
    /// - Realtime: safe
    func setSuppression(decibels: Float) {
      lowBand.depthDecibels = max(0, decibels - 5)
      argument.pointee = -Int32(decibels)
      speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, argument)
    }

    /// Turns the full `pending` frame into the next `ready` frame: speexdsp's output, or, while
    /// a held sound goes on (`held`, and `releaseFrames` after), the previous input frame;
    /// crossfaded over a frame at each change. speexdsp runs on every frame either way, so its
    /// state and noise estimate follow the input as they always did; a frame of a short burst
    /// (`burst`) it gets `burstScale` down, the scale ramping over a frame.
    /// - Realtime: safe
    func step(held: Bool, burst: Bool = false) {
      framesSinceHeld = held ? 0 : (framesSinceHeld == Int.max ? Int.max : framesSinceHeld + 1)
      let wantAside = framesSinceHeld <= releaseFrames
      runSpeex(scaleGoal: burst ? Denoise.burstScale : 1)
      let ready = buffers.ready
      let trust = staleness.smoothedTrust()
      removal.limit(ready, input: lastPending, newest: buffers.pending, trust: trust)
      switch (aside, wantAside) {
      case (false, false): break
      case (false, true): fade(ready, into: lastPending)
      case (true, true): ready.update(from: lastPending, count: buffers.frame)
      case (true, false): fade(lastPending, into: ready)
      }
      aside = wantAside
      lowBand.process(ready, input: lastPending, open: wantAside || trust == 0)
      lastPending.update(from: buffers.pending, count: buffers.frame)
    }

    /// One frame through speexdsp into `ready`, its input scaled from the last frame's end
    /// scale to `scaleGoal` (linearly) and its output, which is the previous frame's, divided by
    /// that frame's scale.
    /// - Realtime: safe
    @inline(__always)
    private func runSpeex(scaleGoal: Float) {
      let frame = buffers.frame
      let (start, end) = (scaleEnd, scaleGoal)
      if start == 1 && end == 1 {
        buffers.pendingToNear()
      } else {
        let step = (end - start) / Float(frame)
        for i in 0..<frame {
          buffers.near[i] = SpeexFrames.toInt16(buffers.pending[i] * (start + step * Float(i + 1)))
        }
      }
      _ = speex_preprocess_run(state, buffers.near)
      buffers.setReady(from: buffers.near)
      let (lastStart, lastEnd) = (scaleStart, scaleEnd)
      if lastStart != 1 || lastEnd != 1 {
        let ready = buffers.ready
        let step = (lastEnd - lastStart) / Float(frame)
        for i in 0..<frame { ready[i] /= lastStart + step * Float(i + 1) }
      }
      (scaleStart, scaleEnd) = (start, end)
    }

    /// `ready` = `from` fading out into `to` over the frame (linear; either may be `ready`).
    /// - Realtime: safe
    @inline(__always)
    private func fade(_ from: UnsafeMutablePointer<Float>, into to: UnsafeMutablePointer<Float>) {
      let (ready, frame) = (buffers.ready, buffers.frame)
      let step = 1 / Float(frame)
      for i in 0..<frame {
        let t = Float(i + 1) * step
        ready[i] = from[i] + (to[i] - from[i]) * t  // exact where the two agree
      }
    }
  }
}
