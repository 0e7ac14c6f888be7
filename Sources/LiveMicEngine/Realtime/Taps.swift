import CJack
import DSP
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A point in the signal path whose samples consumers (recordings, streams) can receive.
public enum Tap: Int, Sendable, CaseIterable {
  /// The dry input, before the chain (a mono input on both channels).
  case input = 0
  /// After the chain, the output volume and the start/stop/mute ramp: what leaves `out_1`/`out_2`.
  case output = 1

  /// The tap's name on the command line and in the control API.
  public var name: String { self == .input ? "input" : "output" }

  /// The tap called `name`, if any.
  public init?(name: String) {
    guard let tap = Self.allCases.first(where: { $0.name == name }) else { return nil }
    self = tap
  }
}

/// One consumer of a tap: a preallocated lock-free single-producer/single-consumer ring
/// (`jack_ringbuffer`) of interleaved stereo float frames, filled by the audio thread and
/// drained by the consumer's own thread, and the counts of frames taken and dropped.
///
/// The ring can be replaced while in use (`resize`: larger while JACK freewheels). The new ring,
/// allocated and touched off the audio thread, waits in an atomic; the audio thread takes it at
/// a push once the consumer has caught up with the previous replacement, and writes there from
/// then on; the consumer empties the old ring before it moves on, so the frames stay in order
/// and at most two rings are in use. A ring both have left is freed by the next `resize` or with
/// the consumer.
///
/// Thread: `push` on the audio thread; `read` on one consumer thread; `resize` and
/// `freeLeftRings` on one other thread (the supervisor); counters and `capacityFrames` anywhere;
/// (the tests' `pendingFrames` on the consumer's thread: elsewhere it may read a ring that
/// `freeLeftRings` frees).
public final class TapConsumer: @unchecked Sendable {
  typealias Ring = UnsafeMutablePointer<jack_ringbuffer_t>

  /// The signal this consumer receives.
  public let tap: Tap
  /// The ring's size asked for at creation, and the sample rate it is counted at.
  public let seconds: Double
  public let sampleRate: Double
  /// The ring the audio thread writes (the audio thread's own after creation).
  private var producerRing: Ring
  /// The audio thread's ring, and the consumer's, as bit patterns (the consumer moves to the
  /// audio thread's once it has emptied its own).
  let writtenRing: Atomic<UInt>
  let readingRing: Atomic<UInt>
  /// A replacement waiting for the audio thread (0: none).
  private let incomingRing = Atomic<UInt>(0)
  /// Rings the consumer has left, for `resize` or deinit to free.
  private let leftRings = Locked<[UInt]>([])
  private let capacity: Atomic<Int>
  /// Frames the audio thread put into the ring (its writer: a load and a store, no locked add).
  public let pushedFrames = Atomic<UInt64>(0)
  /// Frames the audio thread had to drop because the ring was full.
  public let droppedFrames = Atomic<UInt64>(0)
  /// The two free parts of the ring, as the audio thread asks for them at a push (its own).
  private let writeVector: UnsafeMutablePointer<jack_ringbuffer_data_t> = {
    let vector = UnsafeMutablePointer<jack_ringbuffer_data_t>.allocate(capacity: 2)
    vector.initialize(repeating: jack_ringbuffer_data_t(), count: 2)
    return vector
  }()

  /// Bytes per interleaved stereo float frame.
  public static let bytesPerFrame = 2 * MemoryLayout<Float>.size

  /// A consumer whose ring holds at least `seconds` at `sampleRate` (rounded up to a power of
  /// two by libjack). Allocates and touches the ring here, never on the audio thread.
  public init(tap: Tap, seconds: Double, sampleRate: Double) {
    self.tap = tap
    (self.seconds, self.sampleRate) = (seconds, sampleRate)
    let ring = Self.makeRing(seconds: seconds, sampleRate: sampleRate)
    producerRing = ring
    writtenRing = Atomic(UInt(bitPattern: ring))
    readingRing = Atomic(UInt(bitPattern: ring))
    capacity = Atomic(Self.capacity(of: ring))
  }

