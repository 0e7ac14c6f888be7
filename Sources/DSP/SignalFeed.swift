/// Where a stage's extra input (an LV2 plugin's sidechain or CV input) comes from.
///
/// Thread: any (value type).
public enum SignalSource: Sendable, Hashable, CustomStringConvertible {
  /// The chain's input as the chain gets it (the microphone, after input gain and mute).
  case input
  /// The music bed as it comes in on the music ports (silence without them).
  case music
  /// The output of an earlier stage of the same chain, by id, in the same cycle.
  case stage(String)
  /// The voice as it reaches the stage: for a stage that processes the music bed (`"on":
  /// "music"`), the voice chain's signal at its place in the chain.
  case voice

  /// The preset's spelling: `input`, `music`, `voice` or a stage id.
  public init(_ text: String) {
    switch text {
    case "input": self = .input
    case "music": self = .music
    case "voice": self = .voice
    default: self = .stage(text)
    }
  }

  public var description: String {
    switch self {
    case .input: return "input"
    case .music: return "music"
    case .voice: return "voice"
    case .stage(let id): return id
    }
  }
}

/// One block of a `SignalSource`, stereo, in storage of its own: the chain copies the source's
/// samples in before the stages that read it run, in the same cycle.
///
/// Thread: written and read on the thread that runs the chain; made and freed off it.
public final class SignalFeed: @unchecked Sendable {
  /// Frames a feed holds; a longer block's later frames read as silence.
  public static let capacity = 8192
  public let left: UnsafeMutablePointer<Float>
  public let right: UnsafeMutablePointer<Float>
  /// Frames of the current block copied in (at most `capacity`).
  public private(set) var frames = 0

  public init() {
    left = .allocate(capacity: Self.capacity)
    left.initialize(repeating: 0, count: Self.capacity)
    right = .allocate(capacity: Self.capacity)
    right.initialize(repeating: 0, count: Self.capacity)
  }

  deinit {
    left.deallocate()
    right.deallocate()
  }

  /// Copies a block in (nil channels: silence).
  /// - Realtime: safe
  @inline(__always)
  public func fill(left l: UnsafePointer<Float>?, right r: UnsafePointer<Float>?, frames n: Int) {
    let count = min(n, Self.capacity)
    if let l { left.update(from: l, count: count) } else { left.update(repeating: 0, count: count) }
    if let r { right.update(from: r, count: count) } else { right.update(repeating: 0, count: count) }
    frames = count
  }

  /// Copies frames `start..<start + count` of channel `channel` (0 left, 1 right, 2 their mean)
  /// into `destination`; frames beyond the block's are silence.
  /// - Realtime: safe
  @inline(__always)
  public func copy(channel: Int, from start: Int, count: Int, into destination: UnsafeMutablePointer<Float>) {
    let available = max(0, min(count, frames - start))
    if available > 0 {
      switch channel {
      case 0: destination.update(from: left + start, count: available)
      case 1: destination.update(from: right + start, count: available)
      default:
        for f in 0..<available { destination[f] = (left[start &+ f] + right[start &+ f]) * 0.5 }
      }
    }
    if available < count { (destination + available).update(repeating: 0, count: count - available) }
  }
}
