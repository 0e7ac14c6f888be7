import Foundation
import Synchronization
import Testing

@testable import LiveMicEngine

/// The tap table: attach, detach, a full table, writing, and the rings under two-thread stress.
@Suite struct TapsTests {
  static func write(_ taps: TapTable, _ tap: Tap, _ left: [Float], _ right: [Float]) {
    left.withUnsafeBufferPointer { l in
      right.withUnsafeBufferPointer { r in
        guard let l = l.baseAddress, let r = r.baseAddress else { return }
        taps.write(tap, left: l, right: r, frames: left.count)
      }
    }
  }

  static func read(_ consumer: TapConsumer, maxFrames: Int = 65536) -> [Float] {
    var out = [Float](repeating: 0, count: 2 * maxFrames)
    let n = out.withUnsafeMutableBufferPointer { out in
      out.baseAddress.map { consumer.read(into: $0, maxFrames: maxFrames) } ?? 0
    }
    return Array(out.prefix(2 * n))
  }

  @Test("An attached consumer receives its own tap's frames, interleaved; the other tap's go elsewhere")
  func attachAndWrite() {
    let taps = TapTable()
    let output = TapConsumer(tap: .output, seconds: 0.1, sampleRate: 48000)
    let input = TapConsumer(tap: .input, seconds: 0.1, sampleRate: 48000)
    #expect(taps.attach(output) && taps.attach(input))
    Self.write(taps, .output, [1, 2, 3], [-1, -2, -3])
    Self.write(taps, .input, [7], [8])
    #expect(Self.read(output) == [1, -1, 2, -2, 3, -3])
    #expect(Self.read(input) == [7, 8])
    #expect(
      output.pushedFrames.load(ordering: .relaxed) == 3 && output.droppedFrames.load(ordering: .relaxed) == 0)
    #expect(Tap(name: "input") == .input && Tap(name: "output") == .output && Tap(name: "dry") == nil)
  }

  @Test("A detached consumer gets nothing more and is released; detaching twice is refused")
  func detach() {
    let taps = TapTable()
    var consumer: TapConsumer? = TapConsumer(tap: .output, seconds: 0.1, sampleRate: 48000)
    weak let weakConsumer = consumer
    #expect(taps.attach(consumer!))
    #expect(taps.detach(consumer!, audioRunning: false))
    #expect(!taps.detach(consumer!, audioRunning: false), "not attached any more")
    Self.write(taps, .output, [1], [1])
    #expect(consumer!.pendingFrames == 0)
    consumer = nil
    #expect(weakConsumer == nil, "the table's reference was released")
  }

  @Test("Detaching while audio runs waits two passes of the audio thread; a stalled one leaks it instead")
  func detachRunning() {
    let taps = TapTable()
    var consumer: TapConsumer? = TapConsumer(tap: .output, seconds: 0.1, sampleRate: 48000)
    weak let weakConsumer = consumer
    #expect(taps.attach(consumer!))
    let (running, started) = (Flag(), Flag())
    running.set()
    let audio = Worker {
      while running.value {
        taps.finishCycle()
        started.set()
        usleep(200)
      }
    }
    // The detach waits 500 ms for two passes: it starts once the audio thread runs, however late
    // that thread starts.
    while !started.value { usleep(100) }
    #expect(taps.detach(consumer!, audioRunning: true))
    consumer = nil
    #expect(weakConsumer == nil, "released after two passes")
    running.set(false)
    audio.wait()

    var stalled: TapConsumer? = TapConsumer(tap: .output, seconds: 0.1, sampleRate: 48000)
    weak let weakStalled = stalled
    #expect(taps.attach(stalled!))
    #expect(taps.detach(stalled!, audioRunning: true, timeoutMilliseconds: 5))
    stalled = nil
    #expect(weakStalled != nil, "kept alive rather than freed under a stalled audio thread")
    if let leaked = weakStalled { Unmanaged.passUnretained(leaked).release() }  // the table's reference
    #expect(weakStalled == nil)
  }

  @Test("A full table refuses another consumer until a slot is freed")
  func fullTable() {
    let taps = TapTable()
    let consumers = (0..<TapTable.slotCount).map { _ in
      TapConsumer(tap: .input, seconds: 0.02, sampleRate: 48000)
    }
    for c in consumers { #expect(taps.attach(c)) }
    let extra = TapConsumer(tap: .output, seconds: 0.02, sampleRate: 48000)
    #expect(!taps.attach(extra), "every slot is taken")
    Self.write(taps, .input, [0.5], [0.25])
    #expect(consumers.allSatisfy { $0.pendingFrames == 1 }, "each consumer gets the cycle")
    #expect(taps.detach(consumers[3], audioRunning: false))
    #expect(taps.attach(extra))
    Self.write(taps, .output, [1], [1])
    #expect(extra.pendingFrames == 1)
  }

  @Test("A cycle that does not fit in the ring is dropped whole and counted")
  func dropWholeCycles() {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: 0.001, sampleRate: 48000)  // the 1024-frame minimum
    #expect(consumer.capacityFrames >= 1024 - 1)
    #expect(taps.attach(consumer))
    let cycle = [Float](repeating: 1, count: 600)
    Self.write(taps, .output, cycle, cycle)
    Self.write(taps, .output, cycle, cycle)  // 1200 > capacity: dropped, none of it written
    #expect(consumer.pendingFrames == 600)
    #expect(consumer.droppedFrames.load(ordering: .relaxed) == 600)
    #expect(consumer.pushedFrames.load(ordering: .relaxed) == 600)
  }

  @Test(
    "A replaced ring: the old ring's frames first, then the new one's; it is taken once the reader caught up")
  func resizeKeepsOrder() {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: 0.001, sampleRate: 48000)
    let small = consumer.capacityFrames
    #expect(taps.attach(consumer))
    Self.write(taps, .output, [1, 2], [-1, -2])
    consumer.resize(seconds: 1)
    Self.write(taps, .output, [3], [-3])  // taken at this push: the reader is on the old ring
    #expect(consumer.capacityFrames >= 48000 && consumer.capacityFrames > small)
    consumer.resize(seconds: 0.001)
    Self.write(taps, .output, [4], [-4])  // not yet: the reader has not reached the 1 s ring
    #expect(consumer.capacityFrames >= 48000, "the second replacement waits")
    #expect(consumer.pendingFrames == 4)
    #expect(Self.read(consumer) == [1, -1, 2, -2], "the old ring first, alone")
    #expect(Self.read(consumer) == [3, -3, 4, -4])
    Self.write(taps, .output, [5], [-5])  // the reader is on the 1 s ring: the small one is taken
    #expect(consumer.capacityFrames == small)
    consumer.freeLeftRings()
    #expect(Self.read(consumer) == [5, -5])
    #expect(consumer.droppedFrames.load(ordering: .relaxed) == 0 && consumer.pendingFrames == 0)
  }

  @Test("Cycles that wrap around the ring's end arrive whole and in order")
  func wrapAround() {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: 0.001, sampleRate: 48000)  // 1024 frames
    #expect(taps.attach(consumer))
    var next = 0
    for cycle in 0..<12 {
      let n = 333 + cycle  // odd lengths, so the ring's end falls inside a group of four
      Self.write(taps, .output, (0..<n).map { Float(next + $0) }, (0..<n).map { -Float(next + $0) })
      let got = Self.read(consumer)
      #expect(got.count == 2 * n)
      #expect((0..<n).allSatisfy { got[2 * $0] == Float(next + $0) && got[2 * $0 + 1] == -Float(next + $0) })
      next += n
    }
    #expect(consumer.droppedFrames.load(ordering: .relaxed) == 0)
  }

  @Test("A cycle longer than the interleaving chunk arrives whole and in order")
  func longCycle() {
    let taps = TapTable()
    let consumer = TapConsumer(tap: .output, seconds: 1, sampleRate: 48000)
    #expect(taps.attach(consumer))
    let n = TapTable.chunkFrames + 1000
    Self.write(taps, .output, (0..<n).map { Float($0) }, (0..<n).map { -Float($0) })
    let got = Self.read(consumer)
    #expect(got.count == 2 * n)
    #expect((0..<n).allSatisfy { got[2 * $0] == Float($0) && got[2 * $0 + 1] == -Float($0) })
  }

  @Test("Through a cycle, the input tap has the dry input and the output tap the final output")
  func throughCycle() {
    let taps = TapTable()
    let (input, output) = (
      TapConsumer(tap: .input, seconds: 2, sampleRate: 48000),
      TapConsumer(tap: .output, seconds: 2, sampleRate: 48000)
    )
    #expect(taps.attach(input) && taps.attach(output))
    let state = ProcessState(chain: Engine.chain(gain: 0.5), sampleRate: Engine.sampleRate, taps: taps)
    let io = FakePorts()
    io.input(left: 0.5, right: -0.5)
    Engine.openRamp(state, io)
    _ = Self.read(input)
    _ = Self.read(output)
    io.run(state, frames: 64)
    #expect(Self.read(input) == Array([Float](repeating: 0, count: 64).indices.flatMap { _ in [0.5, -0.5] }))
    #expect(Self.read(output) == Array((0..<64).flatMap { _ in [Float(0.25), -0.25] }))
    #expect(taps.passes.load(ordering: .relaxed) == state.cycles.load(ordering: .relaxed))
  }
}