  /// A ring of at least `seconds` at `sampleRate` (at least 1024 frames), its pages touched.
  private static func makeRing(seconds: Double, sampleRate: Double) -> Ring {
    let bytes = max(Int(seconds * sampleRate), 1024) * bytesPerFrame
    guard let ring = jack_ringbuffer_create(bytes) else {
      preconditionFailure("out of memory for a \(bytes)-byte tap ring")
    }
    memset(ring.pointee.buf, 0, ring.pointee.size)  // fault the pages in now
    return ring
  }

  /// - Realtime: safe
  private static func capacity(of ring: Ring) -> Int { (ring.pointee.size - 1) / bytesPerFrame }

  deinit {
    let (reading, written) = (readingRing.load(ordering: .acquiring), writtenRing.load(ordering: .acquiring))
    var rings = [reading, incomingRing.load(ordering: .acquiring)] + leftRings.withLock { $0 }
    if written != reading { rings.append(written) }
    for raw in rings { if let ring = Ring(bitPattern: raw) { jack_ringbuffer_free(ring) } }
    writeVector.deallocate()
  }

  /// How many frames the ring the audio thread writes holds.
  public var capacityFrames: Int { capacity.load(ordering: .relaxed) }

  /// Replaces the ring by one of at least `seconds` (allocated and touched here): the audio
  /// thread moves to it at a push, the consumer once it has read the old one out. Frees the
  /// rings both have left; a replacement the audio thread never took (it did not run) is freed
  /// when another takes its place.
  public func resize(seconds: Double) {
    freeLeftRings()
    let ring = Self.makeRing(seconds: seconds, sampleRate: sampleRate)
    let untaken = incomingRing.exchange(UInt(bitPattern: ring), ordering: .acquiringAndReleasing)
    if let untaken = Ring(bitPattern: untaken) { jack_ringbuffer_free(untaken) }
  }

  /// Frees the rings the audio thread and the consumer have both left (after a `resize`).
  public func freeLeftRings() {
    let left = leftRings.withLock { rings in
      defer { rings = [] }
      return rings
    }
    for raw in left { if let ring = Ring(bitPattern: raw) { jack_ringbuffer_free(ring) } }
  }

