import Foundation
import LiveMicControl
import Testing

@testable import livemic

/// The run's configuration file (`--config FILE`, `$XDG_CONFIG_HOME/livemic/livemic.json`):
/// its keys are the run's long options, its options come before the command line's, and a bad
/// file is one sentence naming the file and the key.
@Suite("The run's configuration file")
struct RunConfigurationTests {
  /// A configuration file with `text` in a new temporary folder.
  static func file(_ text: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "lmconfig-\(getpid())-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let url = folder.appendingPathComponent("livemic.json")
    try Data(text.utf8).write(to: url)
    return url
  }

  static func run(_ words: [String]) throws -> RunOptions {
    guard case .run(let options) = try parseCommandLine(words) else {
      throw UsageError(message: "not a run")
    }
    return options
  }

  @Test("every kind of key: values, numbers, flags on and off, repeated and port-list arrays")
  func keys() throws {
    let url = try Self.file(
      """
      {"preset": "hearing", "web": "0.0.0.0:8080", "osc": 9000, "start-muted": true, "watch": false,
       "route-out": ["USB.*", "system:"], "connect-out": ["a:1", "a:2"], "set": ["eq.bass_db=3"],
       "loudness-target": -16.5, "record-format": "flac"}
      """)
    let options = try Self.run(["--config", url.path])
    #expect(options.preset == "hearing")
    #expect(options.web == WebBinding.parse("0.0.0.0:8080"))
    #expect(options.oscPort == 9000)
    #expect(options.startMuted && !options.watch)
    #expect(options.routeOut == ["USB.*", "system:"])
    #expect(options.connectOut == ["a:1", "a:2"])
    #expect(options.overrides.count == 1)
    #expect(options.loudnessTargetLufs == -16.5)
    #expect(options.recordFormat == .flac)
  }

  @Test("the command line wins over the file, and adds to repeatable options")
  func commandLineWins() throws {
    let url = try Self.file(#"{"preset": "hearing", "web": "8080", "route-out": ["USB.*"]}"#)
    let options = try Self.run(["--config=\(url.path)", "-p", "flat", "--route-out", "HDMI"])
    #expect(options.preset == "flat")
    #expect(options.web == WebBinding.parse("8080"))
    #expect(options.routeOut == ["USB.*", "HDMI"])
  }

  @Test("the default file is read when it exists; --no-config and --help read none")
  func defaultFile() throws {
    let url = try Self.file(#"{"preset": "karaoke"}"#)
    #expect(RunConfiguration.defaultPath.hasSuffix("/livemic/livemic.json"))
    #expect(try RunConfiguration.expand([], defaultPath: url.path) == ["--preset", "karaoke"])
    #expect(
      try RunConfiguration.expand(["-n", "x"], defaultPath: "/nonexistent/livemic.json") == ["-n", "x"])
    #expect(try RunConfiguration.expand(["--no-config"], defaultPath: url.path) == [])
    #expect(try RunConfiguration.expand(["--help"], defaultPath: url.path) == ["--help"])
  }

  @Test(
    "a bad file is one sentence naming the file and the key",
    arguments: [
      (#"{"volume": 3}"#, "key 'volume' is not an option of 'livemic run'"),
      (#"{"start-muted": "yes"}"#, "key 'start-muted': expected true or false"),
      (#"{"preset": {"a": 1}}"#, "key 'preset': expected a string, a number or an array of them"),
      (#"{"preset": "voice",}"#, "is not valid JSON"),
      (#"["--preset", "voice"]"#, "must be a JSON object of run options"),
      (#"{"web": "nowhere:port"}"#, "--web takes [ADDRESS:]PORT"),
    ])
  func badFiles(text: String, message: String) throws {
    let url = try Self.file(text)
    #expect {
      _ = try parseCommandLine(["--config", url.path])
    } throws: { error in
      let sentence = (error as? UsageError)?.message ?? ""
      return sentence.contains(message) && !sentence.contains("\n")
    }
  }

  @Test("a missing --config file is an error, not silence")
  func missingFile() {
    #expect {
      _ = try parseCommandLine(["--config", "/nonexistent/livemic.json"])
    } throws: { error in
      (error as? UsageError)?.message == "the configuration '/nonexistent/livemic.json' cannot be read"
    }
  }

  @Test("every long option of the run's help is a key of the file (but help, version, config)")
  func everyRunOptionIsAKey() {
    let runSection = mainHelp.components(separatedBy: "RUN OPTIONS")[1].components(separatedBy: "Ports:")[0]
    let options = Set(
      runSection.split(separator: "\n").compactMap { line -> String? in
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard let match = trimmed.firstMatch(of: /^(?:-[a-z], )?--([a-z][a-z-]*)/) else { return nil }
        return String(match.output.1)
      })
    #expect(options.count > 30)
    let keys = RunConfiguration.valueKeys.union(RunConfiguration.flagKeys)
    #expect(options.subtracting(["help", "version", "config", "no-config"]) == keys)
  }
}
