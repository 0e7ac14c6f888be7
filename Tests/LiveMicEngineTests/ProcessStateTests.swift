import CJack
import DSP
import Foundation
import Testing

@testable import LiveMicEngine

/// `ProcessState.run` driven with fake port buffers: the signal path, the counters, the chain
/// crossfade, the warm-up run.
@Suite struct ProcessStateTests {
  typealias E = Engine

  @Test("A cycle runs the input through the chain to the outputs, a mono input to both")
  func signalPath() {
    let (state, io) = E.openState(E.chain(gain: 0.5), left: 0.25, right: -0.5)
    io.run(state, frames: 64)
    let stereo = io.output(frames: 64)
    #expect(stereo.left.allSatisfy { $0 == 0.125 } && stereo.right.allSatisfy { $0 == -0.25 })
    io.mono = true
    io.run(state, frames: 64)
    let mono = io.output(frames: 64)
    #expect(mono.left.allSatisfy { $0 == 0.125 } && mono.right.allSatisfy { $0 == 0.125 })
  }

  @Test("A cycle counts itself, its buffer size, and each gap in the server's frame time")
  func counters() {
    let state = ProcessState(chain: E.chain(), sampleRate: E.sampleRate)
    let io = FakePorts()
    for (i, time) in [1000, 1064, 1128, 1500, 1564, 1700].enumerated() {
      io.run(state, frames: 64, frameTime: UInt32(time))
      #expect(state.cycles.load(ordering: .relaxed) == UInt64(i + 1))
    }
    #expect(state.missedCycles.load(ordering: .relaxed) == 2, "1128+64 ≠ 1500 and 1564+64 ≠ 1700")
    let last = MissedCycle(packed: state.lastMissedCycle.load(ordering: .relaxed))
    #expect(last == MissedCycle(numberLow16: 2, expectedFrameTime: 1628, missingFrames: 72))
    #expect(last?.number(countAfter: 2) == 2 && last?.number(countAfter: 65539) == 65538)
    let framesBefore = state.framesRun.load(ordering: .relaxed)
    io.run(state, frames: 128)  // no frame time: not counted
    #expect(state.framesRun.load(ordering: .relaxed) == framesBefore + 128)
    #expect(state.missedCycles.load(ordering: .relaxed) == 2)
  }

