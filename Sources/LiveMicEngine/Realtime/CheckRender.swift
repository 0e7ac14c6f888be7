import CJack
import DSP
import Dispatch
import Synchronization

/// A fixed stretch of noise rendered through a chain, one JACK period at a time, for `livemic
/// plugins check`: what the cycle of `CheckClient` runs. The noise, the work buffers and the
/// counters are made before activation; the audio thread only copies, runs the chain and stores
/// atomics, and signals `finished` once the last frame is through.
///
/// Thread: made and read on the checking (main) thread; `process` on the audio thread.
public final class CheckRender: @unchecked Sendable {
  /// What the render saw, read once it finished.
  public struct Result: Sendable, Equatable {
    /// Frames rendered and the blocks (process calls of the chain) they took.
    public var frames: Int
    public var blocks: Int
    /// The largest output magnitude, either channel.
    public var peak: Float
    /// Blocks whose output held a NaN or an infinity.
    public var nonFiniteBlocks: Int
  }

  let chain: VoiceChain
  let noiseLeft: UnsafeMutablePointer<Float>
  let noiseRight: UnsafeMutablePointer<Float>
  let left: UnsafeMutablePointer<Float>
  let right: UnsafeMutablePointer<Float>
  /// The longest block the chain is run with (the period at open).
  let capacity: Int
  /// How many frames of noise there are to render.
  public let totalFrames: Int
  /// The next frame to render (written by the audio thread only).
  let position = Atomic<Int>(0)
  let blocks = Atomic<Int>(0)
  let peakBits = Atomic<UInt32>(0)
  let nonFiniteBlocks = Atomic<Int>(0)
  let done = Atomic<Bool>(false)
  /// Signalled by the audio thread once, when the last frame is rendered.
  public let finished = DispatchSemaphore(value: 0)

  /// Makes `seconds` of white noise (uniform, ±`amplitude`, a different sequence per channel,
  /// the same every run) at `sampleRate` for `chain`, to be run in blocks of at most
  /// `maxFrames`. Not real-time.
  public init(chain: VoiceChain, sampleRate: Double, seconds: Double, maxFrames: Int, amplitude: Float = 0.25)
  {
    self.chain = chain
    totalFrames = max(1, Int((sampleRate * seconds).rounded()))
    capacity = max(maxFrames, 1)
    noiseLeft = .allocate(capacity: totalFrames)
    noiseRight = .allocate(capacity: totalFrames)
    left = .allocate(capacity: capacity)
    right = .allocate(capacity: capacity)
    left.initialize(repeating: 0, count: capacity)
    right.initialize(repeating: 0, count: capacity)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> Float {
      // xorshift64*, its top 24 bits as a uniform value in [-1, 1).
      state ^= state >> 12
      state ^= state << 25
      state ^= state >> 27
      let bits = (state &* 0x2545_F491_4F6C_DD1D) >> 40
      return Float(bits) / Float(1 << 23) - 1
    }
    for f in 0..<totalFrames {
      noiseLeft[f] = next() * amplitude
      noiseRight[f] = next() * amplitude
    }
  }

  deinit {
    noiseLeft.deallocate()
    noiseRight.deallocate()
    left.deallocate()
    right.deallocate()
  }

  /// Renders the next period's worth of noise through the chain (in blocks of at most the
  /// capacity); once every frame is through, signals `finished` and does nothing more.
  /// - Realtime: safe
  public func process(frames: jack_nframes_t) -> Int32 {
    _ = livemic_flush_denormals()
    if done.load(ordering: .relaxed) { return 0 }
    var remaining = Int(frames)
    var start = position.load(ordering: .relaxed)
    while remaining > 0 && start < totalFrames {
      let n = min(remaining, capacity, totalFrames &- start)
      left.update(from: noiseLeft + start, count: n)
      right.update(from: noiseRight + start, count: n)
      chain.process(left: left, right: right, frames: n)
      note(frames: n)
      start &+= n
      remaining &-= n
    }
    position.store(start, ordering: .relaxed)
    if start >= totalFrames {
      done.store(true, ordering: .releasing)
      finished.signal()
    }
    return 0
  }

  /// Counts one block of output: its peak and whether it is finite.
  /// - Realtime: safe
  @inline(__always)
  private func note(frames n: Int) {
    blocks.add(1, ordering: .relaxed)
    if !BlockMath.allFinite(left, right, n) { nonFiniteBlocks.add(1, ordering: .relaxed) }
    let peak = max(BlockMath.peakAndEnergy(left, n).peak, BlockMath.peakAndEnergy(right, n).peak)
    if peak > Float(bitPattern: peakBits.load(ordering: .relaxed)) {
      peakBits.store(peak.bitPattern, ordering: .relaxed)
    }
  }

  /// Runs one block through the whole path off the audio thread, so that its first-run costs
  /// are not paid in the first cycle, then starts again from the first frame. Not real-time;
  /// only before activation.
  func warm() {
    _ = process(frames: jack_nframes_t(min(capacity, totalFrames)))
    position.store(0, ordering: .relaxed)
    blocks.store(0, ordering: .relaxed)
    peakBits.store(0, ordering: .relaxed)
    nonFiniteBlocks.store(0, ordering: .relaxed)
    if done.exchange(false, ordering: .relaxed) { finished.wait() }
  }

  /// What the render saw so far (all of it once `finished` was signalled). Any thread.
  public var result: Result {
    Result(
      frames: position.load(ordering: .relaxed), blocks: blocks.load(ordering: .relaxed),
      peak: Float(bitPattern: peakBits.load(ordering: .relaxed)),
      nonFiniteBlocks: nonFiniteBlocks.load(ordering: .relaxed))
  }
}

/// The JACK process callback of the check client.
/// - Realtime: safe
func livemicCheckProcess(frames: jack_nframes_t, context: UnsafeMutableRawPointer?) -> Int32 {
  guard let context else { return 0 }
  return Unmanaged<CheckRender>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.process(frames: frames) }
}
