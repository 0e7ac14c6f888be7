import Foundation
import Testing

extension EndToEnd {
  @Suite("Mute modes, start muted, meters", .serialized)
  struct MuteModeTests {
    @Test("ramp, input and suspend mute, measured on the output; bypass is refused; meters read the levels")
    func muteModes() throws {
      // The chain makes the voice 12 dB quieter.
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "-c", "input.bypass=0", "-c", "input.gain_db=-12", "--start-muted"],
        signal: .sine(frequencyHz: 500, amplitude: 0.2), guarded: true)
      defer { rig.stop() }
      let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", "lmclient"] + words, environment: rig.environment)
      }
      func level(after microseconds: UInt32) throws -> Double {
        usleep(microseconds)
        let start = capture.frameCount
        try capture.record(frames: 4800)
        return rms(capture.recording(channel: 1, from: start).samples[...])
      }
      // A level judged against a dB figure is retaken when the server spoilt its window.
      let witness = LiveAudioTests.witness(rig)
      func cleanLevel(_ label: String, after microseconds: UInt32) throws -> Double {
        try retaking(label) {
          let take = try witness.take(frames: 4800, channels: [1], settleMicroseconds: microseconds)
          return Take(rms(take.value[0][...]), spoilt: take.spoilt)
        }
      }
      let input = 0.2 / 2.squareRoot()
      rig.waitForAudio()
      let silentStart = capture.frameCount
      try capture.record(frames: 4800)
      let silent = capture.recording(channel: 1, from: silentStart)
      let loud = silent.samples.firstIndex { $0 != 0 }
      #expect(
        loud == nil,
        "--start-muted: sample \(loud ?? 0) of \(silent.samples.count) is \(loud.map { silent.samples[$0] } ?? 0) (frame time \(loud.map { silent.times[$0] } ?? 0), window from \(silent.times.first ?? 0)), gaps \(capture.frameTimeGaps), xruns \(capture.xruns.load(ordering: .relaxed))"
      )
      #expect(try ctl(["unmute"]).status == 0)
      let near = { (db: Double) in { (level: Double) in abs(20 * log10(level / input) - db) < 0.05 } }
      let chain = try cleanLevel("the chain level after unmute", after: 1_300_000)
      #expect(near(-12)(chain), "chain level \(chain)")

      #expect(try ctl(["mute"]).status == 0)
      #expect(try level(after: 200_000) == 0, "ramp mute is silent")
      #expect(try ctl(["unmute"]).status == 0)
      _ = try level(after: 1_300_000)

      // The dry microphone is not a mute: refused, in one sentence.
      let bypass = try ctl(["mute", "--mode", "bypass"])
      #expect(bypass.status == 1 && bypass.stderr.contains("not one of ramp, input, suspend"), "\(bypass)")
      #expect(try level(after: 200_000) > 0, "a refused mute leaves the output playing")

      // input: the microphone is muted before the chain (flat, no music bed: silence).
      #expect(try ctl(["mute", "--mode", "input"]).status == 0)
      #expect(try level(after: 200_000) == 0, "input mute is silent")
      let status = try ctl(["--json", "status"]).stdout
      #expect(status.contains("\"mute_mode\":\"input\"") && status.contains("\"muted\":true"), "\(status)")
      let meters = try ctl(["--json", "meters", "--once"]).stdout
      let object = (try? JSONSerialization.jsonObject(with: Data(meters.utf8))) as? [String: Any] ?? [:]
      let peakIn = ((object["input"] as? [[String: Double]])?.first?["peak_dbfs"]) ?? -200
      #expect(abs(peakIn - 20 * log10(0.2)) < 0.2, "input peak \(peakIn) dBFS: \(meters)")
      #expect(try ctl(["unmute"]).status == 0)
      let unmuted = try cleanLevel("the level after an input mute", after: 200_000)
      #expect(near(-12)(unmuted), "after an input mute \(unmuted)")

      #expect(try ctl(["mute", "--mode", "suspend"]).status == 0)
      #expect(
        waitUntil(seconds: 2) { capture.connections(of: "lmclient:out_1").isEmpty }, "suspend deactivates")
      #expect(try level(after: 100_000) == 0)
      #expect(try ctl(["unmute"]).status == 0)
      #expect(
        waitUntil(seconds: 2) { capture.connections(of: "lmclient:out_1") == ["lmcap:in_2"] },
        "\(livemic.log)")
      let back = try cleanLevel("the level after resume", after: 1_300_000)
      #expect(near(-12)(back), "after resume \(back)")
      rig.stop()
      rig.expectNothingCounted()
    }

    @Test(
      "a suspend is answered before its fade ends, deactivates after it; an unmute within the fade keeps the client on"
    )
    func suspendAnswersAtOnce() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat"], signal: .sine(frequencyHz: 500, amplitude: 0.2), period: 256, guarded: true)
      defer { rig.stop() }
      let capture = rig.client("lmcap")
      let socket = try ControlDoorTests.connect(rig.folder)
      #expect(waitUntil(seconds: 5) { capture.connections(of: "lmclient:out_1") == ["lmcap:in_2"] })
      rig.waitForAudio()  // the start-quiet ramp
      // The fade is 50 ms: a look at the connections as the answer arrives sees the client still
      // on, unless the supervisor waited for the fade before answering (a look the test process
      // was late for, 10 ms after the answer or more, is the machine's: taken again).
      let connected = try retaking("the connections as a suspend is answered") {
        let (answer, _) = ControlDoorTests.ask(socket, #"{"cmd":"mute","mode":"suspend"}"#)
        let answered = Date()
        let connections = capture.connections(of: "lmclient:out_1")
        let late = Date().timeIntervalSince(answered)
        #expect(answer?["ok"] as? Bool == true, "\(answer ?? [:])")
        let spoilt = late > 0.01 ? "the connections were read \(Int(late * 1000)) ms after the answer" : nil
        if spoilt != nil {
          _ = ControlDoorTests.ask(socket, #"{"cmd":"unmute"}"#, within: 5)
          _ = waitUntil(seconds: 2) { capture.connections(of: "lmclient:out_1") == ["lmcap:in_2"] }
          rig.waitForAudio()
        }
        return Take(connections, spoilt: spoilt)
      }
      #expect(connected == ["lmcap:in_2"], "the suspend was answered after the client went off")
      #expect(
        waitUntil(seconds: 2) { capture.connections(of: "lmclient:out_1").isEmpty },
        "the client is deactivated once the fade has run")
      #expect(ControlDoorTests.ask(socket, #"{"cmd":"unmute"}"#, within: 5).0?["ok"] as? Bool == true)
      #expect(waitUntil(seconds: 2) { capture.connections(of: "lmclient:out_1") == ["lmcap:in_2"] })
      rig.waitForAudio()
      // Suspend and unmute at once: whichever way the fade ended, the rig ends as it began.
      _ = ControlDoorTests.ask(socket, #"{"cmd":"mute","mode":"suspend"}"#)
      #expect(ControlDoorTests.ask(socket, #"{"cmd":"unmute"}"#, within: 5).0?["ok"] as? Bool == true)
      let status = ControlDoorTests.ask(socket, #"{"cmd":"status"}"#).0 ?? [:]
      #expect(status["state"] as? String == "running", "\(status)")
      rig.waitForAudio()
      #expect(capture.connections(of: "lmclient:out_1") == ["lmcap:in_2"])
      let start = capture.frameCount
      try capture.record(frames: 4800)
      let level = rms(capture.recording(channel: 1, from: start).samples[...])
      #expect(abs(20 * log10(level / (0.2 / 2.squareRoot()))) < 0.5, "level after the quick unmute \(level)")
      rig.stop()
      rig.expectNothingCounted()
    }
  }
}
