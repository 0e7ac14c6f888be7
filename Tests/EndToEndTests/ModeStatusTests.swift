import Foundation
import TestSupport
import Testing

extension EndToEnd {
  @Suite("Processing modes in a running LiveMic", .serialized)
  struct ModeStatusTests {
    static let bogus = "urn:livemic:test:not-installed"

    @Test(
      "ctl status reports mode, implementation and why; a plugin-mode preset without its plugin is refused at reload"
    )
    func statusAndRefusedReload() throws {
      let folder = Paths.temporaryFolder("modes")
      defer { try? FileManager.default.removeItem(at: folder) }
      let good = folder.appendingPathComponent("modes.json").path
      try #"""
      {"name": "modes", "chain": [
        {"unit": "highpass", "mode": "automatic", "plugins": ["\#(Self.bogus)", "\#(Installed.fil4)"], "params": {"freq_hz": 120}},
        {"unit": "denoise", "mode": "automatic", "plugins": ["\#(Self.bogus)"]},
        {"unit": "limiter"}]}
      """#.write(toFile: good, atomically: true, encoding: .utf8)
      let bad = folder.appendingPathComponent("bad.json").path
      try #"{"name": "bad", "chain": [{"unit": "aec", "mode": "plugin", "plugins": ["\#(Self.bogus)"]}]}"#
        .write(toFile: bad, atomically: true, encoding: .utf8)
      let rig = try LiveRig(period: 64, folder: folder) { _ in ["-p", good, "--no-connect"] }
      defer { rig.stop() }
      let livemic = rig.livemic
      let ctl = { (words: [String]) in try rig.ctl(words) }
      let status = jsonObject(try ctl(["--json", "status"]).stdout)
      let stages = status["chain"] as? [[String: Any]] ?? []
      let hp = stages.first { $0["id"] as? String == "highpass" } ?? [:]
      #expect(
        hp["mode"] as? String == "automatic" && hp["implementation"] as? String == Installed.fil4, "\(hp)")
      #expect((hp["why"] as? String)?.contains("\(Self.bogus) is not installed") == true, "\(hp)")
      let dn = stages.first { $0["id"] as? String == "denoise" } ?? [:]
      #expect(dn["mode"] as? String == "automatic" && dn["implementation"] as? String == "builtin", "\(dn)")
      #expect((dn["why"] as? String)?.contains("built-in unit runs") == true, "\(dn)")
      #expect(try ctl(["--json", "get", "highpass.HPfreq"]).stdout.contains("120"))
      // A plugin-mode preset whose plugin is missing: refused in one sentence, the chain kept.
      let refused = try ctl(["preset", "load", bad])
      #expect(refused.status == 1, "\(refused)")
      #expect(
        refused.stderr.contains("stage 'aec' asks for mode 'plugin' but none of its plugins can be used"))
      #expect(livemic.waitForLog("the running chain is kept"), "\(livemic.log)")
      #expect(try ctl(["--json", "status"]).stdout.contains("\"preset\":\"modes\""))
      // At start it is an error too.
      let start = try runLiveMic(["-s", rig.server.name, "-n", "lmmodes2", "-p", bad, "--no-connect"])
      #expect(start.status != 0 && start.stderr.contains("key 'chain[0].mode'"), "\(start)")
    }
  }
}
