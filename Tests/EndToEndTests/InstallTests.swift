import Foundation
import Testing

extension EndToEnd {
  /// `scripts/install` into a temporary prefix, the installed binary run from there (no
  /// `LIVEMIC_PRESETS_DIR`: it must find its presets beside itself), then `--uninstall`.
  @Suite("Install under a prefix")
  struct InstallTests {
    /// Runs `executable` with `arguments` in `environment`, from the package root; status and
    /// both outputs.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> (
      status: Int32, out: String, err: String
    ) {
      let (status, out, err) = try runToEnd(
        URL(fileURLWithPath: executable), arguments, environment: environment, inRoot: true)
      return (status, out, err)
    }

    @Test("install, run the installed binary (presets, render -p karaoke, a data-folder preset), uninstall")
    func installRunUninstall() throws {
      let folder = Paths.temporaryFolder("install")
      defer { try? FileManager.default.removeItem(at: folder) }
      let prefix = folder.appendingPathComponent("prefix").path
      var env = ProcessInfo.processInfo.environment
      env["LIVEMIC_BINARY"] = Paths.livemic.path
      let installed = try Self.run("/bin/bash", ["scripts/install", prefix], environment: env)
      try #require(installed.status == 0, "scripts/install failed: \(installed.err)")
      let fm = FileManager.default
      for file in [
        "bin/livemic", "share/livemic/presets/voice.json", "share/livemic/presets/karaoke.json",
        "share/man/man1/livemic.1", "share/bash-completion/completions/livemic",
        "lib/systemd/user/livemic.service",
      ] {
        #expect(fm.fileExists(atPath: prefix + "/" + file), "\(file) was not installed")
      }
      let unit = try String(contentsOfFile: prefix + "/lib/systemd/user/livemic.service", encoding: .utf8)
      #expect(unit.contains("ExecStart=\(prefix)/bin/livemic "), "the unit's ExecStart: \(unit)")

      // The installed binary alone: no presets folder from the environment, an empty user folder,
      // and one data folder holding a community preset.
      let data = folder.appendingPathComponent("data")
      try fm.createDirectory(
        at: data.appendingPathComponent("livemic/presets"), withIntermediateDirectories: true)
      try
        #"{"name": "community", "description": "from a data folder", "chain": [{"unit": "input"}, {"unit": "output"}]}"#
        .write(
          to: data.appendingPathComponent("livemic/presets/community.json"), atomically: true, encoding: .utf8
        )
      var bare = ProcessInfo.processInfo.environment
      bare["LIVEMIC_PRESETS_DIR"] = nil
      bare["LIVEMIC_BINARY"] = nil
      bare["XDG_CONFIG_HOME"] = folder.appendingPathComponent("config").path
      bare["XDG_DATA_DIRS"] = data.path
      let livemic = prefix + "/bin/livemic"
      let presets = try Self.run(livemic, ["presets"], environment: bare)
      #expect(presets.status == 0, "\(presets.err)")
      for name in ["voice", "hearing", "karaoke", "stream", "podcast", "announce", "flat", "community"] {
        #expect(presets.out.contains(name), "'presets' lacks \(name): \(presets.out)")
      }
      let input = folder.appendingPathComponent("in.wav").path
      let output = folder.appendingPathComponent("out.wav").path
      let tone = try Self.run(
        "/usr/bin/env",
        [
          "sox", "-n", "-r", "48000", "-c", "2", "-b", "16", input, "synth", "1", "sine", "440", "vol", "0.3",
        ],
        environment: bare)
      try #require(tone.status == 0, "sox: \(tone.err)")
      let render = try Self.run(livemic, ["render", "-p", "karaoke", input, output], environment: bare)
      #expect(render.status == 0, "render -p karaoke from the install: \(render.err)")
      #expect(fm.fileExists(atPath: output))

      let removed = try Self.run("/bin/bash", ["scripts/install", "--uninstall", prefix], environment: env)
      #expect(removed.status == 0, "\(removed.err)")
      #expect(!fm.fileExists(atPath: prefix + "/bin/livemic"))
      #expect(!fm.fileExists(atPath: prefix + "/share/livemic"), "the install's folders are left")
    }
  }
}
