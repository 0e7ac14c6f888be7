import Foundation
import Testing

extension EndToEnd {
  /// `livemic doctor` against a private dummy server and against none.
  @Suite("livemic doctor")
  struct DoctorTests {
    static func findings(_ json: String) throws -> (ok: Bool, findings: [[String: Any]]) {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
      return (try #require(object["ok"] as? Bool), try #require(object["findings"] as? [[String: Any]]))
    }

    @Test("With a server: every check reported, the exit status says whether anything is to fix")
    func withAServer() throws {
      // Not a LiveRig: `livemic doctor` looks at a bare server, with no LiveMic running on it.
      let server = try JackServer()
      defer { server.stop() }
      let text = try runLiveMic(["doctor", "-s", server.name])
      print("[measured] livemic doctor on a dummy server (exit \(text.status)):\n\(text.stdout)")
      for check in [
        "real-time scheduling", "rtprio limit", "memlock limit", "audio group", "JACK server",
        "JACK real time",
        "JACK format", "CPU governor", "threaded interrupts", "kernel preemption", "presets",
        "control socket folder",
      ] {
        #expect(text.stdout.contains(" \(check): "), "no '\(check)' line: \(text.stdout)")
      }
      #expect(text.stdout.contains("'\(server.name)' runs: "), "\(text.stdout)")
      #expect(text.stdout.contains("48000 Hz"), "\(text.stdout)")
      let json = try runLiveMic(["doctor", "-s", server.name, "--json"])
      let (ok, findings) = try Self.findings(json.stdout)
      let problems = findings.filter { $0["status"] as? String == "problem" }
      #expect(ok == problems.isEmpty)
      #expect(json.status == (problems.isEmpty ? 0 : 1), "\(json.stdout)")
      #expect(text.status == json.status)
      for problem in problems { #expect((problem["fix"] as? String)?.isEmpty == false, "\(problem)") }
      // The server's real-time mode is what the suite chose for its servers.
      let realtime = try #require(findings.first { $0["check"] as? String == "JACK real time" })
      #expect((realtime["status"] as? String == "ok") == TestRealtime.enabled, "\(realtime)")
    }

    @Test(
      "Without a server: a problem with its fix, exit status 1, and nothing of libjack's on standard error")
    func withoutAServer() throws {
      let result = try runLiveMic(["doctor", "-s", "lmnoserver\(getpid())"])
      #expect(result.status == 1, "\(result.stdout)")
      #expect(result.stdout.contains("FIX  JACK server: no server named 'lmnoserver"), "\(result.stdout)")
      #expect(result.stdout.contains(" — start one"), "\(result.stdout)")
      // libjack's own lines about the missing server stay out of the report.
      #expect(!result.stderr.contains("Cannot connect"), "\(result.stderr)")
    }
  }
}