  /// Interleaves `frames` frames of `left` and `right` straight into the ring, or drops them
  /// all (counted) when they do not fit, so the ring always holds whole cycles. Takes a waiting
  /// replacement first.
  /// - Realtime: safe
  @inline(__always)
  func push(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {
    if incomingRing.load(ordering: .relaxed) != 0 { takeReplacement() }
    let ring = producerRing
    let bytes = frames * Self.bytesPerFrame
    let vector = writeVector
    jack_ringbuffer_get_write_vector(ring, vector)
    // The ring's size is a power of two, so both parts hold whole frames.
    let firstFrames = min(vector[0].len / Self.bytesPerFrame, frames)
    let secondFrames = min(vector[1].len / Self.bytesPerFrame, frames - firstFrames)
    guard firstFrames + secondFrames == frames, let first = vector[0].buf else {
      droppedFrames.store(droppedFrames.load(ordering: .relaxed) &+ UInt64(frames), ordering: .relaxed)
      return
    }
    Self.interleave(left, right, into: UnsafeMutableRawPointer(first), frames: firstFrames)
    if secondFrames > 0, let second = vector[1].buf {
      Self.interleave(
        left + firstFrames, right + firstFrames, into: UnsafeMutableRawPointer(second), frames: secondFrames)
    }
    jack_ringbuffer_write_advance(ring, bytes)
    pushedFrames.store(pushedFrames.load(ordering: .relaxed) &+ UInt64(frames), ordering: .relaxed)
  }

  /// Writes `frames` frames of `left` and `right` interleaved (L R L R …) at `destination`, four
  /// frames at a time.
  /// - Realtime: safe
  @inline(__always)
  static func interleave(
    _ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>, into destination: UnsafeMutableRawPointer,
    frames: Int
  ) {
    let (l, r) = (UnsafeRawPointer(left), UnsafeRawPointer(right))
    var f = 0
    while f + 4 <= frames {
      let a = l.loadUnaligned(fromByteOffset: 4 * f, as: SIMD4<Float>.self)
      let b = r.loadUnaligned(fromByteOffset: 4 * f, as: SIMD4<Float>.self)
      destination.storeBytes(of: SIMD4(a[0], b[0], a[1], b[1]), toByteOffset: 8 * f, as: SIMD4<Float>.self)
      destination.storeBytes(
        of: SIMD4(a[2], b[2], a[3], b[3]), toByteOffset: 8 * f + 16, as: SIMD4<Float>.self)
      f += 4
    }
    while f < frames {
      destination.storeBytes(of: left[f], toByteOffset: 8 * f, as: Float.self)
      destination.storeBytes(of: right[f], toByteOffset: 8 * f + 4, as: Float.self)
      f += 1
    }
  }

  /// Moves the audio thread to the waiting ring, once the consumer reads the one it writes now
  /// (so the consumer always moves to the ring that came next).
  /// - Realtime: safe
  private func takeReplacement() {
    guard readingRing.load(ordering: .acquiring) == UInt(bitPattern: producerRing) else { return }
    let raw = incomingRing.exchange(0, ordering: .acquiring)
    guard let ring = Ring(bitPattern: raw) else { return }
    producerRing = ring
    capacity.store(Self.capacity(of: ring), ordering: .relaxed)
    // After every write to the old ring: the consumer, seeing this, has all of them.
    writtenRing.store(raw, ordering: .releasing)
  }

  /// Moves up to `maxFrames` whole frames out of the ring into `destination`; returns how many.
  public func read(into destination: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
    guard var ring = Ring(bitPattern: readingRing.load(ordering: .relaxed)) else { return 0 }
    var available = jack_ringbuffer_read_space(ring) / Self.bytesPerFrame
    if available == 0 {
      let written = writtenRing.load(ordering: .acquiring)
      if written != UInt(bitPattern: ring) {
        // The audio thread has moved on: what it left here came before the store just read.
        available = jack_ringbuffer_read_space(ring) / Self.bytesPerFrame
        if available == 0, let next = Ring(bitPattern: written) {
          let old = UInt(bitPattern: ring)
          leftRings.withLock { $0.append(old) }
          ring = next
          readingRing.store(written, ordering: .releasing)
          available = jack_ringbuffer_read_space(ring) / Self.bytesPerFrame
        }
      }
    }
    let frames = min(available, maxFrames)
    guard frames > 0 else { return 0 }
    let bytes = frames * Self.bytesPerFrame
    _ = UnsafeMutableRawPointer(destination).withMemoryRebound(to: CChar.self, capacity: bytes) {
      jack_ringbuffer_read(ring, $0, bytes)
    }
    return frames
  }

  /// Runs the audio thread's replacement once off it (first-run costs), on a fresh consumer.
  func warmReplacement(_ scratch: UnsafeMutablePointer<Float>, frames: Int) {
    resize(seconds: seconds)
    push(left: scratch, right: scratch, frames: frames)
    _ = read(into: scratch, maxFrames: frames)
    _ = read(into: scratch, maxFrames: frames)
  }
}

/// The table of tap consumers the audio thread feeds: a fixed number of slots, each an atomic
/// pointer to a retained `TapConsumer` (0: empty). The supervisor publishes a consumer into a
/// free slot; to detach one it clears the slot, waits until the audio thread has finished a
/// cycle, then releases it. The audio thread never locks, allocates or waits here.
///
/// It outlives JACK clients (reconnections), so a recording spans server restarts.
/// Thread: `write` and `finishCycle` on the audio thread; `attach`/`detach` on other threads
/// (serialized by a lock the audio thread never touches).
public final class TapTable: @unchecked Sendable {
  /// How many consumers can be attached at once.
  public static let slotCount = 8
  /// The largest block the warm-up (`warm`) runs through a scratch consumer.
  static let chunkFrames = 8192
  private let slots: UnsafeMutablePointer<Atomic<UInt>>
  /// Cycles the audio thread finished (after its last use of any consumer in that cycle).
  public let passes = Atomic<UInt64>(0)
  /// Consumers attached per tap, so a cycle with none skips the interleaving.
  private let attachedPerTap: UnsafeMutablePointer<Atomic<Int>>
  private let editing = Locked<Void>(())

  public init() {
    slots = .allocate(capacity: Self.slotCount)
    for i in 0..<Self.slotCount { (slots + i).initialize(to: Atomic(0)) }
    attachedPerTap = .allocate(capacity: Tap.allCases.count)
    for i in 0..<Tap.allCases.count { (attachedPerTap + i).initialize(to: Atomic(0)) }
  }

