/// One cycle's MIDI events for the chain's stages that take MIDI (LV2 plugins with a MIDI
/// input): each event's frame offset in the cycle and its bytes, in time order, in storage
/// allocated once. The engine clears and fills it at the start of each cycle, before the chain
/// runs; the stages read it while the chain runs, in the same cycle.
///
/// Thread: `clear`, `append` and the readers on the thread that runs the chain (the audio
/// thread); made and freed off it with the chain.
public final class MidiEvents: @unchecked Sendable {
  /// Events a cycle holds; later ones are dropped (and counted in `dropped`).
  public static let capacity = 512
  /// Bytes of event data a cycle holds (a system-exclusive message may be long).
  public static let byteCapacity = 16384

  /// How many events this cycle holds.
  public private(set) var count = 0
  /// Events that did not fit since the chain was made (a flood of MIDI in one cycle).
  public private(set) var dropped = 0
  private var usedBytes = 0
  private let frames: UnsafeMutablePointer<UInt32>
  private let offsets: UnsafeMutablePointer<Int32>
  private let sizes: UnsafeMutablePointer<Int32>
  private let bytes: UnsafeMutablePointer<UInt8>

  public init() {
    frames = .allocate(capacity: Self.capacity)
    frames.initialize(repeating: 0, count: Self.capacity)
    offsets = .allocate(capacity: Self.capacity)
    offsets.initialize(repeating: 0, count: Self.capacity)
    sizes = .allocate(capacity: Self.capacity)
    sizes.initialize(repeating: 0, count: Self.capacity)
    bytes = .allocate(capacity: Self.byteCapacity)
    bytes.initialize(repeating: 0, count: Self.byteCapacity)
  }

  deinit {
    frames.deallocate()
    offsets.deallocate()
    sizes.deallocate()
    bytes.deallocate()
  }

  /// What `append` did with an event.
  public enum Appended: Sendable {
    case stored
    /// No room left this cycle (counted in `dropped`).
    case full
  }

  /// Forgets the previous cycle's events.
  /// - Realtime: safe
  @inline(__always)
  public func clear() {
    count = 0
    usedBytes = 0
  }

  /// Adds an event at `frame` (frames from the cycle's start; events come in time order).
  /// - Realtime: safe
  @discardableResult
  public func append(frame: UInt32, data: UnsafePointer<UInt8>, size: Int) -> Appended {
    guard size > 0, count < Self.capacity, usedBytes + size <= Self.byteCapacity else {
      dropped &+= 1
      return .full
    }
    frames[count] = frame
    offsets[count] = Int32(usedBytes)
    sizes[count] = Int32(size)
    (bytes + usedBytes).update(from: data, count: size)
    usedBytes &+= size
    count &+= 1
    return .stored
  }

  /// The frame offset of event `i` in the cycle.
  /// - Realtime: safe
  @inline(__always)
  public func frame(_ i: Int) -> UInt32 { frames[i] }

  /// The bytes of event `i` (valid until the next `clear`).
  /// - Realtime: safe
  @inline(__always)
  public func data(_ i: Int) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(start: bytes + Int(offsets[i]), count: Int(sizes[i]))
  }
}
