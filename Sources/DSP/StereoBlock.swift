/// A view of one stereo sub-block of audio, processed in place.
///
/// The pointers belong to the caller; a unit reads and writes `frames` samples of each.
/// Thread: the audio thread (or the offline renderer), never stored beyond one call.
public struct StereoBlock {
  public let left: UnsafeMutablePointer<Float>
  public let right: UnsafeMutablePointer<Float>
  public let frames: Int

  /// - Realtime: safe
  @inline(__always)
  public init(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
    self.left = left
    self.right = right
    self.frames = frames
  }
}

/// The smoothed parameter values of one unit for one sub-block: the value at the end of the
/// previous sub-block and the value at the end of this one. Gain-like parameters interpolate
/// linearly between the two across the sub-block; others use `current`.
///
/// Thread: the audio thread, valid for one call.
public struct ParameterValues {
  @usableFromInline let previousValues: UnsafePointer<Float>
  @usableFromInline let currentValues: UnsafePointer<Float>

  /// - Realtime: safe
  @inline(__always)
  public init(previous: UnsafePointer<Float>, current: UnsafePointer<Float>) {
    previousValues = previous
    currentValues = current
  }

  /// The value at the end of this sub-block.
  /// - Realtime: safe
  @inline(__always)
  public func current(_ index: Int) -> Float { currentValues[index] }

  /// The value at the end of the previous sub-block.
  /// - Realtime: safe
  @inline(__always)
  public func previous(_ index: Int) -> Float { previousValues[index] }

  /// True when the value changed during this sub-block (a unit recomputes coefficients).
  /// - Realtime: safe
  @inline(__always)
  public func changed(_ index: Int) -> Bool { previousValues[index] != currentValues[index] }
}
