import DSP
import Dispatch
import LV2Host
import LiveMicEngine
import LiveMicPresets
import Testing

@testable import LiveMicControl

/// `learn` on its own: the test moves the controller by writing `MidiMap.lastMoved` as the
/// audio thread does; a chain built offline gives the keys.
@Suite struct MidiLearnTests {
  static func chain() throws -> VoiceChain {
    var run = RunOptions()
    run.preset = "voice"
    let (_, entries) = try LiveSession.stages(for: run)
    return try ChainBuilder.build(
      entries,
      settings: HostSettings(
        sampleRate: 48000, maxBlockFrames: 256, nominalBlockFrames: 256, fixedBlocks: true)
    ).chain
  }

  /// A controller move as the audio thread reports it: counter, channel (0-based), CC.
  static func move(_ midi: MidiMap, cc: UInt64, channel: UInt64) {
    let count = midi.lastMoved.load(ordering: .relaxed) >> 16
    midi.lastMoved.store((count + 1) << 16 | channel << 8 | cc, ordering: .relaxed)
  }

  @Test("A request waits until a controller moves, then maps it and answers with CC, channel and key")
  func learns() throws {
    let learn = MidiLearn()
    let midi = MidiMap()
    let pending = ControlServer.Pending(["cmd": "learn", "key": "output.volume"])
    learn.start(pending, chain: try Self.chain(), midi: midi)
    #expect(learn.isWaiting && midi.learning.load(ordering: .relaxed))
    var bound: [(Int, Int, String)] = []
    learn.poll(midi) { bound.append(($0, $1, $2)) }
    #expect(bound.isEmpty && learn.isWaiting)
    Self.move(midi, cc: 20, channel: 2)
    learn.poll(midi) { bound.append(($0, $1, $2)) }
    #expect(
      bound.count == 1 && bound.first?.0 == 20 && bound.first?.1 == 3 && bound.first?.2 == "output.volume")
    #expect(pending.wait() == #"{"cc":20,"channel":3,"key":"output.volume","ok":true}"#)
    #expect(!learn.isWaiting && !midi.learning.load(ordering: .relaxed))
  }

  @Test("A bad key is answered at once; a wait that is over, or abandoned, is an error")
  func refusals() throws {
    let chain = try Self.chain()
    let midi = MidiMap()
    let learn = MidiLearn(timeout: .milliseconds(0))
    let noKey = ControlServer.Pending(["cmd": "learn"])
    learn.start(noKey, chain: chain, midi: midi)
    #expect(noKey.wait().contains(#""error":"\"learn\" needs a \"key\" string""#))
    let unknown = ControlServer.Pending(["cmd": "learn", "key": "eq.nope"])
    learn.start(unknown, chain: chain, midi: midi)
    #expect(unknown.wait().contains("is not a settable parameter of the running chain"))
    #expect(!learn.isWaiting)
    let late = ControlServer.Pending(["cmd": "learn", "key": "output.volume"])
    learn.start(late, chain: chain, midi: midi)
    learn.poll(midi) { _, _, _ in Issue.record("nothing moved") }
    #expect(late.wait().contains("no MIDI controller moved on midi_in within 10 s"))
    let waiting = MidiLearn()
    let left = ControlServer.Pending(["cmd": "learn", "key": "output.volume"])
    waiting.start(left, chain: chain, midi: midi)
    waiting.abandon("LiveMic stopped before a MIDI controller moved")
    #expect(left.wait().contains("LiveMic stopped before a MIDI controller moved") && !waiting.isWaiting)
  }
}
