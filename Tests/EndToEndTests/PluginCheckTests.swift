import Foundation
import TestSupport
import Testing

/// `livemic plugins check`: the inventory of installed plugins, each hosted in a child process
/// on a JACK server, with the real-time guard preloaded into the children.
extension EndToEnd {
  @Suite("Command line: plugins check", .serialized)
  struct PluginCheckTests {
    static let misbehaving = ["abort", "hang", "malloc", "segv"].map { "urn:livemic:test:eg-\($0)" }

    /// A folder with the plugins of Tests/Support/lv2-misbehave, built here, and the LV2_PATH
    /// that puts them beside the installed ones.
    static func misbehavingPlugins() throws -> (folder: URL, lv2Path: String) {
      let folder = Paths.temporaryFolder("check")
      _ = try LV2Tests.buildBundle("lv2-misbehave", binary: "misbehave", in: folder)
      let installed = ProcessInfo.processInfo.environment["LV2_PATH"] ?? "/usr/lib/lv2"
      return (folder, folder.path + ":" + installed)
    }

    /// The line of `uri` in the check's output.
    static func line(_ uri: String, in output: String) -> String? {
      output.split(separator: "\n").map(String.init).first { $0.hasPrefix("\(uri) — ") }
    }

    @Test(
      "eg-amp and eg-metro hosted and clean, eg-fifths refused with its reason, plugins that abort, segfault or hang are reported and the inventory completes"
    )
    func inventoryOutlivesMisbehavingPlugins() throws {
      let (folder, lv2Path) = try Self.misbehavingPlugins()
      defer { try? FileManager.default.removeItem(at: folder) }
      // Not a LiveRig: `plugins check` hosts each plugin in a child of its own, no LiveMic running.
      let server = try JackServer(period: 256)
      defer { server.stop() }
      let guardLibrary = try RealtimeGuard.library().path
      let started = Date()
      let result = try runLiveMic(
        [
          "plugins", "check", "eg-", "-s", server.name, "--guard", guardLibrary, "--timeout", "8", "--jobs",
          "2",
        ],
        environment: ["LV2_PATH": lv2Path])
      let seconds = Date().timeIntervalSince(started)
      print("[measured] plugins check over \(Installed.amp) and 11 more: \(Int(seconds)) s")
      #expect(result.status == 0, "\(result.stderr)")
      let out = result.stdout
      #expect(
        Self.line(Installed.amp, in: out) == "\(Installed.amp) — hosted (peak -12.0 dBFS), clean", "\(out)")
      #expect(
        Self.line("http://lv2plug.in/plugins/eg-fifths", in: out)
          == "http://lv2plug.in/plugins/eg-fifths — refused: it has no audio ports (a MIDI or control utility), "
          + "so it would do nothing in LiveMic's audio chain", "\(out)")
      // An instrument (a metronome, 0 in → 1 out) is hosted: its output is added to the chain's.
      #expect(
        Self.line("http://lv2plug.in/plugins/eg-metro", in: out)?.contains(" — hosted (") == true, "\(out)")
      let (abort, hang, malloc, segv) = (
        Self.misbehaving[0], Self.misbehaving[1], Self.misbehaving[2], Self.misbehaving[3]
      )
      #expect(Self.line(abort, in: out) == "\(abort) — crashed: signal 6 (Aborted)", "\(out)")
      #expect(Self.line(segv, in: out) == "\(segv) — crashed: signal 11 (Segmentation fault)", "\(out)")
      #expect(Self.line(hang, in: out) == "\(hang) — timed out: no result within 8 s, killed", "\(out)")
      // Two instances (a mono plugin on the stereo chain), one allocation and one free each run.
      let unsafe = try #require(Self.line(malloc, in: out), "\(out)")
      #expect(unsafe.contains(" — hosted (peak -12.0 dBFS), unsafe: malloc="), "\(unsafe)")
      #expect(unsafe.hasSuffix(" lock=0 wait=0 io=0 sleep=0 (first: malloc)"), "\(unsafe)")
      // The plugin after the crashes and the hang is still checked, and the summary counts all.
      let last = out.split(separator: "\n").last.map(String.init) ?? ""
      #expect(last.hasPrefix("12 plugins checked in "), "\(last)")
      #expect(
        last.hasSuffix(
          "6 hosted, 1 no sound, 0 non-finite, 2 refused, 0 failed, 2 crashed, 1 timed out; of the 7 that ran, "
            + "6 clean, 1 unsafe"), "\(last)")
      #expect(seconds < 40, "the check took \(seconds) s")
    }

    @Test("--json: one object per plugin with the same keys; the guard's counts for those that ran")
    func json() throws {
      let (folder, lv2Path) = try Self.misbehavingPlugins()
      defer { try? FileManager.default.removeItem(at: folder) }
      // Not a LiveRig: `plugins check` hosts each plugin in a child of its own, no LiveMic running.
      let server = try JackServer(period: 256)
      defer { server.stop() }
      let result = try runLiveMic(
        [
          "plugins", "check", "--json", "eg-a", "-s", server.name, "--guard",
          try RealtimeGuard.library().path,
        ], environment: ["LV2_PATH": lv2Path])
      #expect(result.status == 0, "\(result.stderr)")
      let rows = try #require(
        JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stdout)")
      #expect(rows.map { $0["uri"] as? String } == [Installed.amp, Self.misbehaving[0]])
      let keys: Set = ["uri", "name", "outcome", "reason", "signal", "peakDb", "guard", "seconds"]
      #expect(rows.allSatisfy { Set($0.keys) == keys })
      #expect(rows[0]["outcome"] as? String == "hosted" && rows[0]["reason"] is NSNull)
      let counts = try #require(rows[0]["guard"] as? [String: Any])
      #expect(counts["clean"] as? Bool == true && (counts["cycles"] as? Int ?? 0) >= 187, "\(counts)")
      #expect(rows[1]["outcome"] as? String == "crashed" && rows[1]["signal"] as? Int == 6)
      #expect(rows[1]["guard"] is NSNull)
      #expect(result.stderr.contains("2 plugins checked in "), "\(result.stderr)")
    }

    @Test(
      "without --server it starts a private jackd of its own",
      .enabled(
        if: !TestBackend.isPipeWire, "the private server is a jackd; PipeWire's libjack cannot reach it"))
    func privateServer() throws {
      let result = try runLiveMic(["plugins", "check", Installed.amp])
      #expect(result.status == 0, "\(result.stderr)")
      #expect(result.stdout.hasPrefix("\(Installed.amp) — hosted (peak -12.0 dBFS)\n"), "\(result.stdout)")
    }
  }
}
