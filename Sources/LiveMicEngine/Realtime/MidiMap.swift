import CJack
import DSP
import Synchronization

/// MIDI control-change mappings: (channel, CC number) → a parameter of the running chain, with
/// its range. Read by the audio thread for every CC on `midi_in`; rewritten by the supervisor
/// when the chain or the mappings change.
///
/// Thread: `apply` on the audio thread; `bind`/`clear` on the supervisor.
public final class MidiMap: @unchecked Sendable {
  /// 16 channels × 128 controllers, each one binding in one double-word atomic, so the audio
  /// thread never reads half of a re-binding: the parameter's index in the targets (-1:
  /// unmapped), and its range (minimum and maximum Float bits, high and low half).
  private let bindings: UnsafeMutablePointer<Atomic<WordPair>>
  /// The last controller that moved, as `seen << 16 | channel << 8 | cc`, for MIDI learn.
  public let lastMoved = Atomic<UInt64>(0)
  /// Whether any controller is mapped (set by `bind`, cleared by `clear`).
  private let hasBindings = Atomic<Bool>(false)
  /// Set by the supervisor while a MIDI learn waits for a controller to move.
  public let learning = Atomic<Bool>(false)

  /// Whether the audio thread reads `midi_in` at all: only while a controller is mapped or a
  /// learn waits. Otherwise the cycle fetches no MIDI buffer (a JACK port buffer and its event
  /// count cost a few hundred nanoseconds of a cold cycle).
  /// - Realtime: safe
  @inline(__always)
  var isListening: Bool {
    hasBindings.load(ordering: .relaxed) || learning.load(ordering: .relaxed)
  }
  private static let slots = 16 * 128

  public init() {
    bindings = .allocate(capacity: Self.slots)
    for i in 0..<Self.slots { (bindings + i).initialize(to: Atomic(Self.unmapped)) }
  }

  deinit {
    bindings.deinitialize(count: Self.slots)
    bindings.deallocate()
  }

  private static let unmapped = WordPair(first: UInt(bitPattern: -1), second: 0)

  /// Maps `cc` on `channel` (0–15, or nil for all 16) to parameter `parameter` of `chain`.
  public func bind(cc: Int, channel: Int?, to parameter: VoiceChain.Parameter) {
    for ch in channel.map({ [$0] }) ?? Array(0..<16) {
      let range = UInt(parameter.spec.minimum.bitPattern) << 32 | UInt(parameter.spec.maximum.bitPattern)
      bindings[ch * 128 + cc].store(
        WordPair(first: UInt(bitPattern: parameter.index), second: range), ordering: .releasing)
    }
    hasBindings.store(true, ordering: .releasing)
  }

  /// Removes every mapping.
  public func clear() {
    hasBindings.store(false, ordering: .releasing)
    for i in 0..<Self.slots { bindings[i].store(Self.unmapped, ordering: .releasing) }
  }

  /// Applies the control changes in one cycle's MIDI buffer: each mapped CC sets its parameter
  /// to the controller's position scaled to the parameter's range (smoothed by the chain like
  /// any change). Every event a mapping does not consume (notes, unmapped controllers, any
  /// other message) is passed on, at its frame, to `events` and `alsoEvents` (the MIDI of the
  /// running chain's plugins and of a chain fading out), when given.
  /// - Realtime: safe
  @inline(__always)
  func apply(
    _ buffer: UnsafeMutableRawPointer, targets: ParameterTargets, count: Int,
    forwardingTo events: MidiEvents?,
    _ alsoEvents: MidiEvents?
  ) {
    let total = jack_midi_get_event_count(buffer)
    guard total > 0 else { return }
    var event = jack_midi_event_t()
    for i in 0..<total {
      guard jack_midi_event_get(&event, buffer, i) == 0, event.size > 0, let data = event.buffer else {
        continue
      }
      if event.size == 3,
        apply(status: data[0], data[1], data[2], targets: targets, count: count) == .consumed
      {
        continue
      }
      events?.append(frame: event.time, data: data, size: event.size)
      alsoEvents?.append(frame: event.time, data: data, size: event.size)
    }
  }

  /// What a mapping did with a message.
  enum Outcome {
    /// A mapped control change: it set its parameter and goes no further.
    case consumed
    /// Anything else: it goes on to the plugins that take MIDI.
    case passed
  }

  /// Applies one three-byte MIDI message: a control change (`0xBn cc value`) notes the moved
  /// controller (MIDI learn) and, when mapped, sets its parameter; any other message is left.
  /// - Realtime: safe
  @discardableResult
  @inline(__always)
  func apply(status: UInt8, _ data1: UInt8, _ data2: UInt8, targets: ParameterTargets, count: Int) -> Outcome
  {
    guard status & 0xF0 == 0xB0 else { return .passed }
    let channel = Int(status & 0x0F)
    let cc = Int(data1 & 0x7F)
    let value = Float(data2 & 0x7F) / 127
    let moved = lastMoved.load(ordering: .relaxed) >> 16
    lastMoved.store((moved &+ 1) << 16 | UInt64(channel) << 8 | UInt64(cc), ordering: .relaxed)
    let binding = bindings[channel * 128 + cc].load(ordering: .acquiring)
    let parameter = Int(bitPattern: binding.first)
    guard parameter >= 0 && parameter < count else { return .passed }
    let lo = Float(bitPattern: UInt32(truncatingIfNeeded: binding.second >> 32))
    let hi = Float(bitPattern: UInt32(truncatingIfNeeded: binding.second))
    targets.set(parameter, lo + (hi - lo) * value)
    return .consumed
  }
}
