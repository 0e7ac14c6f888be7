import CSpeexDSP

/// What the speexdsp units share: their frame size, the float ↔ 16-bit conversion, and a
/// frame FIFO that turns LiveMic's sub-blocks into speexdsp's fixed frames.
///
/// speexdsp works on 16-bit frames of a fixed size. The units collect the mono input (the mean of
/// both channels) into a frame; once it is full it is processed and played out while the next
/// one is collected, so the output lags the input by exactly one frame (`latencyFrames`).
enum SpeexFrames {
  /// The frame length for `sampleRate`: the number nearest `milliseconds` whose only prime
  /// factors are 2, 3 and 5 (speexdsp's FFT sizes are twice the frame): for 10 ms, 480 at 48 kHz
  /// and 450 at 44.1 kHz.
  static func frameSize(sampleRate: Double, milliseconds: Double) -> Int {
    let target = max(Int((sampleRate * milliseconds / 1000).rounded()), 16)
    func smooth(_ n: Int) -> Bool {
      var m = n
      for p in [2, 3, 5] { while m % p == 0 { m /= p } }
      return m == 1
    }
    for d in 0..<target where smooth(target - d) || smooth(target + d) {
      return smooth(target - d) ? target - d : target + d
    }
    return 512
  }

  /// Full scale of the 16-bit frames: a float sample of 1 (0 dBFS) is 16384, so the units keep
  /// 6 dB of headroom above full scale before they clip.
  static let scale: Float = 16384

  /// A float sample as a 16-bit one: scaled, clamped, NaN as 0.
  /// - Realtime: safe
  @inline(__always)
  static func toInt16(_ x: Float) -> Int16 {
    let v = x * scale
    if v >= 32767 { return 32767 }
    if v <= -32768 { return -32768 }
    return v == v ? Int16(v.rounded()) : 0
  }
}

/// Preallocated buffers for one frame FIFO: the input frame being collected, the processed
/// frame being played out, and 16-bit scratch for speexdsp.
///
/// A class so that a unit (a value type) can own it and free it when the last copy goes: the
/// unit holds the only reference outside tests. Thread: the audio thread once prepared.
final class SpeexFrameBuffers {
  let frame: Int
  /// The mono input collected so far this frame.
  let pending: UnsafeMutablePointer<Float>
  /// The previous frame's processed output, played out while `pending` fills.
  let ready: UnsafeMutablePointer<Float>
  /// 16-bit scratch: the near-end frame, the reference frame, the output.
  let near: UnsafeMutablePointer<Int16>
  let far: UnsafeMutablePointer<Int16>
  let out: UnsafeMutablePointer<Int16>
  /// Position within the frame (0..<frame).
  var position = 0

  init(frame: Int) {
    self.frame = frame
    pending = .allocate(capacity: frame)
    ready = .allocate(capacity: frame)
    near = .allocate(capacity: frame)
    far = .allocate(capacity: frame)
    out = .allocate(capacity: frame)
    pending.initialize(repeating: 0, count: frame)
    ready.initialize(repeating: 0, count: frame)
    near.initialize(repeating: 0, count: frame)
    far.initialize(repeating: 0, count: frame)
    out.initialize(repeating: 0, count: frame)
  }

  deinit {
    pending.deallocate()
    ready.deallocate()
    near.deallocate()
    far.deallocate()
    out.deallocate()
  }

  /// Clears the FIFO (silence in flight).
  /// - Realtime: safe
  func reset() {
    pending.update(repeating: 0, count: frame)
    ready.update(repeating: 0, count: frame)
    position = 0
  }

  /// Runs a block through the FIFO: each frame's mono input (the mean of both channels) goes
  /// into `pending`, the output comes from `ready` and goes to both channels; when `pending` is
  /// full, `processFrame` (given the offset in the block where the frame ended) turns it into
  /// the next `ready` frame. Output frame n is input frame
  /// n − `frame`: the latency is exactly one frame.
  /// - Realtime: safe
  @inline(__always)
  func run(_ block: StereoBlock, processFrame: (_ endOffset: Int) -> Void) {
    var f = 0
    while f < block.frames {
      let n = min(block.frames - f, frame - position)
      let (p, r) = (pending + position, ready + position)
      for k in 0..<n {
        let (l, rr) = (block.left[f + k], block.right[f + k])
        p[k] = 0.5 * (l + rr)
        let y = r[k]
        block.left[f + k] = y
        block.right[f + k] = y
      }
      f += n
      position += n
      if position == frame {
        position = 0
        processFrame(f)
      }
    }
  }

  /// `pending` as 16-bit samples in `near`.
  /// - Realtime: safe
  @inline(__always)
  func pendingToNear() {
    for i in 0..<frame { near[i] = SpeexFrames.toInt16(pending[i]) }
  }

  /// 16-bit `samples` as the next `ready` frame.
  /// - Realtime: safe
  @inline(__always)
  func setReady(from samples: UnsafeMutablePointer<Int16>) {
    let s = 1 / SpeexFrames.scale
    for i in 0..<frame { ready[i] = Float(samples[i]) * s }
  }
}
