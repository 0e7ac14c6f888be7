import CJack
import DSP
import Foundation
import Testing

@testable import LiveMicEngine

/// MIDI control changes mapped to chain parameters: the three-byte message, and the same
/// messages in a JACK MIDI buffer handed to a cycle.
@Suite struct MidiMapTests {
  /// A chain with `output.volume` (0…1) and `music.volume_db` (-60…12).
  static func chain() -> VoiceChain {
    Engine.chain([
      StageDescription(id: "music", type: "music"), StageDescription(id: "output", type: "output"),
    ])
  }

  @Test("A mapped control change sets its parameter across the parameter's range")
  func mapped() throws {
    let chain = Self.chain()
    let map = MidiMap()
    let volume = try #require(chain.parameter("output.volume"))
    let music = try #require(chain.parameter("music.volume_db"))
    map.bind(cc: 7, channel: 0, to: volume)
    map.bind(cc: 8, channel: 0, to: music)
    for (value, expected) in [(127, Float(1)), (0, 0), (64, 64.0 / 127)] as [(UInt8, Float)] {
      map.apply(status: 0xB0, 7, value, targets: chain.targets, count: chain.parameterCount)
      #expect(abs(chain.targets.value(volume.index) - expected) < 1e-6)
    }
    map.apply(status: 0xB0, 8, 127, targets: chain.targets, count: chain.parameterCount)
    #expect(chain.targets.value(music.index) == 12)
    map.apply(status: 0xB0, 8, 0, targets: chain.targets, count: chain.parameterCount)
    #expect(chain.targets.value(music.index) == -60)
    #expect(map.lastMoved.load(ordering: .relaxed) == 5 << 16 | 0 << 8 | 8, "five moves, the last CC 8")
  }

