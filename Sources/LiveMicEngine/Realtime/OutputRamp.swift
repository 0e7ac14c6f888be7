import Synchronization

/// The gain at the very end of the chain that makes LiveMic start quiet, stop without a click
/// and mute: it moves towards 1 (running) or 0 (stopping, muted) along a squared ramp.
///
/// Thread: `apply` on the audio thread; `fadeIn`, `fadeOut`, `cut`, `isSilent` anywhere.
public final class OutputRamp: @unchecked Sendable {
  /// Length of the fade-in whenever audio starts.
  public static let fadeInSeconds: Double = 1.0
  /// Length of the fade-out on stop or mute.
  public static let fadeOutSeconds: Double = 0.05

  private let target = Atomic<UInt32>(1)
  /// Set by `cut`, taken by the next `apply`: the position drops to silence at once.
  private let cutRequested = Atomic<Bool>(false)
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
  /// Silences the output from the next cycle on, without a fade (and fades out, so it stays
  /// silent until `fadeIn`, which then ramps up from silence). For when a fade-out cannot be
  /// waited for: the audio thread is stalled and the output is about to reach new ears (the
  /// fallback of a lost route); the old target, gone, hears no click.
  public func cut() {
    target.store(0, ordering: .relaxed)
    cutRequested.store(true, ordering: .releasing)
  }
  /// True once the ramp has reached silence.
  public var isSilent: Bool { Float(bitPattern: positionBits.load(ordering: .acquiring)) == 0 }

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
    var p = position
    if cutRequested.load(ordering: .relaxed) && cutRequested.exchange(false, ordering: .acquiring) {
      p = 0
      position = 0
    }
    let goal: Float = target.load(ordering: .relaxed) == 1 ? 1 : 0
    if p == goal {
      if goal == 0 {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        alsoLeft?.update(repeating: 0, count: frames)
        alsoRight?.update(repeating: 0, count: frames)
      }
      // After the buffers: silence is reported only once a cut's cycle is silent. No store
      // while settled (the line stays shared with the threads that read it).
      if positionBits.load(ordering: .relaxed) != p.bitPattern {
        positionBits.store(p.bitPattern, ordering: .releasing)
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
    positionBits.store(p.bitPattern, ordering: .releasing)
  }

  /// Multiplies `left`/`right` by the squared ramp position, which moves from `start` by `step`
  /// a frame within 0...1, four frames at a time (each lane `start + k·step`, not a running sum);
  /// a position within half a step of 0 or 1 is that end exactly. Returns where it ended.
  /// - Realtime: safe
  @inline(__always)
  private static func ramp(
    _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames: Int, from start: Float,
    step: Float
  ) -> Float {
    let half = abs(step) * 0.5
    @inline(__always) func settle(_ x: SIMD4<Float>) -> SIMD4<Float> {
      var v = x
      v.replace(with: 0, where: v .< half)
      v.replace(with: 1, where: v .> 1 - half)
      return v
    }
    let (l, r) = (UnsafeMutableRawPointer(left), UnsafeMutableRawPointer(right))
    let lanes = SIMD4<Float>(1, 2, 3, 4) * step
    var p = start
    var f = 0
    while f &+ 4 <= frames {
      let position = settle(SIMD4(repeating: p) + lanes)
      let g = position * position
      l.storeBytes(
        of: l.loadUnaligned(fromByteOffset: 4 &* f, as: SIMD4<Float>.self) * g, toByteOffset: 4 &* f,
        as: SIMD4<Float>.self)
      r.storeBytes(
        of: r.loadUnaligned(fromByteOffset: 4 &* f, as: SIMD4<Float>.self) * g, toByteOffset: 4 &* f,
        as: SIMD4<Float>.self)
      p = position[3]
      f &+= 4
    }
    while f < frames {
      p = settle(SIMD4(repeating: p + step))[0]
      let g = p * p
      left[f] *= g
      right[f] *= g
      f &+= 1
    }
    return p
  }
}
