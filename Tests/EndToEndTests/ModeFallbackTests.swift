import Foundation
import Testing

extension EndToEnd {
  /// An `automatic` stage whose chosen plugin cannot be made runs its built-in unit and says so,
  /// with a real LV2 plugin whose instantiate() fails (Tests/Support/lv2-refuse, built here).
  @Suite("Processing modes: a plugin that cannot be made", .serialized)
  struct ModeFallbackTests {
    static let refuse = "urn:livemic:test:refuse"

    @Test(
      "denoise in mode automatic: the plugin fails to instantiate, the built-in unit runs, status says why")
    func fallsBackToTheBuiltinUnit() throws {
      let folder = Paths.temporaryFolder("fallback")
      defer { try? FileManager.default.removeItem(at: folder) }
      let bundle = try LV2Tests.buildBundle("lv2-refuse", binary: "refuse", in: folder)
      let lv2Path = [
        bundle.deletingLastPathComponent().path, ProcessInfo.processInfo.environment["LV2_PATH"],
      ]
      .compactMap { $0 }.joined(separator: ":")
      let env = ["XDG_RUNTIME_DIR": folder.path, "LV2_PATH": lv2Path]
      let preset = folder.appendingPathComponent("fallback.json").path
      try #"""
      {"name": "fallback", "chain": [{"unit": "denoise", "mode": "automatic", "plugins": ["\#(Self.refuse)"],
       "params": {"suppression_db": 20}}, {"unit": "limiter"}]}
      """#.write(toFile: preset, atomically: true, encoding: .utf8)
      let server = try JackServer()
      defer { server.stop() }
      let livemic = try LiveMicProcess(
        ["-s", server.name, "-n", "lmfallback", "-p", preset, "--no-connect"], environment: env)
      #expect(livemic.waitForLog("latency capture-to-playback"), "\(livemic.log)")
      #expect(
        livemic.log.contains("stage 'denoise': its plugin could not be made"),
        "no fallback reported: \(livemic.log)")
      // The built-in unit runs: its latency (480 frames) is in the chain's.
      #expect(livemic.log.contains("+ 480 (chain) +"), "\(livemic.log)")
      let status = jsonObject(
        try runLiveMic(["ctl", "-n", "lmfallback", "--json", "status"], environment: env).stdout)
      let stage =
        (status["chain"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "denoise" } ?? [:]
      #expect(stage["implementation"] as? String == "builtin", "\(stage)")
      #expect((stage["why"] as? String)?.contains("could not be made") == true, "\(stage)")
      let value = jsonObject(
        try runLiveMic(
          ["ctl", "-n", "lmfallback", "--json", "get", "denoise.suppression_db"], environment: env
        )
        .stdout)
      #expect((value["values"] as? [String: Double])?["denoise.suppression_db"] == 20, "\(value)")
      #expect(livemic.interrupt() == 0)
    }
  }
}