  @Test("The cycle reads midi_in only while a controller is mapped or a learn waits")
  func listening() throws {
    let chain = Self.chain()
    let map = MidiMap()
    #expect(!map.isListening, "nothing mapped, no learn: the cycle fetches no MIDI buffer")
    map.bind(cc: 7, channel: nil, to: try #require(chain.parameter("output.volume")))
    #expect(map.isListening)
    map.clear()
    #expect(!map.isListening)
    map.learning.store(true, ordering: .relaxed)
    #expect(map.isListening)
  }

  @Test("Other channels, unmapped controllers and other messages set nothing")
  func ignored() throws {
    let chain = Self.chain()
    let map = MidiMap()
    let volume = try #require(chain.parameter("output.volume"))
    let before = chain.targets.value(volume.index)
    map.bind(cc: 7, channel: 3, to: volume)
    map.apply(status: 0xB0, 7, 127, targets: chain.targets, count: chain.parameterCount)  // channel 1
    map.apply(status: 0xB3, 9, 127, targets: chain.targets, count: chain.parameterCount)  // unmapped
    #expect(map.lastMoved.load(ordering: .relaxed) == 2 << 16 | 3 << 8 | 9, "both moves noted")
    map.apply(status: 0x93, 7, 127, targets: chain.targets, count: chain.parameterCount)  // a note on
    map.apply(status: 0xE3, 7, 127, targets: chain.targets, count: chain.parameterCount)  // pitch bend
    #expect(map.lastMoved.load(ordering: .relaxed) >> 16 == 2, "not control changes")
    #expect(chain.targets.value(volume.index) == before)
    map.apply(status: 0xB3, 7, 127, targets: chain.targets, count: chain.parameterCount)
    #expect(chain.targets.value(volume.index) == 1)
    // An index beyond the running chain (a mapping made for a larger one) is skipped.
    map.apply(status: 0xB3, 7, 0, targets: chain.targets, count: volume.index)
    #expect(chain.targets.value(volume.index) == 1)
  }

  @Test("A mapped controller is consumed; notes, other channels and unmapped controllers pass on to plugins")
  func consumedOrPassed() throws {
    let chain = Self.chain()
    let map = MidiMap()
    let volume = try #require(chain.parameter("output.volume"))
    map.bind(cc: 7, channel: 0, to: volume)
    let apply = { (status: UInt8, d1: UInt8) in
      map.apply(status: status, d1, 64, targets: chain.targets, count: chain.parameterCount)
    }
    #expect(apply(0xB0, 7) == .consumed)
    #expect(apply(0xB1, 7) == .passed)  // channel 2: unmapped
    #expect(apply(0xB0, 8) == .passed)
    #expect(apply(0x90, 60) == .passed)  // a note on
    #expect(apply(0xE0, 0) == .passed)  // pitch bend
  }

  @Test("A binding for every channel, and clearing every binding")
  func allChannelsAndClear() throws {
    let chain = Self.chain()
    let map = MidiMap()
    let volume = try #require(chain.parameter("output.volume"))
    map.bind(cc: 1, channel: nil, to: volume)
    for channel in [0, 9, 15] as [UInt8] {
      map.apply(
        status: 0xB0 | channel, 1, UInt8(channel), targets: chain.targets, count: chain.parameterCount)
      #expect(abs(chain.targets.value(volume.index) - Float(channel) / 127) < 1e-6)
    }
    map.clear()
    map.apply(status: 0xB0, 1, 127, targets: chain.targets, count: chain.parameterCount)
    #expect(abs(chain.targets.value(volume.index) - 15 / 127) < 1e-6, "cleared")
  }

  /// `jack_midi_reset_buffer` formats a bare buffer as a JACK MIDI port buffer without a server
  /// (jackd2's libjack; it is deprecated, so it is looked up rather than imported).
  typealias ResetBuffer = @convention(c) (UnsafeMutableRawPointer?) -> Void

  @Test("Control changes in a cycle's JACK MIDI buffer reach the running chain")
  func throughJackBuffer() throws {
    let symbol = try #require(dlsym(nil, "jack_midi_reset_buffer"))
    let reset = unsafeBitCast(symbol, to: ResetBuffer.self)
    // A port buffer of jackd2's largest period (8192 frames of floats), with room to spare.
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 64)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 65536)
    reset(buffer)
    let events: [(UInt32, [UInt8])] = [(0, [0xB0, 7, 127]), (5, [0x90, 60, 100]), (10, [0xB0, 8, 0])]
    for (time, bytes) in events { #expect(jack_midi_event_write(buffer, time, bytes, bytes.count) == 0) }
    #expect(jack_midi_get_event_count(buffer) == 3)

    let state = ProcessState(chain: Self.chain(), sampleRate: Engine.sampleRate)
    let chain = state.slot.current().takeUnretainedValue()
    let volume = try #require(chain.parameter("output.volume"))
    let music = try #require(chain.parameter("music.volume_db"))
    state.midi.bind(cc: 7, channel: 0, to: volume)
    state.midi.bind(cc: 8, channel: nil, to: music)
    FakePorts().run(state, frames: 64, midi: buffer)
    #expect(chain.targets.value(volume.index) == 1)
    #expect(chain.targets.value(music.index) == -60)
    #expect(state.midi.lastMoved.load(ordering: .relaxed) == 2 << 16 | 8)
  }
}

/// A binding is three words (parameter index, minimum, maximum) the audio thread reads while
/// the supervisor may rewrite them: re-binding a controller between two parameters of different
/// ranges while control changes arrive must never apply one binding's range to the other's
/// parameter. A million control changes (a tenth under TSan, a quarter under ASan).
@Suite struct MidiMapStressTests {
  @Test("Re-binding a controller while its control changes arrive never mixes two bindings")
  func rebinding() throws {
    let chain = MidiMapTests.chain()
    let map = MidiMap()
    let volume = try #require(chain.parameter("output.volume"))  // 0…1
    let music = try #require(chain.parameter("music.volume_db"))  // -60…12
    map.bind(cc: 7, channel: 0, to: volume)
    let messages = Engine.stressCount(1_000_000)
    let stop = Flag()
    let binder = Worker {
      var flip = false
      while !stop.value {
        map.bind(cc: 7, channel: 0, to: flip ? volume : music)
        flip.toggle()
      }
    }
    var torn = 0
    for i in 0..<messages {
      map.apply(status: 0xB0, 7, i % 2 == 0 ? 127 : 0, targets: chain.targets, count: chain.parameterCount)
      let v = chain.targets.value(volume.index)
      let m = chain.targets.value(music.index)
      if v < 0 || v > 1 || m < -60 || m > 12 { torn += 1 }
    }
    stop.set()
    binder.wait()
    #expect(torn == 0, "\(torn) of \(messages) control changes applied a mixed binding")
  }
}
