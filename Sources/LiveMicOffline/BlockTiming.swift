import DSP
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Per-block processing time of a chain: what a small JACK period feels. A mean hides the one
/// cycle where a frame-based unit does a whole frame's work; the worst block is what decides
/// an xrun.
///
/// Thread: any but an audio thread (it starts its own measuring thread).
public enum BlockTiming {
  /// Mean, 99th percentile and largest time of one block, in µs.
  public struct Figures: Sendable {
    public var meanMicroseconds: Double
    public var p99Microseconds: Double
    public var maxMicroseconds: Double
    /// The worst block over the 99th percentile (issue 36's rule: at most 2 at 16 and 32 frames).
    public var worstOverP99: Double { p99Microseconds > 0 ? maxMicroseconds / p99Microseconds : 0 }
  }

  /// The block sizes `livemic bench` times (frames; 16 is 333 µs at 48 kHz).
  public static let blockSizes = [16, 32, 64, 256]

  /// Identical runs whose per-block least time is taken: what the machine adds to a block (an
  /// interrupt, another process, the hypervisor) differs from run to run, the chain's own work
  /// (a frame completing, an FFT) falls on the same block every run.
  public static let runs = 3

  /// Times every block of `blockFrames` frames of `left`/`right` through each of `chains` (equal
  /// chains, each over a copy of the same audio, one after the other, after one second of
  /// warm-up) on the calling thread, and returns the figures of the per-block least times and
  /// the largest time any run measured.
  static func measure(
    _ chains: [VoiceChain], left: [Float], right: [Float], blockFrames: Int, seconds: Double,
    sampleRate: Double
  ) -> (Figures, rawMaxMicroseconds: Double) {
    let warm = Int(sampleRate)
    let frames = min(left.count, Int(seconds * sampleRate) + warm)
    let blocks = max((frames - warm) / blockFrames, 1)
    var least = [UInt64](repeating: .max, count: blocks)
    var rawMax: UInt64 = 0
    for chain in chains {
      var l = left
      var r = right
      l.withUnsafeMutableBufferPointer { lb in
        r.withUnsafeMutableBufferPointer { rb in
          guard let lp = lb.baseAddress, let rp = rb.baseAddress else { return }
          var offset = 0
          while offset + blockFrames <= warm {
            chain.process(left: lp + offset, right: rp + offset, frames: blockFrames)
            offset += blockFrames
          }
          least.withUnsafeMutableBufferPointer { t in
            var rested = now()
            for b in 0..<blocks where offset + blockFrames <= frames {
              let started = now()
              chain.process(left: lp + offset, right: rp + offset, frames: blockFrames)
              let spent = now() &- started
              t[b] = min(t[b], spent)
              rawMax = max(rawMax, spent)
              offset += blockFrames
              // The kernel throttles a SCHED_FIFO thread that runs for most of a second
              // (sched_rt_runtime_us): rest 2 ms every 20 ms, as an audio thread rests each cycle.
              if started &- rested > 20_000_000 {
                var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
                nanosleep(&pause, nil)
                rested = now()
              }
            }
          }
        }
      }
    }
    let sorted = least.filter { $0 != .max }.sorted()
    let sum = sorted.reduce(0.0) { $0 + Double($1) }
    let p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
    let figures = Figures(
      meanMicroseconds: sum / Double(max(sorted.count, 1)) / 1000, p99Microseconds: Double(p99) / 1000,
      maxMicroseconds: Double(sorted.last ?? 0) / 1000)
    return (figures, Double(rawMax) / 1000)
  }

  @inline(__always)
  static func now() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
  }

  /// Runs `body` on a new thread at SCHED_FIFO `priority` when the system grants it (as JACK's
  /// client thread runs), otherwise at normal priority; returns its result and whether it ran
  /// real-time.
  static func onRealtimeThread<T: Sendable>(priority: Int32 = 70, _ body: @escaping @Sendable () -> T) -> (
    T, realtime: Bool
  ) {
    // The thread always stores a value before it signals.
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
      var parameters = sched_param()
      parameters.sched_priority = priority
      box.realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0
      box.value = body()
      done.signal()
    }
    thread.stackSize = 1 << 20
    thread.start()
    done.wait()
    guard let value = box.value else { preconditionFailure("the measuring thread stored no result") }
    return (value, box.realtime)
  }
}

/// The measuring thread's result, read after it signals.
private final class ResultBox<T>: @unchecked Sendable {
  var value: T?
  var realtime = false
}
