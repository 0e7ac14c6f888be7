import DSP
import Foundation
import Synchronization
import Testing

@testable import LiveMicEngine

/// The chain slot's swap handshake: publish (control) → begin and finish (audio) → retire
/// (control), including timeouts and swaps while a fade runs.
@Suite struct ChainSlotTests {
  typealias E = Engine

  @Test("Swapping while audio is not running replaces the chain at once and frees the old one")
  func swapNotRunning() {
    let counter = LiveCounter()
    let state = ProcessState(chain: E.chain(gain: 1, counter: counter), sampleRate: E.sampleRate)
    let next = E.chain(gain: 2, counter: counter)
    #expect(counter.live == 2)
    #expect(state.slot.crossfade(to: next, running: false))
    #expect(E.isCurrent(next, in: state.slot))
    #expect(counter.live == 1, "the old chain is freed")
  }

  @Test("A crossfade on a running slot returns once the fade is done, the old chain freed")
  func crossfadeRunning() {
    let counter = LiveCounter()
    let state = ProcessState(chain: E.chain(gain: 1, counter: counter), sampleRate: E.sampleRate)
    let io = FakePorts()
    let audio = AudioThread(state, io, frames: 256, pauseMicroseconds: 200)
    var next: VoiceChain? = E.chain(gain: 2, counter: counter)
    #expect(state.slot.crossfade(to: next!, running: true))
    #expect(E.isCurrent(next!, in: state.slot))
    #expect(counter.live == 1, "the old chain is freed when the call returns")
    audio.stop()
    next = nil
    withExtendedLifetime(state) {}
  }

