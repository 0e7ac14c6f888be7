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
/// Thread: `push` on the audio thread; `read` on one consumer thread; counters anywhere.
public final class TapConsumer: @unchecked Sendable {
  /// The signal this consumer receives.
  public let tap: Tap
  private let ring: UnsafeMutablePointer<jack_ringbuffer_t>
  /// How many frames the ring holds.
  public let capacityFrames: Int
  /// Frames the audio thread put into the ring.
  public let pushedFrames = Atomic<UInt64>(0)
  /// Frames the audio thread had to drop because the ring was full.
  public let droppedFrames = Atomic<UInt64>(0)

  /// Bytes per interleaved stereo float frame.
  public static let bytesPerFrame = 2 * MemoryLayout<Float>.size

  /// A consumer whose ring holds at least `seconds` at `sampleRate` (rounded up to a power of
  /// two by libjack). Allocates and touches the ring here, never on the audio thread.
  public init(tap: Tap, seconds: Double, sampleRate: Double) {
    self.tap = tap
    let bytes = max(Int(seconds * sampleRate), 1024) * Self.bytesPerFrame
    ring = jack_ringbuffer_create(bytes)
    memset(ring.pointee.buf, 0, ring.pointee.size)  // fault the pages in now
    capacityFrames = (ring.pointee.size - 1) / Self.bytesPerFrame
  }

  deinit { jack_ringbuffer_free(ring) }

  /// Copies `frames` interleaved frames into the ring, or drops them all (counted) when they
  /// do not fit, so the ring always holds whole cycles.
  /// - Realtime: safe
  @inline(__always)
  func push(_ interleaved: UnsafePointer<Float>, frames: Int) {
    let bytes = frames * Self.bytesPerFrame
    if jack_ringbuffer_write_space(ring) < bytes {
      droppedFrames.add(UInt64(frames), ordering: .relaxed)
      return
    }
    _ = UnsafeRawPointer(interleaved).withMemoryRebound(to: CChar.self, capacity: bytes) {
      jack_ringbuffer_write(ring, $0, bytes)
    }
    pushedFrames.add(UInt64(frames), ordering: .relaxed)
  }

  /// Moves up to `maxFrames` whole frames out of the ring into `destination`; returns how many.
  public func read(into destination: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
    let available = jack_ringbuffer_read_space(ring) / Self.bytesPerFrame
    let frames = min(available, maxFrames)
    guard frames > 0 else { return 0 }
    let bytes = frames * Self.bytesPerFrame
    _ = UnsafeMutableRawPointer(destination).withMemoryRebound(to: CChar.self, capacity: bytes) {
      jack_ringbuffer_read(ring, $0, bytes)
    }
    return frames
  }

  /// Frames waiting in the ring.
  public var pendingFrames: Int { jack_ringbuffer_read_space(ring) / Self.bytesPerFrame }
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
  /// The largest number of frames interleaved at once (larger cycles go in pieces).
  static let chunkFrames = 8192
  private let slots: UnsafeMutablePointer<Atomic<UInt>>
  private let interleaved: UnsafeMutablePointer<Float>
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
    interleaved = .allocate(capacity: 2 * Self.chunkFrames)
    interleaved.initialize(repeating: 0, count: 2 * Self.chunkFrames)
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
    interleaved.deallocate()
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
    Unmanaged<TapConsumer>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!).release()
    return true
  }

  /// Hands one cycle of `tap` (two channels) to every consumer of that tap.
  /// - Realtime: safe
  @inline(__always)
  func write(_ tap: Tap, left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {
    guard attachedPerTap[tap.rawValue].load(ordering: .relaxed) > 0 else { return }
    var offset = 0
    while offset < frames {
      let n = min(frames - offset, Self.chunkFrames)
      for f in 0..<n {
        interleaved[2 * f] = left[offset + f]
        interleaved[2 * f + 1] = right[offset + f]
      }
      for i in 0..<Self.slotCount {
        let raw = slots[i].load(ordering: .acquiring)
        guard raw != 0 else { continue }
        Unmanaged<TapConsumer>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!)._withUnsafeGuaranteedRef {
          if $0.tap == tap { $0.push(interleaved, frames: n) }
        }
      }
      offset += n
    }
  }

  /// Marks the end of the audio thread's use of the consumers in this cycle.
  /// - Realtime: safe
  @inline(__always)
  func finishCycle() { passes.add(1, ordering: .releasing) }

  /// Runs the audio thread's tap code once off it (before activation), through a scratch
  /// consumer, so first-run costs (lazily bound libjack symbols, metadata) are paid here.
  func warm(frames: Int) {
    let n = min(max(frames, 1), Self.chunkFrames)
    let scratch = TapConsumer(tap: .output, seconds: 0.05, sampleRate: 48000)
    interleaved.update(repeating: 0, count: 2 * n)
    scratch.push(interleaved, frames: n)
    _ = scratch.read(into: interleaved, maxFrames: n)
    _ = attachedPerTap[0].load(ordering: .relaxed)
    _ = slots[0].load(ordering: .acquiring)
    _ = passes.load(ordering: .acquiring)
  }
}
