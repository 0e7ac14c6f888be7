import Foundation
import Testing

extension EndToEnd {
  @Suite("Preset reloads during every mute mode", .serialized)
  struct MuteReloadTests {
    /// Issue 14: reloads interleaved with every mute mode, sets and unmutes. After each reload
    /// status names the new preset and the mode is kept; after each unmute the measured level is
    /// the last preset's at the last volume set. 20 rounds of 10 reloads (200); each round's
    /// measurement waits out the 1 s unmute ramp.
    @Test("200 reloads interleaved with ramp, input and suspend mutes, sets and unmutes")
    func reloadsDuringMutes() throws {
      let signal = TestSignal.sine(frequencyHz: 500, amplitude: 0.2)
      // The rig's, with a capture that holds the whole test (120 s).
      let clients: [LiveRig.Client] = [
        .init(name: "lmgen", signal: signal), .init(name: "lmcap", captureChannels: 3, seconds: 120),
      ]
      var directPath: Error?
      let rig = try LiveRig(clients: clients, guarded: true) { c in
        do { try c[1].connect(c[0].portName("out"), c[1].portName("in_1")) } catch { directPath = error }
        return ["--connect-in", "lmgen:out", "--connect-out", "lmcap:in_2,lmcap:in_3", "-p", "flat"]
      }
      defer { rig.stop() }
      if let directPath { throw directPath }
      let (folder, capture) = (rig.folder, rig.client("lmcap"))
      // A second preset 6 dB quieter than flat, so the measurement tells them apart (loaded by
      // name once LiveMic runs).
      let quiet = folder.appendingPathComponent("quiet.json")
      try Data(
        """
        {"name": "quiet", "volume": 1.0, "chain": [
          {"unit": "input", "params": {"gain_db": -6}}, {"unit": "output"}]}
        """.utf8
      ).write(to: quiet)
      let presets: [(request: String, name: String, db: Double)] = [
        ("flat", "flat", 0), (quiet.path, "quiet", -6),
      ]
      let socket = try SocketLines(folder.appendingPathComponent("livemic/lmclient.sock").path)
      func ask(_ request: [String: Any]) -> [String: Any] {
        let data = (try? JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])) ?? Data()
        socket.send(String(decoding: data, as: UTF8.self))
        return socket.lines(for: 2, count: 1).first.map(jsonObject) ?? [:]
      }
      let witness = rig.witness(capture, generators: [(0, signal)])
      let input = 0.2 / 2.squareRoot()
      var seed: UInt64 = 14
      func random(_ n: Int) -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((seed >> 33) % UInt64(n))
      }
      let modes = ["ramp", "input", "suspend"]
      var reloads = 0
      for round in 0..<20 {
        let mode = modes[(round + random(3)) % 3]
        let muted = ask(["cmd": "mute", "mode": mode])
        #expect(muted["ok"] as? Bool == true, "round \(round): mute \(mode): \(muted)")
        var playing = presets[0]
        for _ in 0..<10 {
          playing = presets[random(2)]
          let loaded = ask(["cmd": "preset", "action": "load", "name": playing.request])
          #expect(loaded["preset"] as? String == playing.name, "round \(round): \(loaded)")
          let status = ask(["cmd": "status"])
          #expect(
            status["preset"] as? String == playing.name && status["mute_mode"] as? String == mode,
            "round \(round): after loading \(playing.name) muted \(mode): \(status)")
          reloads += 1
          if random(2) == 0 { _ = ask(["cmd": "set", "key": "output.volume", "value": 0.1]) }
        }
        let volume = [0.25, 0.5, 1.0][random(3)]
        let set = ask(["cmd": "set", "key": "output.volume", "value": volume])
        #expect(set["ok"] as? Bool == true, "round \(round): \(set)")
        let unmuted = ask(["cmd": "unmute"])
        #expect(unmuted["ok"] as? Bool == true, "round \(round): \(unmuted)")
        let expected = playing.db + 20 * log10(volume)
        let level = try retaking("round \(round): the level after unmuting \(mode)") {
          let take = try witness.take(frames: 4800, channels: [1], settleMicroseconds: 1_200_000)
          return Take(20 * log10(max(rms(take.value[0][...]), 1e-10) / input), spoilt: take.spoilt)
        }
        #expect(
          abs(level - expected) < 0.1,
          "round \(round): \(level) dB after unmuting \(mode), expected \(expected) (\(playing.name) at \(volume))"
        )
      }
      #expect(reloads == 200)
      rig.stop()
      rig.expectNothingCounted()
    }
  }
}
