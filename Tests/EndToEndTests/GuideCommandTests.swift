import Foundation
import Testing

extension EndToEnd {
  /// Issue 17, "guides that stay true": every command in docs/guides/*.md and the README's
  /// examples runs, in the order the document gives, against a dummy server (the default
  /// server for them: `JACK_DEFAULT_SERVER`, on PipeWire `PIPEWIRE_REMOTE`), and its exit status is checked. A run command keeps
  /// running for the `ctl` commands after it and stops with SIGINT (status 0) when the document
  /// ends or another instance of its name starts; a `ctl` command that follows until
  /// interrupted (`events`, `meters`) runs for a second. A shown mistake must fail with the
  /// error the document shows. The commands that cannot run here are listed, with why, and a
  /// command that is neither run nor listed fails the test, so a new guide line is never
  /// silently untested.
  @Suite("Guide commands", .serialized)
  struct GuideCommandTests {
    /// Shell lines of the documents that are not run here, by their start, and why.
    static let notRun: [(start: String, why: String)] = [
      (
        "scripts/run",
        "the setup command: it installs packages and runs LiveMic until stopped; CI's scripts/test installs and builds the same way"
      ),
      ("scripts/test", "the test suite itself (CI runs it)"),
      ("scripts/install", "InstallTests runs it into a temporary prefix, and --uninstall"),
      ("jackd -d alsa", "needs a sound card"),
      ("jack_load netmanager", "needs the sound card's server of the line before"),
      ("jackd -d net -a 192.168.1.10", "needs the network of a stage box"),
      ("jackd -n MASTER", "NetJackTests runs this rig (NetJackRig)"),
      ("jack_load -s MASTER", "NetJackTests runs this rig (NetJackRig)"),
      ("jackd -n SLAVE", "NetJackTests runs this rig (NetJackRig)"),
      ("swift build", "how to run NetJackTests, which the suite runs"),
      ("XDG_RUNTIME_DIR=/tmp/netrt", "how to run NetJackTests, which the suite runs"),
    ]

    /// The lines of a document's `sh`/`bash` code blocks that are not `livemic` command lines:
    /// each command once (a line continued by a backslash with its continuation), comments left out.
    static func otherShellLines(_ url: URL) throws -> [String] {
      var result: [String] = []
      var language: String?
      var continued = false
      for line in try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n") {
        let text = line.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("```") {
          language = language == nil ? String(text.dropFirst(3)) : nil
          continue
        }
        defer { continued = text.hasSuffix("\\") }
        guard language == "sh" || language == "bash", !continued, !text.isEmpty, !text.hasPrefix("#") else {
          continue
        }
        if !text.hasPrefix("livemic") && !text.hasPrefix("$ livemic") { result.append(text) }
      }
      return result
    }

    /// The instance name of a run or `ctl` command (`-n NAME`, else `livemic`).
    static func name(_ words: [String]) -> String {
      zip(words, words.dropFirst()).first { $0.0 == "-n" || $0.0 == "--name" }?.1 ?? "livemic"
    }

    @Test("every command of the guides and the README runs against a dummy server and exits as documented")
    func guidesRun() throws {
      let folder = Paths.temporaryFolder("guides")
      defer { try? FileManager.default.removeItem(at: folder) }
      // Not a LiveRig: the guides' own command lines start every LiveMic (their names, their
      // options) on the default server, which a rig's `lmclient` beside them would change.
      let server = try JackServer()
      defer { server.stop() }
      var env = [
        "JACK_DEFAULT_SERVER": server.name, "XDG_RUNTIME_DIR": folder.path, "HOME": folder.path,
      ]
      // PipeWire's libjack takes the default server from PIPEWIRE_REMOTE, not JACK_DEFAULT_SERVER.
      if TestBackend.isPipeWire { env["PIPEWIRE_REMOTE"] = server.name }
      var ran = 0
      var listed: [String] = []
      let documents =
        try DocCommandTests.documents(guidesOnly: true) + [Paths.root.appendingPathComponent("README.md")]
      for document in documents {
        var running: [String: LiveMicProcess] = [:]
        func stop(_ name: String, _ place: String) {
          guard let instance = running.removeValue(forKey: name) else { return }
          #expect(
            instance.interrupt() == 0, "\(place): '\(name)' did not stop with status 0: \(instance.log)")
        }
        for example in try DocCommandTests.examples(inMarkdown: document) {
          let words = example.words
          ran += 1
          if let failure = example.failure {
            let result = try runLiveMic(words, environment: env)
            #expect(result.status != 0 && result.stderr.contains(failure), "\(example): \(result)")
            continue
          }
          let isRun = words.first.map { $0 == "run" || $0.hasPrefix("-") } ?? true
          if isRun {
            let name = Self.name(words)
            stop(name, example.place)
            // The guide's own command line, not a rig's: ready once it answers `status`.
            let instance = try LiveMicProcess(words, environment: env)
            #expect(
              LiveRig.answersStatus(instance, name: name, environment: env), "\(example): \(instance.log)")
            running[name] = instance
          } else if words.first == "ctl"
            && (words.contains("events") || (words.contains("meters") && !words.contains("--once")))
          {
            // A `ctl` command that follows, not LiveMic itself; it runs for its second.
            let follower = try LiveMicProcess(words, environment: env)
            usleep(1_000_000)
            #expect(follower.process.isRunning, "\(example) stopped by itself: \(follower.log)")
            #expect(follower.interrupt() == 0, "\(example): \(follower.log)")
          } else {
            let result = try runLiveMic(words, environment: env)
            #expect(result.status == 0, "\(example): status \(result.status): \(result.stderr)")
          }
        }
        for name in running.keys.sorted() { stop(name, document.lastPathComponent) }
        for line in try Self.otherShellLines(document) {
          guard let reason = Self.notRun.first(where: { line.hasPrefix($0.start) }) else {
            Issue.record(
              "\(document.lastPathComponent): '\(line)' is neither run by this test nor listed in notRun")
            continue
          }
          listed.append("\(line.prefix(40)): \(reason.why)")
        }
      }
      #expect(ran >= 15, "only \(ran) commands found")
      print("[measured] guide commands run: \(ran); not run (listed): \(listed.count)")
    }
  }
}