  @Test("The latest missed cycle saturates its missing frames and wraps with the frame time")
  func lastMissedCycle() {
    let state = ProcessState(chain: E.chain(), sampleRate: E.sampleRate)
    let io = FakePorts()
    #expect(MissedCycle(packed: state.lastMissedCycle.load(ordering: .relaxed)) == nil)
    io.run(state, frames: 64, frameTime: UInt32.max - 63)
    io.run(state, frames: 64, frameTime: 100_000)  // expected 0 after the wrap
    #expect(
      MissedCycle(packed: state.lastMissedCycle.load(ordering: .relaxed))
        == MissedCycle(numberLow16: 1, expectedFrameTime: 0, missingFrames: 0xFFFF))
  }

  @Test("The recent missed cycles keep the last eight, each in its slot")
  func recentMissedCycles() {
    let state = ProcessState(chain: E.chain(), sampleRate: E.sampleRate)
    let io = FakePorts()
    var time: UInt32 = 1000
    io.run(state, frames: 64, frameTime: time)
    for _ in 0..<10 {
      time += 64 + 128  // two periods missing each time
      io.run(state, frames: 64, frameTime: time)
    }
    let count = state.missedCycles.load(ordering: .relaxed)
    #expect(count == 10)
    let gaps = state.recentMissedCycles.gaps.sorted {
      $0.number(countAfter: count) < $1.number(countAfter: count)
    }
    #expect(gaps.map { $0.number(countAfter: count) } == Array(3...10), "\(gaps)")
    #expect(gaps.allSatisfy { $0.missingFrames == 128 })
    #expect(gaps.last?.expectedFrameTime == time - 128)
  }

  @Test("process does nothing on a state without ports")
  func noPorts() {
    let state = ProcessState(chain: E.chain(), sampleRate: E.sampleRate)
    #expect(state.process(frames: 64) == 0)
    // `process` set flush-to-zero on this test thread, as on the process thread; cleared
    // again, so the tests that run here later see IEEE subnormals (and the threads they start).
    livemic_keep_denormals()
    #expect(state.cycles.load(ordering: .relaxed) == 0)
  }

  @Test("A chain swap crossfades with equal power over 50 ms, then hands the old chain back")
  func crossfadeShape() {
    let counter = LiveCounter()
    let (state, io) = E.openState(E.chain(gain: 1, counter: counter), left: 1, right: 1)
    let fadeLength = Int(ProcessState.crossfadeSeconds * E.sampleRate)
    #expect(state.fadeLength == fadeLength)
    let next = E.chain(gain: 0, counter: counter)  // the new chain is silent: the output is cos
    let completed = Flag()
    let control = Worker { completed.set(state.slot.crossfade(to: next, running: true)) }
    var output: [Float] = []
    // Until the control thread is done, however late it starts (not a cap on the cycles).
    let deadline = DispatchTime.now() + .seconds(30)
    while !control.isFinished && DispatchTime.now() < deadline {
      // Cycles before the control thread's publish are all 1.
      io.run(state, frames: 256)
      let left = io.output(frames: 256).left
      if !output.isEmpty || left.contains(where: { $0 != 1 }) { output += left }
    }
    control.wait()
    #expect(completed.value)
    #expect(E.isCurrent(next, in: state.slot))
    #expect(counter.live == 1, "the old chain freed")
    #expect(output.count >= fadeLength)
    let quarter = Float.pi / 2 / Float(fadeLength)
    var worst: Float = 0
    for (f, x) in output.prefix(fadeLength + 256).enumerated() {
      worst = max(worst, abs(x - cos(Float(min(f, fadeLength)) * quarter)))
    }
    #expect(worst < 1e-5, "cos(t) of the old chain, sin(t) × 0 of the new")
  }

  @Test("A block larger than the fade buffers swaps at once, even in the middle of a fade")
  func largeBlock() {
    let counter = LiveCounter()
    let (state, io) = E.openState(
      E.chain(gain: 1, counter: counter), left: 1, right: 1, capacity: ProcessState.maxFadeFrames + 1)
    #expect(
      !state.slot.crossfade(to: E.chain(gain: 2, counter: counter), running: true, timeoutMilliseconds: 0))
    io.run(state, frames: 256)  // the fade begins
    io.run(state, frames: ProcessState.maxFadeFrames + 1)
    #expect(io.output(frames: 64).left.allSatisfy { $0 == 2 }, "the new chain alone")
    let last = E.chain(gain: 3, counter: counter)
    #expect(!state.slot.crossfade(to: last, running: true, timeoutMilliseconds: 0))
    io.run(state, frames: ProcessState.maxFadeFrames + 1)  // swaps at once
    #expect(io.output(frames: 64).left.allSatisfy { $0 == 3 })
    #expect(E.isCurrent(last, in: state.slot))
    #expect(state.slot.crossfade(to: E.chain(gain: 4, counter: counter), running: false))
    #expect(counter.live == 2, "the first two freed (the last held here)")
  }

  @Test("The warm-up run leaves the ramp closed, the counters and meters at zero, the taps unfed")
  func warm() {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: 0.1, sampleRate: E.sampleRate)
    #expect(taps.attach(consumer))
    let state = ProcessState(chain: E.chain(), sampleRate: E.sampleRate, taps: taps)
    state.inputMuted.store(1, ordering: .relaxed)
    state.warm(frames: 256)
    #expect(state.ramp.isSilent)
    #expect(state.cycles.load(ordering: .relaxed) == 0)
    #expect(state.meters.read().allSatisfy { $0.peakDecibels == -200 })
    #expect(consumer.pushedFrames.load(ordering: .relaxed) == 0 && consumer.pendingFrames == 0)
    #expect(taps.passes.load(ordering: .relaxed) == 0)
    _ = taps.detach(consumer, audioRunning: false)
  }
}
