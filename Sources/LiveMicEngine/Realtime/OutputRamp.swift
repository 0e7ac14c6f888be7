import Synchronization

/// The gain at the very end of the chain that makes LiveMic start quiet, stop without a click
/// and mute: it moves towards 1 (running) or 0 (stopping, muted) along a squared ramp.
///
/// Thread: `apply` on the audio thread; `fadeIn`, `fadeOut`, `isSilent` anywhere.
public final class OutputRamp: @unchecked Sendable {
  /// Length of the fade-in whenever audio starts.
  public static let fadeInSeconds: Double = 1.0
  /// Length of the fade-out on stop or mute.
  public static let fadeOutSeconds: Double = 0.05

  private let target = Atomic<UInt32>(1)
  /// The position as last applied, as Float bits (for `isSilent`, and the tests).
  let positionBits = Atomic<UInt32>(0)
  private var position: Float = 0
  private let upStep: Float
  private let downStep: Float

  init(sampleRate: Double) {
    upStep = Float(1 / (Self.fadeInSeconds * sampleRate))
    downStep = Float(1 / (Self.fadeOutSeconds * sampleRate))
  }

  /// Ramps up from silence to full level (over `fadeInSeconds`).
  public func fadeIn() { target.store(1, ordering: .relaxed) }
  /// Ramps down to silence (over `fadeOutSeconds`).
  public func fadeOut() { target.store(0, ordering: .relaxed) }
  /// True once the ramp has reached silence.
  public var isSilent: Bool { Float(bitPattern: positionBits.load(ordering: .relaxed)) == 0 }

  /// Back to silence, as before the first cycle (after a warm-up run, or before audio resumes
  /// after a suspension). Only while the audio thread is not running.
  public func rewind() {
    position = 0
    positionBits.store(0, ordering: .relaxed)
  }

  /// - Realtime: safe
  @inline(__always)
  func apply(
    left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int,
    alsoLeft: UnsafeMutablePointer<Float>? = nil, alsoRight: UnsafeMutablePointer<Float>? = nil
  ) {
    let goal: Float = target.load(ordering: .relaxed) == 1 ? 1 : 0
    var p = position
    if p == goal {
      if goal == 0 {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        alsoLeft?.update(repeating: 0, count: frames)
        alsoRight?.update(repeating: 0, count: frames)
      }
      return
    }
    let step = goal > p ? upStep : -downStep
    if let alsoLeft, let alsoRight {
      // The same gains on the second pair (the monitor outputs), from the same position.
      _ = Self.ramp(alsoLeft, alsoRight, frames: frames, from: p, step: step)
    }
    p = Self.ramp(left, right, frames: frames, from: p, step: step)
    position = p
    positionBits.store(p.bitPattern, ordering: .relaxed)
  }

  /// Multiplies `left`/`right` by the squared ramp position, which moves from `start` by `step`
  /// a frame within 0...1; returns where it ended.
  /// - Realtime: safe
  @inline(__always)
  private static func ramp(
    _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames: Int, from start: Float,
    step: Float
  ) -> Float {
    var p = start
    for f in 0..<frames {
      p = min(max(p + step, 0), 1)
      let g = p * p
      let (l, r) = (left[f], right[f])
      left[f] = l * g
      right[f] = r * g
    }
    return p
  }
}
