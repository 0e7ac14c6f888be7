import Foundation
import Testing

extension EndToEnd {
  /// Every `livemic` command line in the README and the docs (guides included) and in each
  /// `--help`'s EXAMPLES still parses: the options exist, take the values shown, and a run's or
  /// render's preset and `--set` keys are real (`LIVEMIC_PARSE_ONLY=1` checks without running).
  @Suite("Documented command lines")
  struct DocCommandTests {
    /// A documented command line and where it is; `failure` is the error line the document shows
    /// right after it (an example of a mistake), nil for a command that works.
    struct Example: CustomStringConvertible {
      let words: [String]
      let place: String
      var failure: String? = nil
      var description: String { "\(place): livemic \(words.joined(separator: " "))" }
    }

    /// Shell words of one line (single and double quotes, no expansions); nil for what a shell
    /// would do more with than the test can (`$(…)`, backquotes).
    static func shellWords(_ line: String) -> [String]? {
      if line.contains("$(") || line.contains("`") { return nil }
      var words: [String] = []
      var current = ""
      var quote: Character?
      var inWord = false
      for c in line {
        if let q = quote {
          if c == q { quote = nil } else { current.append(c) }
        } else if c == "'" || c == "\"" {
          quote = c
          inWord = true
        } else if c == " " || c == "\t" {
          if inWord { words.append(current) }
          (current, inWord) = ("", false)
        } else {
          current.append(c)
          inWord = true
        }
      }
      if inWord { words.append(current) }
      return words
    }

    /// The command lines in the fenced code blocks of a Markdown file: lines starting with
    /// `livemic ` (or `$ livemic `), continued by a trailing backslash, cut at a pipe, a
    /// redirection, `&` or a comment. Usage synopses (`[OPTIONS]`, `PRESET`: a word in capitals)
    /// are left out; a line whose block shows an error right after it carries that error.
    static func examples(inMarkdown path: URL) throws -> [Example] {
      let lines = try String(contentsOf: path, encoding: .utf8).components(separatedBy: "\n")
      var result: [Example] = []
      var inBlock = false
      var i = 0
      while i < lines.count {
        let line = lines[i]
        if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
          inBlock.toggle()
          i += 1
          continue
        }
        var text = line.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("$ ") { text.removeFirst(2) }
        guard inBlock, text.hasPrefix("livemic ") || text == "livemic" else {
          i += 1
          continue
        }
        let number = i + 1
        while text.hasSuffix("\\"), i + 1 < lines.count {
          text.removeLast()
          i += 1
          text += " " + lines[i].trimmingCharacters(in: .whitespaces)
        }
        i += 1
        if var example = example(text, place: "\(path.lastPathComponent):\(number)") {
          if let next = lines[safe: i], next.contains("error:") {
            example.failure = next.trimmingCharacters(in: .whitespaces)
          }
          result.append(example)
        }
      }
      return result
    }

    static func example(_ line: String, place: String) -> Example? {
      var text = line
      for cut in [" | ", " > ", " 2>", " &", "  #", " # "] {
        if let range = text.range(of: cut) { text = String(text[..<range.lowerBound]) }
      }
      guard var words = shellWords(text), words.first == "livemic" else { return nil }
      words.removeFirst()
      let placeholder = words.contains { word in
        word.contains("[") || word.contains("…") || word.hasPrefix("(")
          || (!word.contains(".*")  // a port pattern such as 'USB.*:playback_' is no placeholder
            && word.split(whereSeparator: { !$0.isLetter }).contains { part in
              part.count > 1 && part.allSatisfy { $0.isUppercase }
            })
      }
      // A user's own preset file (`-p ~/my-preset.json`) is not here to load.
      let userPreset = zip(words, words.dropFirst()).contains {
        ($0 == "-p" || $0 == "--preset") && $1.hasPrefix("~")
      }
      return placeholder || userPreset ? nil : Example(words: words, place: place)
    }

    /// The EXAMPLES lines of every help text (Sources/livemic/Help.swift).
    static func helpExamples() throws -> [Example] {
      let source = try String(
        contentsOf: Paths.root.appendingPathComponent("Sources/livemic/Help.swift"), encoding: .utf8)
      var result: [Example] = []
      var inExamples = false
      for (n, raw) in source.components(separatedBy: "\n").enumerated() {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line == "EXAMPLES" { inExamples = true } else if line == "\"\"\"" { inExamples = false }
        guard inExamples, line.hasPrefix("livemic ") else { continue }
        // An example's own explanation follows after two spaces or more.
        let command = line.components(separatedBy: "  ").first ?? line
        if let example = example(command, place: "Help.swift:\(n + 1)") { result.append(example) }
      }
      return result
    }

    /// The Markdown files whose command lines are checked: the README, docs/ and docs/guides/
    /// (`guidesOnly`: docs/guides/ alone).
    static func documents(guidesOnly: Bool = false) throws -> [URL] {
      let docs = Paths.root.appendingPathComponent("docs")
      var files = guidesOnly ? [] : [Paths.root.appendingPathComponent("README.md")]
      for folder in guidesOnly
        ? [docs.appendingPathComponent("guides")] : [docs, docs.appendingPathComponent("guides")]
      {
        files += try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
          .filter { $0.pathExtension == "md" }.sorted { $0.path < $1.path }
      }
      return files
    }

    @Test(
      "every livemic command line in the README, docs/ and the --help examples parses"
    )
    func documentedCommandsParse() throws {
      let files = try Self.documents()
      var examples = try files.flatMap { try Self.examples(inMarkdown: $0) }
      examples += try Self.helpExamples()
      #expect(examples.count >= 40, "only \(examples.count) command lines found")
      for example in examples {
        let result = try runLiveMic(example.words, environment: ["LIVEMIC_PARSE_ONLY": "1"])
        // A shown mistake may be one only a run finds (GuideCommandTests runs the guides').
        if example.failure == nil { #expect(result.status == 0, "\(example)\n\(result.stderr)") }
      }
      print("documented command lines checked: \(examples.count) in \(files.count + 1) files")
    }
  }
}

extension Array {
  subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
