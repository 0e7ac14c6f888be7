import CJack
import Foundation
import Synchronization

/// What a decaying tail costs per cycle against silence, for code with no denormal guard of
/// its own (as a hosted plugin's may be), with and without the process thread's flush-to-zero
/// and denormals-are-zero mode (`livemic_flush_denormals`). For `livemic bench` and the engine
/// tests; never real-time.
///
/// The stand-in for a plugin is a bank of `filters` one-pole low-passes (`y = a·y + b·x`, poles
/// 0.999 to 0.99902) on a cycle of `frames` frames. The tail: an impulse decays through the bank
/// until, without the mode, every state is subnormal for the whole measured cycle (the state
/// passes ~2²³ subnormal values per octave of decay); with the mode it is zero there. Silence:
/// every state and input zero. Each figure is the fastest of `trials` cycles, so a preempted
/// cycle cannot raise it.
///
/// Thread: any non-real-time thread (each measurement runs on a thread of its own, so the
/// caller's floating-point mode is left as it was).
public struct DenormalCost: Sendable {
  /// Per-cycle cost, in nanoseconds, of silence and of the tail, on one thread.
  public struct Figures: Sendable {
    public var silenceNanoseconds: Double
    public var tailNanoseconds: Double
    /// Whether every state of the bank was subnormal from the first to the last sample of every
    /// measured tail cycle (the mode off): the proof that the tail measured what it means to.
    public var tailWasSubnormal: Bool
    /// Tail over silence.
    public var ratio: Double { tailNanoseconds / max(silenceNanoseconds, 1) }
  }

  public var filters = 64
  public var frames = 256
  public var trials = 200

  public init() {}

  /// Measures with the mode set (`flushed` true: as on LiveMic's process thread) or cleared, on
  /// a new thread. Nil when the mode cannot be set or cleared on this CPU.
  public func measure(flushed: Bool) -> Figures? {
    let result = Mutex<Figures?>(nil)
    let run = self
    let thread = Thread {
      if flushed && livemic_flush_denormals() != 1 { return }
      // A new thread inherits its creator's mode (a test thread may have run a cycle).
      if !flushed {
        livemic_keep_denormals()
        if livemic_denormals_flushed() != 0 { return }
      }
      let figures = run.figures()
      result.withLock { $0 = figures }
    }
    thread.stackSize = 1 << 20
    thread.start()
    while !thread.isFinished { usleep(1000) }
    return result.withLock { $0 }
  }

  /// The decay's length before the measured cycle: ln(2⁻¹²⁶)/ln(pole) samples of the
  /// slowest-decaying filter's impulse response (`b·aⁿ`, b < 1) take it below the smallest
  /// normal float; the poles lie close enough that the fastest is still above the smallest
  /// subnormal (2⁻¹⁴⁹) a cycle later.
  private func samplesToTail(poles: [Float]) -> Int {
    let slowest = Double(poles.max() ?? 0.999)
    return Int((log(Double(Float.leastNormalMagnitude)) / log(slowest)).rounded(.up))
  }

  private func figures() -> Figures {
    // Poles between 0.999 and 0.99902 (a 20 ms decay at 48 kHz), unity DC gain.
    let poles = (0..<filters).map { Float(0.999) + Float($0) * Float(0.00002) / Float(max(filters, 1)) }
    let gains = poles.map { 1 - $0 }
    var state = [Float](repeating: 0, count: filters)
    var input = [Float](repeating: 0, count: frames)
    var output = [Float](repeating: 0, count: frames)
    let clock = ContinuousClock()
    let lead = samplesToTail(poles: poles)
    // The tail's states are the bank's after an impulse and `lead` samples of silence: a
    // fixed point for every trial (computed once, in full precision: the mode may be on here).
    let tailStart = poles.map { pole -> Float in
      Float(pow(Double(pole), Double(lead)) * Double(1 - pole) / Double(Float.leastNormalMagnitude))
    }
    var silence = Double.infinity
    var tail = Double.infinity
    var subnormal = false
    for trial in 0..<(2 * trials) {
      let isTail = trial % 2 == 1
      for i in 0..<filters {
        // Scaled back down at run time (the optimizer cannot fold it): exactly the tail's value,
        // or zero where the mode flushes it.
        state[i] = isTail ? tailStart[i] * Float.leastNormalMagnitude : 0
      }
      let subnormalBefore = state.allSatisfy { $0.isSubnormal }
      let elapsed = clock.measure {
        Self.cycle(&state, poles, gains, &input, &output, frames)
      }
      // Subnormal from the cycle's first sample to its last (the decay is monotonic).
      if isTail {
        subnormal = (trial == 1 || subnormal) && subnormalBefore && state.allSatisfy { $0.isSubnormal }
      }
      let nanoseconds =
        Double(elapsed.components.attoseconds) * 1e-9 + Double(elapsed.components.seconds) * 1e9
      if isTail { tail = min(tail, nanoseconds) } else { silence = min(silence, nanoseconds) }
    }
    return Figures(silenceNanoseconds: silence, tailNanoseconds: tail, tailWasSubnormal: subnormal)
  }

  /// One cycle of the bank: every filter over every frame, summed into `output`.
  @inline(never)
  private static func cycle(
    _ state: inout [Float], _ poles: [Float], _ gains: [Float], _ input: inout [Float],
    _ output: inout [Float], _ frames: Int
  ) {
    state.withUnsafeMutableBufferPointer { s in
      poles.withUnsafeBufferPointer { a in
        gains.withUnsafeBufferPointer { b in
          input.withUnsafeMutableBufferPointer { x in
            output.withUnsafeMutableBufferPointer { y in
              for n in 0..<frames { y[n] = 0 }
              for i in 0..<s.count {
                var v = s[i]
                let pole = a[i]
                let gain = b[i]
                for n in 0..<frames {
                  v = pole * v + gain * x[n]
                  y[n] += v
                }
                s[i] = v
              }
            }
          }
        }
      }
    }
  }

  /// What a decaying tail costs against silence in code with no denormal guard (as a hosted
  /// plugin's may be), with and without the flush-to-zero mode LiveMic's process thread runs in.
  public static func report() -> String {
    let cost = Self()
    var text =
      "Denormals: an unguarded bank of \(cost.filters) one-pole filters (as a plugin's may be), "
      + "cycles of \(cost.frames) frames, the fastest of \(cost.trials) of each\n\n"
    text +=
      "| floating-point mode | silence (µs per cycle) | decaying tail (µs per cycle) | tail / silence |\n"
    text += "|---|---:|---:|---:|\n"
    for (label, flushed) in [
      ("IEEE subnormals (a thread's default)", false),
      ("flush-to-zero + denormals-are-zero (LiveMic's process thread)", true),
    ] {
      guard let figures = cost.measure(flushed: flushed) else {
        text += "| \(label) | — | — | not available on this CPU |\n"
        continue
      }
      text +=
        "| \(label) | " + String(format: "%.1f", figures.silenceNanoseconds / 1000) + " | "
        + String(format: "%.1f", figures.tailNanoseconds / 1000) + " | "
        + String(format: "%.2f×", figures.ratio) + " |\n"
    }
    return text
  }
}
