import DSP
import Foundation
import Testing

@testable import LiveMicEngine

/// The `input` mute mode (the microphone muted before the chain) and a chain swap the control
/// side does not wait for (`crossfade` with no timeout, then `collect`).
@Suite struct InputMuteTests {
  typealias E = Engine

  @Test("The input mute fades the microphone out before the chain over 50 ms, and back")
  func inputMute() {
    let (state, io) = E.openState(E.chain(gain: 0.5), left: 0.8, right: -0.8)
    state.inputMuted.store(1, ordering: .relaxed)
    var output: [Float] = []
    for _ in 0..<12 {
      io.run(state, frames: 256)
      output += io.output(frames: 256).left
    }
    let step = 1 / Float(state.fadeLength)
    for f in [0, 99, 1000] {
      #expect(abs(output[f] - 0.4 * (1 - Float(f + 1) * step)) < 1e-4, "frame \(f): \(output[f])")
    }
    #expect(output[(state.fadeLength - 1)...].allSatisfy { $0 == 0 }, "silent from 50 ms on")
    state.inputMuted.store(0, ordering: .relaxed)
    for _ in 0..<12 { io.run(state, frames: 256) }
    #expect(io.output(frames: 256).left.allSatisfy { $0 == 0.4 }, "the microphone back")
  }

  @Test("The input mute leaves the music bed playing: only the voice goes")
  func musicGoesOn() {
    let state = ProcessState(
      chain: E.chain(gain: 0.5, [StageDescription(id: "music", type: "music", values: ["volume_db": 0])]),
      sampleRate: E.sampleRate)
    let io = FakePorts()
    io.music = true
    io.input(left: 0.2, right: 0.2)
    io.musicInput(left: 0.5, right: -0.5)
    E.openRamp(state, io)
    #expect(io.output(frames: 256).left.allSatisfy { abs($0 - 0.6) < 1e-6 }, "voice and music")
    state.inputMuted.store(1, ordering: .relaxed)
    for _ in 0..<12 { io.run(state, frames: 256) }
    let out = io.output(frames: 256)
    #expect(out.left.allSatisfy { $0 == 0.5 } && out.right.allSatisfy { $0 == -0.5 }, "the music alone")
  }

  @Test("A swap the control side does not wait for completes; collect releases the old chain")
  func unwaitedSwap() {
    let counter = LiveCounter()
    let (state, io) = E.openState(E.chain(gain: 1, counter: counter), left: 1, right: 1)
    for round in 0..<3 {
      let next = E.chain(gain: Float(round), counter: counter)
      #expect(!state.slot.crossfade(to: next, running: true, timeoutMilliseconds: 0))
      #expect(state.slot.collect(), "round \(round): under way before any cycle")
      for _ in 0..<12 { io.run(state, frames: 256) }
      #expect(!state.slot.collect(), "round \(round): the old chain came back")
      #expect(E.isCurrent(next, in: state.slot), "round \(round)")
      #expect(io.output(frames: 64).left.allSatisfy { $0 == Float(round) }, "round \(round)")
    }
    // Two loads in a row: the second waits until the first's old chain is collected.
    let first = E.chain(gain: 3, counter: counter)
    let second = E.chain(gain: 4, counter: counter)
    state.slot.crossfade(to: first, running: true, timeoutMilliseconds: 0)
    io.run(state, frames: 256)
    state.slot.crossfade(to: second, running: true, timeoutMilliseconds: 0)
    for _ in 0..<40 where state.slot.collect() { io.run(state, frames: 256) }
    #expect(E.isCurrent(second, in: state.slot))
  }
}
