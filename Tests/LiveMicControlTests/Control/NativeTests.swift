import Foundation
import TestSupport
import Testing

/// The files that make LiveMic feel native: the man page, the bash completion, the systemd
/// units and the examples in every help text. None of these tests needs a JACK server.
@Suite("Man page, completion, systemd unit")
struct NativeTests {
  static let manPage = Programs.packageRoot.appendingPathComponent("docs/livemic.1")
  static let helpSource = Programs.packageRoot.appendingPathComponent("Sources/livemic/Help.swift")
  static let completion = Programs.packageRoot.appendingPathComponent("contrib/bash-completion/livemic")

  @Test(
    "the man page renders with groff without warnings",
    .enabled(
      if: Programs.tool("groff") != nil, "groff is not installed (scripts/setup --test installs groff-base)"))
  func manPageRendersWithGroff() throws {
    let result = try Programs.run(
      Programs.tool("groff")!, ["-man", "-Tutf8", "-ww", "-z", Self.manPage.path])
    #expect(result.status == 0)
    #expect(result.err.isEmpty, "groff warned:\n\(result.err)")
  }

  @Test(
    "the man page renders with man -l without warnings",
    .enabled(if: Programs.tool("man") != nil, "man is not installed (scripts/setup --test installs man-db)"))
  func manPageRendersWithMan() throws {
    var environment = ProcessInfo.processInfo.environment
    environment["MANWIDTH"] = "80"
    environment["MAN_KEEP_FORMATTING"] = nil
    environment["LC_ALL"] = "C.UTF-8"
    let result = try Programs.run(
      Programs.tool("man")!, ["--warnings", "-l", Self.manPage.path], environment: environment)
    #expect(result.status == 0)
    #expect(result.err.isEmpty, "man warned:\n\(result.err)")
    #expect(result.out.contains("livemic - a live voice chain for JACK"))
  }

  @Test("the man page names every subcommand, option and control command of the help texts")
  func manPageCoversTheHelp() throws {
    let help = try String(contentsOf: Self.helpSource, encoding: .utf8)
    let page = try String(contentsOf: Self.manPage, encoding: .utf8).replacingOccurrences(
      of: "\\-", with: "-")
    let options = Set(help.matches(of: /--[a-z][a-z-]*[a-z]/).map { String($0.output) })
    #expect(options.count > 30)
    for option in options.sorted() {
      #expect(page.contains(option), "docs/livemic.1 does not mention \(option)")
    }
    for word in [
      "run", "render", "presets", "params", "bench", "plugins", "ctl", "monitor", "doctor", "help",
    ] {
      #expect(page.contains(".B \(word)") || page.contains(".BI \"\(word) "), "no entry for \(word)")
    }
    for word in [
      "status", "get", "set", "preset load", "preset save", "mute", "unmute", "route override",
      "route clear", "connections", "meters", "events", "learn", "record start", "record stop",
    ] {
      #expect(page.contains(word), "no control command \(word)")
    }
    for name in ["NSM_URL", "LIVEMIC_PRESETS_DIR", "XDG_RUNTIME_DIR", "JACK_DEFAULT_SERVER", "NAME.sock"] {
      #expect(page.contains(name), "docs/livemic.1 does not mention \(name)")
    }
  }

  @Test("every help text shows examples")
  func everyHelpHasExamples() throws {
    let help = try String(contentsOf: Self.helpSource, encoding: .utf8)
    let texts = help.matches(of: /let (\w+Help) = """([\s\S]*?)"""/).map {
      (String($0.output.1), String($0.output.2))
    }
    #expect(texts.count == 10)
    for (name, text) in texts {
      #expect(text.contains("EXAMPLES\n    livemic"), "\(name) has no EXAMPLES section")
    }
  }