  deinit {
    for i in 0..<Self.slotCount {
      let raw = slots[i].exchange(0, ordering: .acquiringAndReleasing)
      if let p = UnsafeRawPointer(bitPattern: raw) { Unmanaged<TapConsumer>.fromOpaque(p).release() }
    }
    slots.deinitialize(count: Self.slotCount)
    slots.deallocate()
    attachedPerTap.deinitialize(count: Tap.allCases.count)
    attachedPerTap.deallocate()
  }

  /// Publishes `consumer` into a free slot; false when every slot is taken.
  public func attach(_ consumer: TapConsumer) -> Bool {
    editing.withLock { _ in
      for i in 0..<Self.slotCount where slots[i].load(ordering: .relaxed) == 0 {
        attachedPerTap[consumer.tap.rawValue].add(1, ordering: .relaxed)
        let raw = UInt(bitPattern: Unmanaged.passRetained(consumer).toOpaque())
        slots[i].store(raw, ordering: .releasing)
        return true
      }
      return false
    }
  }

  /// Unpublishes `consumer`; once the audio thread has finished the cycle that may still use it
  /// (or at once when `audioRunning` is false), the table's reference is released. When the
  /// audio thread does not pass a cycle within `timeoutMilliseconds`, the reference is kept
  /// (leaked) rather than freed under it. Returns false when it was not attached.
  @discardableResult
  public func detach(_ consumer: TapConsumer, audioRunning: Bool, timeoutMilliseconds: Int = 500) -> Bool {
    let raw = UInt(bitPattern: Unmanaged.passUnretained(consumer).toOpaque())
    let found: Bool = editing.withLock { _ in
      for i in 0..<Self.slotCount where slots[i].load(ordering: .relaxed) == raw {
        slots[i].store(0, ordering: .releasing)
        attachedPerTap[consumer.tap.rawValue].add(-1, ordering: .relaxed)
        return true
      }
      return false
    }
    guard found else { return false }
    if audioRunning {
      let before = passes.load(ordering: .acquiring)
      var waited = 0
      while passes.load(ordering: .acquiring) < before + 2 {
        // Kept alive (leaked) rather than freed under a stalled audio thread.
        guard waited < timeoutMilliseconds else { return true }
        usleep(1000)
        waited += 1
      }
    }
    Unmanaged.passUnretained(consumer).release()  // the table's reference, taken at attach
    return true
  }

  /// Hands one cycle of `tap` (two channels) to every consumer of that tap.
  /// - Realtime: safe
  @inline(__always)
  func write(_ tap: Tap, left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {
    guard attachedPerTap[tap.rawValue].load(ordering: .relaxed) > 0 else { return }
    for i in 0..<Self.slotCount {
      guard let p = UnsafeRawPointer(bitPattern: slots[i].load(ordering: .acquiring)) else { continue }
      Unmanaged<TapConsumer>.fromOpaque(p)._withUnsafeGuaranteedRef {
        if $0.tap == tap { $0.push(left: left, right: right, frames: frames) }
      }
    }
  }

  /// Marks the end of the audio thread's use of the consumers in this cycle.
  /// - Realtime: safe
  @inline(__always)
  func finishCycle() { passes.store(passes.load(ordering: .relaxed) &+ 1, ordering: .releasing) }

  /// Runs the audio thread's tap code once off it (before activation), through a scratch
  /// consumer, so first-run costs (lazily bound libjack symbols, metadata) are paid here.
  func warm(frames: Int) {
    let n = min(max(frames, 1), Self.chunkFrames)
    let scratch = TapConsumer(tap: .output, seconds: 0.05, sampleRate: 48000)
    let block = UnsafeMutablePointer<Float>.allocate(capacity: 2 * n)
    defer { block.deallocate() }
    block.initialize(repeating: 0, count: 2 * n)
    scratch.push(left: block, right: block + n, frames: n)
    _ = scratch.read(into: block, maxFrames: n)
    scratch.warmReplacement(block, frames: n)
    _ = attachedPerTap[0].load(ordering: .relaxed)
    _ = slots[0].load(ordering: .acquiring)
    _ = passes.load(ordering: .acquiring)
  }
}
