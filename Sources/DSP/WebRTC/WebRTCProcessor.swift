import CWebRTC
import Synchronization

/// One WebRTC audio-processing instance (libwebrtc-audio-processing, through the `CWebRTC`
/// shim) for the mono mean of a stereo block.
///
/// WebRTC's `ProcessStream` takes a mutex and may allocate, so in real time it runs on the
/// shim's helper thread, one real-time priority below JACK's client thread when the client runs
/// in real time (`ProcessingContext.helperPriority`, the chain's context at `prepare`): the audio
/// thread only writes preallocated rings, posts a semaphore and reads the output later by
/// `latencyFrames`: the 10 ms frame itself, then a frame of time for the helper or, at JACK
/// periods over 10 ms (480 frames at 48 kHz), a whole period
/// (`ProcessingContext.helperLatencyFrames(frameLength:)`; the session builds the chain again when the period
/// grows). A frame the helper has not finished in time is played dry and counted
/// (`lateFrames`). Offline
/// (`ProcessingContext.offline`) the frames are processed inline, deterministically, with the
/// same latency.
///
/// Thread: made off the audio thread; `run` on it.
final class WebRTCProcessor {
  let handle: OpaquePointer
  let latencyFrames: Int
  private let maxFrames: Int
  private let mono: UnsafeMutablePointer<Float>
  private let reference: UnsafeMutablePointer<Float>

  /// Offline (`context.isOffline`) the frames are processed inline.
  init?(sampleRate: Double, maxFrames: Int, features: Int32, context: ProcessingContext) {
    let frame = Int(sampleRate / 100)
    guard
      let handle = livemic_webrtc_create(
        Int32(sampleRate), features, Int32(context.helperLatencyFrames(frameLength: frame)),
        context.helperPriority, context.isOffline ? 1 : 0)
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