  /// What the completion offers for a command line whose last word is being completed.
  static func complete(_ words: [String], livemic: String) throws -> [String] {
    let quoted = ([livemic] + words).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    let script = """
      source '\(completion.path)'
      COMP_WORDS=(\(quoted.joined(separator: " ")))
      COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
      _livemic
      printf '%s\\n' "${COMPREPLY[@]}"
      """
    let result = try Programs.run(
      try #require(Programs.tool("bash"), "bash is not installed"), ["--norc", "--noprofile", "-c", script])
    #expect(result.status == 0, "bash: \(result.err)")
    return result.out.split(separator: "\n").map(String.init)
  }

  @Test(
    "the bash completion completes subcommands, options, presets and parameter keys",
    .enabled(
      if: Programs.tool("bash") != nil && Programs.livemic != nil,
      "needs bash and a built livemic (swift build)"))
  func bashCompletion() throws {
    let binary = Programs.livemic!
    #expect(try Self.complete(["ct"], livemic: binary) == ["ctl"])
    #expect(try Self.complete(["help", "mo"], livemic: binary) == ["monitor"])
    #expect(try Self.complete(["--record-f"], livemic: binary) == ["--record-format"])
    #expect(try Self.complete(["--stream-format", ""], livemic: binary) == ["f32", "wav"])
    let presets = try Self.complete(["-p", ""], livemic: binary)
    #expect(presets.contains("voice") && presets.contains("karaoke"), "\(presets)")
    #expect(try Self.complete(["render", "--preset", "pod"], livemic: binary) == ["podcast"])
    #expect(try Self.complete(["presets", "show", "hea"], livemic: binary) == ["hearing"])
    #expect(try Self.complete(["plot", "kar"], livemic: binary) == ["karaoke"])
    #expect(try Self.complete(["plot", "--out"], livemic: binary) == ["--output"])
    #expect(try Self.complete(["plugins", ""], livemic: binary) == ["show", "check"])
    #expect(try Self.complete(["plugins", "check", "--gu"], livemic: binary) == ["--guard"])
    let keys = try Self.complete(["ctl", "set", "eq."], livemic: binary)
    #expect(keys.contains("eq.bass_db") && keys.contains("eq.bypass"), "\(keys)")
    #expect(keys.allSatisfy { $0.hasPrefix("eq.") })
    #expect(try Self.complete(["-c", "output.vol"], livemic: binary) == ["output.volume="])
    #expect(
      try Self.complete(["ctl", "-n", "stage", "get", "limiter.ceil"], livemic: binary) == [
        "limiter.ceiling_db"
      ])
    #expect(try Self.complete(["ctl", "preset", "load", "kar"], livemic: binary) == ["karaoke"])
    #expect(
      try Self.complete(["ctl", "mute", "--mode", ""], livemic: binary) == ["ramp", "input", "suspend"])
  }

  @Test(
    "the systemd units verify",
    .enabled(if: Programs.tool("systemd-analyze") != nil, "systemd-analyze is not installed"))
  func systemdUnitsVerify() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-units-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    // The executables may not be installed here: point ExecStart at ones that exist.
    var paths: [String] = []
    for name in ["livemic.service", "jack.service"] {
      let text = try String(
        contentsOf: Programs.packageRoot.appendingPathComponent("contrib/systemd/\(name)"), encoding: .utf8)
      #expect(text.contains("Restart=on-failure") && text.contains("RestartSec="))
      if name == "livemic.service" {
        #expect(text.contains("After=jack.service") && text.contains("Wants=jack.service"))
      }
      let target = folder.appendingPathComponent(name)
      try text.replacingOccurrences(of: "/usr/local/bin/livemic", with: "/bin/true")
        .replacingOccurrences(of: "/usr/bin/jackd", with: "/bin/true")
        .write(to: target, atomically: true, encoding: .utf8)
      paths.append(target.path)
    }
    let result = try Programs.run(Programs.tool("systemd-analyze")!, ["verify", "--man=no"] + paths)
    #expect(result.status == 0)
    #expect(result.err.isEmpty, "systemd-analyze verify:\n\(result.err)")
  }
}
