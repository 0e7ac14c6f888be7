import Foundation
import Testing

@testable import LiveMicEngine

/// Meters: peak and RMS per channel in dBFS, accumulated over cycles and reset by each read.
@Suite struct MetersTests {
  static func record(_ meters: Meters, channel: Int, _ samples: [Float]) {
    samples.withUnsafeBufferPointer { p in
      if let p = p.baseAddress { meters.record(channel, p, samples.count) }
    }
  }

  @Test("Peak and RMS per channel in dBFS; silence reads -200; a read resets")
  func levels() {
    let meters = Meters()
    Self.record(meters, channel: 0, [Float](repeating: 0.5, count: 100))
    Self.record(meters, channel: 3, (0..<100).map { $0 % 2 == 0 ? 1 : -1 })
    meters.finishCycle(100)
    let read = meters.read()
    #expect(read.count == Meters.channelCount)
    #expect(abs(read[0].peakDecibels - 20 * log10(0.5)) < 1e-4)
    #expect(abs(read[0].rmsDecibels - 20 * log10(0.5)) < 1e-4)
    #expect(read[1].peakDecibels == -200 && read[1].rmsDecibels == -200)
    #expect(abs(read[3].peakDecibels) < 1e-6 && abs(read[3].rmsDecibels) < 1e-4)
    #expect(meters.read().allSatisfy { $0.peakDecibels == -200 && $0.rmsDecibels == -200 }, "reset")
  }

  @Test("Over several cycles the peak is the largest and the RMS the mean power")
  func accumulate() {
    let meters = Meters()
    Self.record(meters, channel: 2, [Float](repeating: 0.25, count: 64))
    meters.finishCycle(64)
    Self.record(meters, channel: 2, [Float](repeating: -0.75, count: 64))
    meters.finishCycle(64)
    let read = meters.read()[2]
    #expect(abs(read.peakDecibels - 20 * log10(0.75)) < 1e-4)
    let rms = ((0.25 * 0.25 + 0.75 * 0.75) / 2).squareRoot()
    #expect(abs(read.rmsDecibels - 20 * log10(rms)) < 1e-3)
  }

  @Test("A non-finite sample does not poison the RMS")
  func nonFinite() {
    let meters = Meters()
    Self.record(meters, channel: 0, [.infinity, 0.5])
    meters.finishCycle(2)
    #expect(meters.read()[0].rmsDecibels == -200, "an infinite sum is left out")
  }

  @Test("Nobody reading the meters, a cycle leaves them alone; wanted, it meters whole cycles from then")
  func metersOnlyWhenWanted() {
    let (state, io) = Engine.openState(Engine.chain(gain: 0.5), left: 0.25, right: -0.5)
    #expect(!state.meters.isWanted, "off until someone reads")
    io.run(state, frames: 64)
    state.meters.setWanted(true)
    #expect(state.meters.read().allSatisfy { $0.peakDecibels == -200 }, "nothing was metered while off")
    io.run(state, frames: 64)
    let levels = state.meters.read().map { ($0.peakDecibels * 10).rounded() / 10 }
    #expect(levels == [-12, -6, -18.1, -12], "input 0.25 and 0.5, output half of them")
    state.meters.setWanted(false)
    io.run(state, frames: 64)
    #expect(state.meters.read().allSatisfy { $0.peakDecibels == -200 })
  }

  @Test("A cycle meters the dry input and the final output")
  func throughCycle() {
    let (state, io) = Engine.openState(Engine.chain(gain: 0.5), left: 1, right: -0.5)
    state.meters.setWanted(true)
    io.run(state, frames: 256)
    let read = state.meters.read()
    let expected = [1, 0.5, 0.5, 0.25].map { 20 * log10($0) }
    for i in 0..<4 { #expect(abs(read[i].peakDecibels - expected[i]) < 1e-4, "channel \(i)") }
  }

  /// The audio thread runs cycles as fast as it can while another thread reads the meters:
  /// every reading holds whole cycles of all four channels, so a constant level reads exactly
  /// that level on each (a read inside a cycle once took its input samples without its frame
  /// count, or its input without its output).
  @Test("Readings during cycles are whole cycles: a constant level always reads that level")
  func readingsAreWholeCycles() {
    let (state, io) = Engine.openState(Engine.chain(gain: 0.5), left: 0.5, right: 0.5)
    state.meters.setWanted(true)
    let audio = AudioThread(state, io, frames: 64)
    let expected = [0.5, 0.5, 0.25, 0.25].map { 20 * log10($0) }
    var worst = 0.0
    var readings = 0
    let wanted = Engine.stressCount(2_000)
    let deadline = Date().addingTimeInterval(20)
    while readings < wanted && Date() < deadline {
      let read = state.meters.read()
      guard read[0].rmsDecibels > -200 else { continue }
      readings += 1
      for i in 0..<4 { worst = max(worst, abs(read[i].rmsDecibels - expected[i])) }
    }
    audio.stop()
    #expect(readings == wanted, "\(readings) readings with cycles in them in 20 s")
    #expect(worst < 1e-3, "a reading was \(worst) dB off the constant level")
  }
}
