import DSP
import Dispatch
import LiveMicEngine

/// `learn`: the requests waiting for a MIDI controller to move on `midi_in`. Each is answered
/// when one moves (it is then mapped to the request's key) or after 10 s (an error); other
/// requests are answered meanwhile. Tested without a server (`MidiLearnTests`).
///
/// Thread: the supervisor.
final class MidiLearn {
  /// One request: the controller counter seen when it arrived, and when the wait is over.
  private struct Waiting {
    let pending: ControlServer.Pending
    let key: String
    let seen: UInt64
    let deadline: DispatchTime
  }

  private var waiting: [Waiting] = []
  /// How long a request waits for a controller.
  let timeout: DispatchTimeInterval

  init(timeout: DispatchTimeInterval = .seconds(10)) { self.timeout = timeout }

  /// True while a request waits (the supervisor then wakes every 5 ms).
  var isWaiting: Bool { !waiting.isEmpty }

  /// Starts waiting for `pending` (a `learn` request); a request without a settable key of
  /// `chain` is answered at once. `midi` reads `midi_in` from now on.
  func start(_ pending: ControlServer.Pending, chain: VoiceChain, midi: MidiMap) {
    guard let key = pending.request["key"]?.string else {
      return pending.answer(ControlServer.error("\"learn\" needs a \"key\" string"))
    }
    guard let p = chain.parameter(key), p.spec.kind != .output else {
      return pending.answer(ControlServer.error("'\(key)' is not a settable parameter of the running chain"))
    }
    midi.learning.store(true, ordering: .relaxed)  // the audio thread reads midi_in from now on
    let seen = midi.lastMoved.load(ordering: .relaxed) >> 16
    waiting.append(Waiting(pending: pending, key: key, seen: seen, deadline: .now() + timeout))
  }

  /// Answers the requests whose controller moved (`bind` maps it: CC, channel 1–16, key) or
  /// whose wait is over.
  func poll(_ midi: MidiMap, bind: (_ cc: Int, _ channel: Int, _ key: String) -> Void) {
    guard !waiting.isEmpty else { return }
    let moved = midi.lastMoved.load(ordering: .relaxed)
    let now = DispatchTime.now()
    for learn in waiting {
      if moved >> 16 != learn.seen {
        let (channel, cc) = (Int(moved >> 8 & 0xFF) + 1, Int(moved & 0x7F))
        bind(cc, channel, learn.key)
        learn.pending.answer(
          ControlServer.answer(["cc": .int(cc), "channel": .int(channel), "key": .string(learn.key)]))
      } else if now >= learn.deadline {
        learn.pending.answer(ControlServer.error("no MIDI controller moved on midi_in within 10 s"))
      }
    }
    waiting.removeAll { moved >> 16 != $0.seen || now >= $0.deadline }
    midi.learning.store(!waiting.isEmpty, ordering: .relaxed)
  }

  /// Answers every waiting request with `reason` (the server went away, LiveMic stops).
  func abandon(_ reason: String) {
    for learn in waiting { learn.pending.answer(ControlServer.error(reason)) }
    waiting.removeAll()
  }
}
