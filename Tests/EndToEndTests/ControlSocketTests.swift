import Foundation
import TestSupport
import Testing

extension EndToEnd {
  @Suite("Control socket and livemic ctl", .serialized)
  struct ControlSocketTests {
    /// Sends raw bytes to a socket and returns what came back within `seconds`.
    static func exchange(_ path: String, _ bytes: [UInt8], seconds: Double = 2) -> String {
      guard let connection = try? SocketLines(path) else { return "" }
      connection.send(bytes: bytes)
      let lines = connection.lines(for: seconds, count: bytes.filter { $0 == 10 }.count)
      return lines.map { $0 + "\n" }.joined()
    }

    @Test("ctl set changes the measured level by that many dB; status and preset load work")
    func setStatusPresetLoad() throws {
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "-c", "input.bypass=0"], signal: .sine(frequencyHz: 1000, amplitude: 0.2))
      defer { rig.stop() }
      let (folder, livemic) = (rig.folder, rig.livemic)
      let ctl = { (words: [String]) in
        try runLiveMic(["ctl", "-n", "lmclient"] + words, environment: rig.environment)
      }
      // The socket is private to its user.
      let socket = folder.appendingPathComponent("livemic/lmclient.sock").path
      let mode = (try FileManager.default.attributesOfItem(atPath: socket)[.posixPermissions] as? Int) ?? 0
      #expect(mode == 0o600, "socket mode \(String(mode, radix: 8))")

      let status = try ctl(["--json", "status"])
      #expect(
        status.status == 0 && status.stdout.contains("\"preset\":\"flat\"")
          && status.stdout.contains("\"sample_rate\":48000"), "\(status)")

      rig.waitForAudio()
      /// The output level, retaken when the server spoilt its window.
      let witness = LiveAudioTests.witness(rig)
      func level() throws -> Double {
        try retaking("the output level") {
          let take = try witness.take(frames: 4800, channels: [1])
          return Take(rms(take.value[0][...]), spoilt: take.spoilt)
        }
      }
      let before = try level()
      #expect(try ctl(["set", "input.gain_db", "-9"]).status == 0)
      usleep(300_000)  // smoothing: 20 ms time constant
      let after = try level()
      let change = 20 * log10(after / before)
      #expect(abs(change - -9) < 0.05, "measured \(change) dB")

      let bad = try ctl(["set", "input.gain_db", "99"])
      #expect(
        bad.status == 1 && bad.stderr.contains("99 is outside the range of 'input.gain_db' (-60 to 40)"),
        "\(bad)")
      let unknown = try ctl(["set", "eq.loudness", "1"])
      #expect(
        unknown.status == 1 && unknown.stderr.contains("'eq.loudness' is not a parameter"), "\(unknown)")

      #expect(try ctl(["preset", "load", "karaoke"]).status == 0)
      #expect(livemic.waitForLog("preset 'karaoke' reloaded (control)"), "\(livemic.log)")
      #expect(try ctl(["--json", "get", "echo.time_ms"]).stdout.contains("280"))
      let missing = try ctl(["preset", "load", "nope"])
      #expect(missing.status == 1 && missing.stderr.contains("no preset named 'nope'"))
      #expect(try ctl(["--json", "status"]).stdout.contains("\"preset\":\"karaoke\""))
    }

    /// Malformed and random messages each get an error (or are ignored: blank lines), the
    /// server keeps answering, and audio goes on.
    @Test("10,000 random and malformed messages: errors only, and a valid request still works")
    func fuzzedMessages() throws {
      let rig = try LiveRig(period: 64) { _ in ["--no-connect"] }
      defer { rig.stop() }
      let (folder, env, livemic) = (rig.folder, rig.environment, rig.livemic)
      let path = folder.appendingPathComponent("livemic/\(LiveRig.clientName).sock").path
      var generator = SystemRandomNumberGenerator()
      let samples = [
        "{", "[]", "null", "{\"cmd\":1}", "{\"cmd\":\"set\"}",
        "{\"cmd\":\"set\",\"key\":\"output.volume\",\"value\":\"x\"}",
        "{\"cmd\":\"set\",\"key\":\"output.volume\",\"value\":1e99}",
        "{\"cmd\":\"set\",\"key\":\"output.volume\",\"value\":1e400}",
        // An id no Int holds: converting it trapped and stopped LiveMic (found by fuzzing).
        "{\"cmd\":\"record\",\"action\":\"stop\",\"id\":1e23}",
        // Accepted before: a pattern JACK cannot compile (it then matches nothing), an action
        // that is not a string (taken as "show"), a stream into a folder that does not exist
        // (it failed only afterwards, in the log).
        "{\"cmd\":\"route\",\"action\":\"default\",\"patterns\":[\"system:(playback\"]}",
        "{\"cmd\":\"loudness\",\"action\":7}", "{\"cmd\":\"stream\",\"action\":[]}",
        // true set the output volume to its maximum: true/false are for on/off parameters.
        "{\"cmd\":\"set\",\"key\":\"output.volume\",\"value\":true}",
        "{\"cmd\":\"stream\",\"action\":\"start\",\"path\":\"/nonexistent-lm/x.wav\"}",
        "{\"cmd\":\"route\",\"action\":\"override\",\"ports\":7}",
        "{\"cmd\":\"preset\",\"action\":\"save\"}", "{\"cmd\":\"mute\",\"mode\":\"loud\"}",
        "\u{1}\u{2}\u{3}",
      ]
      var lines: [String] = []
      for i in 0..<10_000 {
        if i % 2 == 0 {
          lines.append(samples[i / 2 % samples.count])
        } else {
          let n = Int.random(in: 1...40, using: &generator)
          lines.append(
            String(
              (0..<n).map { _ in Character(UnicodeScalar(UInt8.random(in: 32...126, using: &generator))) }))
        }
      }
      var answered = 0
      for batch in stride(from: 0, to: lines.count, by: 500) {
        let text = lines[batch..<min(batch + 500, lines.count)].map {
          $0.replacingOccurrences(of: "\n", with: " ") + "\n"
        }.joined()
        let reply = Self.exchange(path, Array(text.utf8), seconds: 10)
        let replies = reply.split(separator: "\n")
        answered += replies.count
        #expect(
          replies.allSatisfy { $0.contains("\"ok\":false") },
          "a random line was accepted: \(replies.first { !$0.contains("\"ok\":false") } ?? "")")
        // Every refusal names its reason with a code beside the sentence.
        #expect(
          replies.allSatisfy { $0.contains("\"code\":\"control.") },
          "a refusal without a control code: \(replies.first { !$0.contains("\"code\":\"control.") } ?? "")")
      }
      let malformed = Self.exchange(path, Array("{\"cmd\":\n{\"cmd\":\"zap\"}\n".utf8))
      #expect(
        malformed.contains("\"code\":\"control.malformed-json\"")
          && malformed.contains("\"code\":\"control.unknown-command\""), "\(malformed)")
      let blank = lines.filter { $0.allSatisfy { $0 == " " } }.count
      #expect(answered == lines.count - blank, "\(answered) answers to \(lines.count) lines")
      let valid = Self.exchange(path, Array("{\"cmd\":\"get\",\"key\":\"output.volume\"}\n".utf8))
      #expect(valid.contains("\"ok\":true") && valid.contains("0.3"), "\(valid)")
      // A client timeout of 1e10 s: converting it to poll's milliseconds trapped (the client
      // crashed with status 132).
      let patient = try runLiveMic(
        ["ctl", "-n", LiveRig.clientName, "--timeout", "1e10", "status"], environment: env)
      #expect(patient.status == 0 && patient.stdout.contains(LiveRig.clientName), "\(patient.stderr)")
      #expect(livemic.process.isRunning)
      rig.stop()
    }
  }
}

