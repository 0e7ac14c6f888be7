/// Offline use of a chain over whole arrays: the renderer, the response plot, the benchmark and
/// the tests.
extension VoiceChain {
  /// Processes `frames` frames of `left` and `right` from `start` (to their end when nil) in
  /// place, `blockFrames` at a time. Thread: any but the audio thread (it may copy the arrays).
  public func process(
    left: inout [Float], right: inout [Float], blockFrames: Int, from start: Int = 0, frames: Int? = nil
  ) {
    let end = min(left.count, right.count, start + (frames ?? left.count - start))
    guard start < end, blockFrames > 0 else { return }
    left.withUnsafeMutableBufferPointer { l in
      right.withUnsafeMutableBufferPointer { r in
        guard let l = l.baseAddress, let r = r.baseAddress else { return }
        var offset = start
        while offset < end {
          let n = min(blockFrames, end - offset)
          process(left: l + offset, right: r + offset, frames: n)
          offset += n
        }
      }
    }
  }
}
