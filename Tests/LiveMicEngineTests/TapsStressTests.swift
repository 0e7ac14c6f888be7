import Foundation
import Synchronization
import Testing

@testable import LiveMicEngine

/// The tap rings under two-thread stress: the audio thread's `write` path on one thread, a
/// consumer on another, a million cycles of 1–64 frames each (a tenth under TSan, a quarter
/// under ASan: `Engine.stressCount`). Every frame carries its own index, so a lost, repeated,
/// reordered or torn frame shows; drops must be whole cycles, and exactly the frames counted.
@Suite struct TapsStressTests {
  /// Frame `k` of the stream: its index in two exactly representable floats.
  static func encode(_ k: Int) -> (Float, Float) { (Float(k & 0xFFFFF), Float(k >> 20)) }
  static func decode(_ left: Float, _ right: Float) -> Int { Int(right) << 20 | Int(left) }
  /// The frames of cycle `c` (1–64, varying).
  static func size(_ c: Int) -> Int { 1 + (c &* 37 &+ c / 7) % 64 }

  /// Rings the producer moved to in the resizing run.
  static let replacements = Atomic<Int>(0)

  struct Outcome {
    var received = 0
    var lost = 0
    var gaps = 0
    var problems: [String] = []
  }

  /// Runs the producer (cycles of `size`, waiting for room when `backPressure`) on a thread of
  /// its own and checks every frame here; `pause` makes the consumer slow now and then;
  /// `resizing` replaces the ring over and over from a third thread (as a freewheel does).
  static func run(cycles: Int, ringSeconds: Double, backPressure: Bool, pause: Bool, resizing: Bool = false)
    -> (Outcome, TapConsumer, Int)
  {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: ringSeconds, sampleRate: 48000)
    precondition(taps.attach(consumer))
    let total = (0..<cycles).reduce(0) { $0 + size($1) }
    // Frames read so far: the back pressure counts what is outstanding in all rings against
    // the smallest (`pendingFrames` may read a ring a resize frees meanwhile: not here).
    let consumed = Atomic<Int>(0)
    let room = consumer.capacityFrames
    let producer = Worker {
      let (left, right) = (
        UnsafeMutablePointer<Float>.allocate(capacity: 64), UnsafeMutablePointer<Float>.allocate(capacity: 64)
      )
      defer {
        left.deallocate()
        right.deallocate()
      }
      var k = 0
      for c in 0..<cycles {
        let n = size(c)
        for f in 0..<n { (left[f], right[f]) = encode(k + f) }
        if backPressure { while k + n - consumed.load(ordering: .acquiring) > room { sched_yield() } }
        taps.write(.output, left: left, right: right, frames: n)
        taps.finishCycle()
        k += n
      }
    }
    let resizer = Worker {
      var (n, capacity) = (0, consumer.capacityFrames)
      while resizing && !producer.isFinished {
        consumer.resize(seconds: n % 2 == 0 ? ringSeconds * 4 : ringSeconds)
        n += 1
        usleep(500)
        if consumer.capacityFrames != capacity { Self.replacements.add(1, ordering: .relaxed) }
        capacity = consumer.capacityFrames
      }
    }
    defer { resizer.wait() }
    var outcome = Outcome()
    let chunk = 4096
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * chunk)
    defer { buffer.deallocate() }
    // The cycle holding the next expected frame, and where it ends.
    var (expected, cycle, cycleEnd) = (0, 0, size(0))
    var reads = 0
    func note(_ problem: String) { if outcome.problems.count < 10 { outcome.problems.append(problem) } }
    while true {
      let finished = producer.isFinished
      let n = consumer.read(into: buffer, maxFrames: chunk)
      consumed.add(n, ordering: .releasing)
      if n == 0 && finished && consumer.pendingFrames == 0 { break }
      reads += 1
      if pause && reads % 500 == 0 { usleep(200) }
      for f in 0..<n {
        let j = decode(buffer[2 * f], buffer[2 * f + 1])
        if j != expected {
          if expected != cycleEnd - size(cycle) {
            note("frame \(j) inside cycle \(cycle), expected \(expected)")
          }
          while cycleEnd - size(cycle) < j {
            outcome.lost += size(cycle)
            cycle += 1
            cycleEnd += size(cycle)
          }
          if cycleEnd - size(cycle) != j { note("frame \(j) is not a cycle's first (cycle \(cycle))") }
          outcome.gaps += 1
          expected = j
        }
        expected += 1
        outcome.received += 1
        if expected == cycleEnd {
          cycle += 1
          cycleEnd += size(cycle)
        }
      }
    }
    producer.wait()
    if expected < total {  // the last cycles dropped
      if expected != cycleEnd - size(cycle) { note("the stream ends inside cycle \(cycle)") }
      outcome.lost += total - expected
      outcome.gaps += 1
    }
    return (outcome, consumer, total)
  }

  @Test("A million cycles through a ring the producer never overfills: every frame, in order")
  func noLoss() {
    let cycles = Engine.stressCount(1_000_000)
    let (outcome, consumer, total) = Self.run(
      cycles: cycles, ringSeconds: 0.05, backPressure: true, pause: true)
    #expect(outcome.problems.isEmpty, "\(outcome.problems)")
    #expect(outcome.received == total && outcome.lost == 0)
    #expect(consumer.droppedFrames.load(ordering: .relaxed) == 0)
    #expect(consumer.pushedFrames.load(ordering: .relaxed) == UInt64(total))
  }

  @Test("A million cycles while a third thread replaces the ring every 0.5 ms: every frame, in order")
  func noLossWhileResizing() {
    let cycles = Engine.stressCount(1_000_000)
    let (outcome, consumer, total) = Self.run(
      cycles: cycles, ringSeconds: 0.05, backPressure: true, pause: true, resizing: true)
    #expect(outcome.problems.isEmpty, "\(outcome.problems)")
    #expect(outcome.received == total && outcome.lost == 0)
    #expect(consumer.droppedFrames.load(ordering: .relaxed) == 0)
    let moved = Self.replacements.load(ordering: .relaxed)
    #expect(moved > 10, "the producer moved to a new ring \(moved) times")
    print(
      "[measured] tap ring stress while resizing: \(cycles) cycles, the producer moved rings \(moved) times")
  }

  @Test("A million cycles through a ring too small for a slow consumer: drops are whole cycles, all counted")
  func dropsAccounted() {
    let cycles = Engine.stressCount(1_000_000)
    let (outcome, consumer, total) = Self.run(
      cycles: cycles, ringSeconds: 0.001, backPressure: false, pause: true)
    let dropped = Int(consumer.droppedFrames.load(ordering: .relaxed))
    let pushed = Int(consumer.pushedFrames.load(ordering: .relaxed))
    #expect(outcome.problems.isEmpty, "\(outcome.problems)")
    #expect(dropped > 0, "the consumer was slow enough to make the ring overflow")
    #expect(outcome.lost == dropped, "frames missing \(outcome.lost), counted as dropped \(dropped)")
    #expect(outcome.received == pushed && pushed + dropped == total)
    print(
      "[measured] tap ring stress: \(cycles) cycles, \(total) frames, \(outcome.gaps) gaps, \(dropped) dropped"
    )
  }
}
