import CJack
import Foundation
import Synchronization

@testable import DSP
@testable import LiveMicEngine

/// Counts the instances of a test stage (so of the chains holding one) made and freed: a chain
/// leaked or released twice shows as `live` not returning to zero, or as a crash.
final class LiveCounter: Sendable {
  let created = Atomic<Int>(0)
  let destroyed = Atomic<Int>(0)
  /// Instances freed that never processed a block beyond the one of their chain's `prepare`
  /// (a chain taken back before the audio thread ran it).
  let neverRun = Atomic<Int>(0)
  /// Instances alive now.
  var live: Int { created.load(ordering: .acquiring) - destroyed.load(ordering: .acquiring) }
}

/// A flag one thread sets and another reads.
final class Flag: Sendable {
  private let bit = Atomic<Bool>(false)
  func set(_ value: Bool = true) { bit.store(value, ordering: .releasing) }
  var value: Bool { bit.load(ordering: .acquiring) }
}

/// A chain stage that multiplies by a fixed gain and counts itself in a `LiveCounter`.
final class ProbeStage: Stage {
  private let gain: Float
  private let counter: LiveCounter?

  init(id: String = "probe", gain: Float, counter: LiveCounter? = nil) {
    self.gain = gain
    self.counter = counter
    super.init(id: id)
    counter?.created.add(1, ordering: .relaxed)
  }

  /// The whole block at once, as a chain hands it.
  override var takesWholeBlock: Bool { true }

  /// Blocks processed (written on the thread running the chain; read at deinit, after the slot's
  /// handover).
  private var blocks = 0

  deinit {
    if blocks <= 1 { counter?.neverRun.add(1, ordering: .relaxed) }
    counter?.destroyed.add(1, ordering: .releasing)
  }

  override func prepare(sampleRate: Double, maxFrames: Int, context: ProcessingContext) {}
  override func reset() {}

  /// - Realtime: safe
  override func process(_ block: StereoBlock, targets: ParameterTargets) {
    blocks += 1
    for f in 0..<block.frames {
      block.left[f] *= gain
      block.right[f] *= gain
    }
  }
}

/// Chains and states for the engine's tests.
enum Engine {
  static let sampleRate = 48000.0

  /// A chain of one `ProbeStage` (× `gain`), then the built-in stages of `descriptions`.
  static func chain(
    gain: Float = 1, counter: LiveCounter? = nil, _ descriptions: [StageDescription] = [],
    sampleRate: Double = sampleRate
  ) -> VoiceChain {
    var assembly = ChainAssembly()
    do {
      try assembly.append(stage: ProbeStage(gain: gain, counter: counter), parameters: [])
      for d in descriptions { try assembly.append(d) }
    } catch { fatalError("a test chain cannot be built: \(error)") }
    return assembly.makeChain(sampleRate: sampleRate)
  }

  /// True when `chain` is the one the slot runs.
  static func isCurrent(_ chain: VoiceChain, in slot: ChainSlot) -> Bool {
    slot.current().toOpaque() == Unmanaged.passUnretained(chain).toOpaque()
  }

  /// Runs cycles of `frames` until the output ramp is fully open (1 s at 48 kHz), then one more,
  /// whose output is the chain's untouched.
  static func openRamp(_ state: ProcessState, _ io: FakePorts, frames: Int = 512) {
    while !state.ramp.isFullyOpen { io.run(state, frames: frames) }
    io.run(state, frames: frames)
  }

  /// A state on `chain` and fake ports (of `capacity` frames) playing a constant `left` and
  /// `right`, run until its output ramp is open.
  static func openState(
    _ chain: VoiceChain, left: Float, right: Float, capacity: Int = 8192
  ) -> (ProcessState, FakePorts) {
    let state = ProcessState(chain: chain, sampleRate: sampleRate)
    let io = FakePorts(capacity: capacity)
    io.input(left: left, right: right)
    openRamp(state, io)
    return (state, io)
  }

  /// A stress count scaled down under the sanitizers (about 5–20 times slower): a tenth of
  /// `count` under TSan, a quarter under ASan; `LIVEMIC_STRESS_SCALE` (a factor) overrides.
  static func stressCount(_ count: Int) -> Int {
    if let text = ProcessInfo.processInfo.environment["LIVEMIC_STRESS_SCALE"], let scale = Double(text) {
      return max(Int(Double(count) * scale), 1)
    }
    if dlsym(nil, "__tsan_init") != nil { return max(count / 10, 1) }  // nil: RTLD_DEFAULT
    if dlsym(nil, "__asan_init") != nil { return max(count / 4, 1) }
    return count
  }
}

/// Buffers standing in for a cycle's JACK port buffers: inputs, outputs, music and monitor,
/// `capacity` frames each, zeroed.
final class FakePorts: @unchecked Sendable {
  let capacity: Int
  let inputLeft: UnsafeMutablePointer<Float>
  let inputRight: UnsafeMutablePointer<Float>
  let outputLeft: UnsafeMutablePointer<Float>
  let outputRight: UnsafeMutablePointer<Float>
  let musicLeft: UnsafeMutablePointer<Float>
  let musicRight: UnsafeMutablePointer<Float>
  let monitorLeft: UnsafeMutablePointer<Float>
  let monitorRight: UnsafeMutablePointer<Float>
  private let storage: UnsafeMutablePointer<Float>
  /// Whether `run` passes the music inputs and the monitor outputs.
  var music = false
  var monitor = false
  /// A mono input (the right input is the left one).
  var mono = false