  @Test("A timed-out crossfade whose chain the audio thread never took leaks nothing")
  func timedOutUntaken() {
    let counter = LiveCounter()
    do {
      let state = ProcessState(chain: E.chain(gain: 1, counter: counter), sampleRate: E.sampleRate)
      let io = FakePorts()
      // No cycles run: both calls time out with their chain still waiting.
      #expect(
        !state.slot.crossfade(to: E.chain(gain: 2, counter: counter), running: true, timeoutMilliseconds: 1))
      #expect(
        !state.slot.crossfade(to: E.chain(gain: 3, counter: counter), running: true, timeoutMilliseconds: 1))
      #expect(counter.live == 2, "the chain left waiting by the first call was taken back and freed")
      let audio = AudioThread(state, io, frames: 256)
      let last = E.chain(gain: 4, counter: counter)
      #expect(state.slot.crossfade(to: last, running: true))
      #expect(E.isCurrent(last, in: state.slot))
      audio.stop()
      #expect(counter.live == 1, "only the running chain is alive")
    }
    #expect(counter.live == 0, "no chain leaked")
  }

  /// Found live: `livemic` crashed on exit (SIGSEGV in `ChainSlot.deinit`, 3 of 15 runs of
  /// ModeSwitchTests) when a linear swap (a `ctl mode` switch) was still waiting as the client
  /// stopped: the slot released the waiting chain through its tagged pointer.
  @Test("A linear swap still waiting when the slot goes is released once, through its real pointer")
  func untakenLinearSwapAtDeinit() {
    let counter = LiveCounter()
    do {
      let slot = ChainSlot(E.chain(gain: 1, counter: counter))
      #expect(
        !slot.crossfade(
          to: E.chain(gain: 2, counter: counter), running: true, timeoutMilliseconds: 1, curve: .linear))
      #expect(counter.live == 2, "the running chain and the one waiting")
    }
    #expect(counter.live == 0, "both freed with the slot")
  }

  @Test("A crossfade never takes an earlier swap's old chain for its own")
  func staleRetired() {
    let counter = LiveCounter()
    do {
      let state = ProcessState(chain: E.chain(gain: 1, counter: counter), sampleRate: E.sampleRate)
      let io = FakePorts()
      let second = E.chain(gain: 2, counter: counter)
      #expect(!state.slot.crossfade(to: second, running: true, timeoutMilliseconds: 1), "no cycles run")
      // The fade runs to its end here (2400 frames): the first chain waits to be collected.
      for _ in 0..<12 { io.run(state, frames: 256) }
      #expect(E.isCurrent(second, in: state.slot))
      let third = E.chain(gain: 3, counter: counter)
      let started = DispatchTime.now().uptimeNanoseconds
      let done = state.slot.crossfade(to: third, running: true, timeoutMilliseconds: 50)  // no cycles run
      let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
      #expect(
        E.isCurrent(third, in: state.slot) || elapsed >= 50,
        "returned after \(elapsed) ms as if done, though the third chain never ran")
      #expect(!done, "the third chain never ran")
      let audio = AudioThread(state, io, frames: 256)
      let last = E.chain(gain: 4, counter: counter)
      #expect(state.slot.crossfade(to: last, running: true))
      #expect(E.isCurrent(last, in: state.slot))
      audio.stop()
      #expect(counter.live == 3, "only the chains held here are alive")
    }
    #expect(counter.live == 0, "no chain leaked")
  }

  @Test("A swap published while a fade runs waits for that fade, then fades in itself")
  func swapDuringFade() {
    let counter = LiveCounter()
    do {
      let (state, io) = E.openState(E.chain(gain: 1, counter: counter), left: 1, right: 1)
      let second = E.chain(gain: 2, counter: counter)
      let third = E.chain(gain: 3, counter: counter)
      #expect(!state.slot.crossfade(to: second, running: true, timeoutMilliseconds: 0))
      io.run(state, frames: 256)  // the fade to the second chain begins: 256 of 2400 frames
      #expect(E.isCurrent(second, in: state.slot))
      // The third is published on another thread while the fade to the second runs here.
      let completed = Flag()
      let control = Worker { completed.set(state.slot.crossfade(to: third, running: true)) }
      // Cycles run until the control thread is done, however late it starts (a cap on the
      // cycles ended the loop before a control thread started late had published: it then
      // waited out its timeout with no cycle to take the chain, 1 run in 10 under ASan).
      var cycles = 1
      let deadline = DispatchTime.now() + .seconds(30)
      while !control.isFinished && DispatchTime.now() < deadline {
        io.run(state, frames: 256)
        cycles += 1
        if cycles < 10 { #expect(E.isCurrent(second, in: state.slot), "the running fade is not cut short") }
      }
      control.wait()
      #expect(completed.value)
      #expect(cycles >= 19, "two fades of 2400 frames in 256-frame cycles")
      #expect(E.isCurrent(third, in: state.slot))
      io.run(state, frames: 256)
      #expect(io.output(frames: 256).left.allSatisfy { abs($0 - 3) < 1e-5 }, "the third chain alone")
      #expect(counter.live == 2, "the first chain freed (the second and third are held here)")
    }
    #expect(counter.live == 0)
  }

  @Test("Two control threads crossfading at once both complete, one after the other")
  func concurrentCrossfades() {
    let counter = LiveCounter()
    do {
      let state = ProcessState(chain: E.chain(gain: 1, counter: counter), sampleRate: E.sampleRate)
      let io = FakePorts()
      let audio = AudioThread(state, io, frames: 256, pauseMicroseconds: 100)
      let (a, b) = (E.chain(gain: 2, counter: counter), E.chain(gain: 3, counter: counter))
      let (doneA, doneB) = (Flag(), Flag())
      let one = Worker { doneA.set(state.slot.crossfade(to: a, running: true)) }
      let two = Worker { doneB.set(state.slot.crossfade(to: b, running: true)) }
      one.wait()
      two.wait()
      #expect(doneA.value && doneB.value, "both fades completed")
      #expect(E.isCurrent(a, in: state.slot) || E.isCurrent(b, in: state.slot))
      audio.stop()
      #expect(counter.live == 2, "the first chain freed (a and b are held here)")
    }
    #expect(counter.live == 0)
  }
}
