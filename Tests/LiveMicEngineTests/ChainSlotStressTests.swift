import DSP
import Foundation
import Testing

@testable import LiveMicEngine

/// The chain slot's publish/retire handshake under two-thread stress: an audio thread running
/// cycles as fast as it can, a control thread publishing new chains. The state runs at 1280 Hz
/// so a crossfade (50 ms) is 64 frames, one cycle. Every chain counts itself (`LiveCounter`):
/// one leaked stays counted, one released twice crashes (or trips ASan).
@Suite struct ChainSlotStressTests {
  typealias E = Engine
  static let rate = 1280.0

  /// Each completed swap waits for its fade, and the control side polls for the old chain
  /// every millisecond, so a swap takes about 1 ms whatever the fade: 3,000 swaps (a tenth under
  /// TSan, a quarter under ASan) take about 3.5 s, rather than a million.
  @Test("Thousands of completed swaps: each returns with its chain current and the old one freed")
  func completedSwaps() {
    let counter = LiveCounter()
    let swaps = E.stressCount(3000)
    do {
      let state = ProcessState(chain: E.chain(counter: counter, sampleRate: Self.rate), sampleRate: Self.rate)
      #expect(state.fadeLength == 64)
      let io = FakePorts(capacity: 64)
      io.input(left: 1, right: 1)
      let audio = AudioThread(state, io, frames: 64)
      var failures = 0
      for i in 0..<swaps {
        let next = E.chain(gain: Float(i % 7), counter: counter, sampleRate: Self.rate)
        let done = state.slot.crossfade(to: next, running: true)
        if !done || !E.isCurrent(next, in: state.slot) || counter.live != 1 { failures += 1 }
      }
      audio.stop()
      #expect(failures == 0, "\(failures) of \(swaps) swaps did not complete cleanly")
      #expect(counter.live == 1)
    }
    #expect(counter.live == 0, "no chain leaked")
    #expect(counter.created.load(ordering: .relaxed) == swaps + 1)
  }

  /// Publishing with no wait (timeout 0) never sleeps, so the count is limited by building the
  /// chains (tens of µs each in a debug build): 50,000 publishes (a tenth under TSan, a quarter
  /// under ASan). Most calls find their predecessor still waiting (taken back and freed) or
  /// mid-fade, and an earlier swap's old chain to free: every path of the handshake.
  @Test("Tens of thousands of publishes that never wait: no chain leaked or freed twice, the last one runs")
  func timedOutPublishes() {
    let counter = LiveCounter()
    let publishes = E.stressCount(50_000)
    var completed = 0
    var mostAlive = 0
    do {
      let state = ProcessState(chain: E.chain(counter: counter, sampleRate: Self.rate), sampleRate: Self.rate)
      let io = FakePorts(capacity: 64)
      let audio = AudioThread(state, io, frames: 64)
      for i in 0..<publishes {
        let next = E.chain(gain: Float(i % 5), counter: counter, sampleRate: Self.rate)
        if state.slot.crossfade(to: next, running: true, timeoutMilliseconds: 0) { completed += 1 }
        // At most: the current chain, one fading out, one retired, one waiting (this one).
        mostAlive = max(mostAlive, counter.live)
      }
      let last = E.chain(counter: counter, sampleRate: Self.rate)
      #expect(state.slot.crossfade(to: last, running: true), "a call that may wait completes the handshake")
      #expect(E.isCurrent(last, in: state.slot))
      audio.stop()
      #expect(counter.live == 1, "only the running chain")
      let neverRun = counter.neverRun.load(ordering: .relaxed)
      print(
        "[measured] chain slot stress: \(publishes) publishes, \(completed) completed at once, "
          + "\(neverRun) taken back before they ran, \(audio.cycles.load(ordering: .relaxed)) cycles, "
          + "at most \(mostAlive) chains alive")
      #expect(
        neverRun > 0 && neverRun < publishes, "both paths: chains taken back, and chains run and retired")
    }
    #expect(mostAlive <= 4)
    #expect(counter.live == 0, "no chain leaked")
  }
}