  init(capacity: Int = 8192) {
    self.capacity = capacity
    storage = .allocate(capacity: 8 * capacity)
    storage.initialize(repeating: 0, count: 8 * capacity)
    inputLeft = storage
    inputRight = storage + capacity
    outputLeft = storage + 2 * capacity
    outputRight = storage + 3 * capacity
    musicLeft = storage + 4 * capacity
    musicRight = storage + 5 * capacity
    monitorLeft = storage + 6 * capacity
    monitorRight = storage + 7 * capacity
  }

  deinit { storage.deallocate() }

  /// Sets the inputs to `left`/`right`.
  func input(left: Float, right: Float) {
    inputLeft.update(repeating: left, count: capacity)
    inputRight.update(repeating: right, count: capacity)
  }

  /// Sets the music inputs to `left`/`right`.
  func musicInput(left: Float, right: Float) {
    musicLeft.update(repeating: left, count: capacity)
    musicRight.update(repeating: right, count: capacity)
  }

  func buffers(midi: UnsafeMutableRawPointer? = nil, frameTime: jack_nframes_t? = nil) -> CycleBuffers {
    CycleBuffers(
      inputLeft: inputLeft, inputRight: mono ? inputLeft : inputRight, outputLeft: outputLeft,
      outputRight: outputRight, musicLeft: music ? musicLeft : nil, musicRight: music ? musicRight : nil,
      monitorLeft: monitor ? monitorLeft : nil, monitorRight: monitor ? monitorRight : nil, midi: midi,
      frameTime: frameTime)
  }

  /// One cycle of `frames` through `state`.
  func run(
    _ state: ProcessState, frames: Int, midi: UnsafeMutableRawPointer? = nil, frameTime: jack_nframes_t? = nil
  ) {
    precondition(frames <= capacity)
    state.run(buffers(midi: midi, frameTime: frameTime), frames: frames)
  }

  /// The outputs' first `frames`.
  func output(frames: Int) -> (left: [Float], right: [Float]) {
    (
      Array(UnsafeBufferPointer(start: outputLeft, count: frames)),
      Array(UnsafeBufferPointer(start: outputRight, count: frames))
    )
  }

  /// The monitor outputs' first `frames`.
  func monitorOutput(frames: Int) -> (left: [Float], right: [Float]) {
    (
      Array(UnsafeBufferPointer(start: monitorLeft, count: frames)),
      Array(UnsafeBufferPointer(start: monitorRight, count: frames))
    )
  }
}

/// A thread of its own running `body` (a test's audio or control side), joined with `wait`;
/// `body` and what it captured are released before `wait` returns.
final class Worker: @unchecked Sendable {
  private final class Body {
    let run: () -> Void
    let finished: Flag
    init(_ run: @escaping () -> Void, _ finished: Flag) {
      self.run = run
      self.finished = finished
    }
  }
  private var thread = pthread_t()
  private let finished = Flag()
  private var joined = false

  init(_ body: @escaping @Sendable () -> Void) {
    let context = Unmanaged.passRetained(Body(body, finished)).toOpaque()
    let status = pthread_create(
      &thread, nil,
      { context in
        guard let context else { return nil }
        let body = Unmanaged<Body>.fromOpaque(context).takeRetainedValue()
        body.run()
        body.finished.set()
        return nil
      }, context)
    precondition(status == 0, "pthread_create failed")
  }

  /// True once `body` has returned.
  var isFinished: Bool { finished.value }

  /// Waits until `body` has returned and its thread has ended. Call once, from one thread.
  func wait() {
    guard !joined else { return }
    joined = true
    pthread_join(thread, nil)
  }

  deinit { wait() }
}

/// Runs cycles of `frames` through `state` on a thread of its own (the audio thread) until
/// `stop`, pausing `pauseMicroseconds` between cycles (0: as fast as it can).
final class AudioThread: @unchecked Sendable {
  private let running = Atomic<Bool>(true)
  /// Cycles run so far.
  let cycles = Atomic<Int>(0)
  private var worker: Worker?

  init(_ state: ProcessState, _ io: FakePorts, frames: Int, pauseMicroseconds: UInt32 = 0) {
    worker = Worker { [self] in
      while running.load(ordering: .acquiring) {
        io.run(state, frames: frames)
        cycles.add(1, ordering: .releasing)
        if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
      }
    }
  }

  /// Waits until at least `count` more cycles have run.
  func waitCycles(_ count: Int) {
    let target = cycles.load(ordering: .acquiring) + count
    while cycles.load(ordering: .acquiring) < target { usleep(100) }
  }

  /// Stops the thread and waits for it.
  func stop() {
    running.store(false, ordering: .releasing)
    worker?.wait()
  }
}

// What the tests read of the engine's state; the program itself never needs it.
extension OutputRamp {
  /// True once the ramp has reached full level (the output is the chain's, untouched).
  var isFullyOpen: Bool { Float(bitPattern: positionBits.load(ordering: .relaxed)) == 1 }
}

extension TapConsumer {
  /// Frames waiting in the rings (on the consumer's thread).
  var pendingFrames: Int {
    let (reading, written) = (readingRing.load(ordering: .acquiring), writtenRing.load(ordering: .acquiring))
    var bytes = Ring(bitPattern: reading).map { jack_ringbuffer_read_space($0) } ?? 0
    if written != reading { bytes += Ring(bitPattern: written).map { jack_ringbuffer_read_space($0) } ?? 0 }
    return bytes / Self.bytesPerFrame
  }
}

extension MusicMixer {
  /// The current dip of the music in dB (0 when not ducking), on the thread that runs `mix`.
  var duckDecibels: Float { state.pointee.duck }
}
