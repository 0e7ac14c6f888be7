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
      // The bundle and the preset are named on LiveMic's command line, before the rig exists.
      let folder = Paths.temporaryFolder("fallback")
      defer { try? FileManager.default.removeItem(at: folder) }
      let bundle = try LV2Tests.buildBundle("lv2-refuse", binary: "refuse", in: folder)
      let lv2Path = [
        bundle.deletingLastPathComponent().path, ProcessInfo.processInfo.environment["LV2_PATH"],
      ]
      .compactMap { $0 }.joined(separator: ":")
      let preset = folder.appendingPathComponent("fallback.json").path
      try #"""
      {"name": "fallback", "chain": [{"unit": "denoise", "mode": "automatic", "plugins": ["\#(Self.refuse)"],
       "params": {"suppression_db": 20}}, {"unit": "limiter"}]}
      """#.write(toFile: preset, atomically: true, encoding: .utf8)
      let rig = try LiveRig(period: 64, environment: ["LV2_PATH": lv2Path]) { _ in
        ["-p", preset, "--no-connect"]
      }
      defer { rig.stop() }
      let livemic = rig.livemic
      #expect(
        livemic.log.contains("stage 'denoise': its plugin could not be made"),
        "no fallback reported: \(livemic.log)")
      // The built-in unit runs: its latency (480 frames) is in the chain's.
      #expect(livemic.log.contains("+ 480 (chain) +"), "\(livemic.log)")
      let status = try rig.json(["status"])
      let stage =
        (status["chain"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "denoise" } ?? [:]
      #expect(stage["implementation"] as? String == "builtin", "\(stage)")
      #expect((stage["why"] as? String)?.contains("could not be made") == true, "\(stage)")
      let value = try rig.json(["get", "denoise.suppression_db"])
      #expect((value["values"] as? [String: Double])?["denoise.suppression_db"] == 20, "\(value)")
    }
  }
}