extension EndToEnd.ControlSocketTests {
  /// `ctl preset save` writes the running chain with its current values and each plugin's own
  /// state; the saved preset loads again (live and offline).
  @Test("preset save writes the running values and plugin state, and the result loads")
  func presetSave() throws {
    let rig = try LiveRig(period: 64) { _ in
      [
        "--no-connect", "-p", "karaoke", "--plugin", Installed.zeroconvolv, "--plugin", Installed.amp, "-c",
        "eg-amp.gain=-4",
      ]
    }
    defer { rig.stop() }
    let (folder, env, livemic) = (rig.folder, rig.environment, rig.livemic)
    let ctl = { (words: [String]) in
      try runLiveMic(["ctl", "-n", LiveRig.clientName] + words, environment: env)
    }
    #expect(try ctl(["set", "echo.mix", "0.5"]).status == 0)
    let file = folder.appendingPathComponent("saved.json").path
    let saved = try ctl(["preset", "save", file])
    #expect(saved.status == 0, "\(saved)")
    let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    let chain = json["chain"] as? [[String: Any]] ?? []
    let echo = chain.first { $0["id"] as? String == "echo" }?["params"] as? [String: Double]
    let amp = chain.first { $0["id"] as? String == "eg-amp" }?["params"] as? [String: Double]
    #expect(echo?["mix"] == 0.5 && amp?["gain"] == -4, "\(text)")
    // Read-only reports are no settings: the limiter's gain reduction is not saved.
    let limiter = chain.first { $0["id"] as? String == "limiter" }?["params"] as? [String: Double]
    #expect(limiter != nil && limiter?["gain_reduction_db"] == nil, "\(text)")
    let state = chain.first { $0["lv2"] as? String == Installed.zeroconvolv }?["state"] as? String
    #expect(
      state.map { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) } == true,
      "\(text)")
    #expect(try runLiveMic(["presets", "show", file]).stdout.contains("echo.mix = 0.5"))
    #expect(try ctl(["preset", "load", file]).status == 0, "\(livemic.log)")
    #expect(!livemic.log.contains("preset not reloaded"), "\(livemic.log)")
    // A folder that cannot be made (under a file): refused in one sentence with its code; the
    // running chain is kept.
    let blocked = file + "/inside/x.json"
    let refused = jsonObject(try ctl(["--json", "preset", "save", blocked]).stdout)
    #expect(
      refused["error"] as? String == "cannot create the folder '\(file)/inside'"
        && refused["code"] as? String == "preset.unwritable", "\(refused)")
    #expect(jsonObject(try ctl(["--json", "status"]).stdout)["preset"] as? String == "saved")
    rig.stop()
  }
}
