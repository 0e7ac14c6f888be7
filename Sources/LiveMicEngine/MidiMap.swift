import CJack
import DSP
import Synchronization

/// MIDI control-change mappings: (channel, CC number) → a parameter of the running chain, with
/// its range. Read by the audio thread for every CC on `midi_in`; rewritten by the supervisor
/// when the chain or the mappings change.
///
/// Thread: `apply` on the audio thread; `bind`/`clear` on the supervisor.
public final class MidiMap: @unchecked Sendable {
  /// 16 channels × 128 controllers; -1 = unmapped, else the parameter's index in the targets.
  private let index: UnsafeMutablePointer<Atomic<Int32>>
  private let minimum: UnsafeMutablePointer<Atomic<UInt32>>
  private let maximum: UnsafeMutablePointer<Atomic<UInt32>>
  /// The last controller that moved, as `seen << 16 | channel << 8 | cc`, for MIDI learn.
  public let lastMoved = Atomic<UInt64>(0)
  private static let slots = 16 * 128

  public init() {
    index = .allocate(capacity: Self.slots)
    minimum = .allocate(capacity: Self.slots)
    maximum = .allocate(capacity: Self.slots)
    for i in 0..<Self.slots {
      (index + i).initialize(to: Atomic(-1))
      (minimum + i).initialize(to: Atomic(0))
      (maximum + i).initialize(to: Atomic(0))
    }
  }

  deinit {
    index.deinitialize(count: Self.slots)
    minimum.deinitialize(count: Self.slots)
    maximum.deinitialize(count: Self.slots)
    index.deallocate()
    minimum.deallocate()
    maximum.deallocate()
  }

  /// Maps `cc` on `channel` (0–15, or nil for all 16) to parameter `parameter` of `chain`.
  public func bind(cc: Int, channel: Int?, to parameter: VoiceChain.Parameter) {
    for ch in channel.map({ [$0] }) ?? Array(0..<16) {
      let slot = ch * 128 + cc
      minimum[slot].store(parameter.spec.minimum.bitPattern, ordering: .relaxed)
      maximum[slot].store(parameter.spec.maximum.bitPattern, ordering: .relaxed)
      index[slot].store(Int32(parameter.index), ordering: .releasing)
    }
  }

  /// Removes every mapping.
  public func clear() {
    for i in 0..<Self.slots { index[i].store(-1, ordering: .relaxed) }
  }

  /// Applies the control changes in one cycle's MIDI buffer: each mapped CC sets its parameter
  /// to the controller's position scaled to the parameter's range (smoothed by the chain like
  /// any change).
  /// - Realtime: safe
  @inline(__always)
  func apply(_ buffer: UnsafeMutableRawPointer, targets: ParameterTargets, count: Int) {
    let events = jack_midi_get_event_count(buffer)
    guard events > 0 else { return }
    var event = jack_midi_event_t()
    for i in 0..<events {
      guard jack_midi_event_get(&event, buffer, i) == 0, event.size >= 3, let data = event.buffer else {
        continue
      }
      apply(status: data[0], data[1], data[2], targets: targets, count: count)
    }
  }

  /// Applies one three-byte MIDI message: a control change (`0xBn cc value`) notes the moved
  /// controller (MIDI learn) and, when mapped, sets its parameter; any other message is ignored.
  /// - Realtime: safe
  @inline(__always)
  func apply(status: UInt8, _ data1: UInt8, _ data2: UInt8, targets: ParameterTargets, count: Int) {
    guard status & 0xF0 == 0xB0 else { return }
    let channel = Int(status & 0x0F)
    let cc = Int(data1 & 0x7F)
    let value = Float(data2 & 0x7F) / 127
    let moved = lastMoved.load(ordering: .relaxed) >> 16
    lastMoved.store((moved &+ 1) << 16 | UInt64(channel) << 8 | UInt64(cc), ordering: .relaxed)
    let slot = channel * 128 + cc
    let parameter = Int(index[slot].load(ordering: .acquiring))
    guard parameter >= 0 && parameter < count else { return }
    let lo = Float(bitPattern: minimum[slot].load(ordering: .relaxed))
    let hi = Float(bitPattern: maximum[slot].load(ordering: .relaxed))
    targets.set(parameter, lo + (hi - lo) * value)
  }
}
