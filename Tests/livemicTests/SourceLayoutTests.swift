import Foundation
import Testing

/// The tree keeps the shape docs/architecture.md draws: files small enough to read, and each
/// target importing only what its layer may (Package.swift lets the compiler refuse the rest;
/// this names the rule where a reader looks for it).
@Suite struct SourceLayoutTests {
  static let sources = packageRoot.appendingPathComponent("Sources")

  /// Every Swift file under `Sources`, with its target and its lines.
  static func files() throws -> [(target: String, path: String, lines: [Substring])] {
    guard let walk = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else {
      return []
    }
    var found: [(String, String, [Substring])] = []
    for case let url as URL in walk where url.pathExtension == "swift" {
      let relative = String(url.path.dropFirst(sources.path.count + 1))
      let text = try String(contentsOf: url, encoding: .utf8)
      found.append(
        (
          String(relative.prefix { $0 != "/" }), relative,
          text.split(separator: "\n", omittingEmptySubsequences: false)
        ))
    }
    return found
  }

  /// A file holds one responsibility (docs/architecture.md); its length is only a smell
  /// detector, generous so that no file is split just to stay under it.
  @Test("no source file is over 700 lines")
  func filesStaySmall() throws {
    let files = try Self.files()
    #expect(files.count > 50)
    for file in files { #expect(file.lines.count <= 700, "\(file.path): \(file.lines.count) lines") }
  }

  /// Shared helpers that are not signal processing live below DSP's top level.
  @Test("DSP's top level holds the chain and its parts, not general helpers")
  func dspTopLevel() throws {
    let top = try Self.files().filter { $0.target == "DSP" && $0.path.split(separator: "/").count == 2 }
    for name in ["DSP/Locked.swift", "DSP/CodedError.swift", "DSP/VoiceChain+Arrays.swift"] {
      #expect(!top.contains { $0.path == name }, "\(name) is at DSP's top level")
    }
  }

  /// DSP/Units holds the units a chain names, each file a `VoiceUnit` (or two of a kind); the
  /// parts of one unit live in its own folder (Denoise/, Feedback/, WebRTC/), shared helpers in
  /// Support/.
  @Test("DSP/Units holds only VoiceUnit types; each unit's helpers have a folder of their own")
  func unitsAreUnits() throws {
    let units = try Self.files().filter { $0.path.hasPrefix("DSP/Units/") }
    #expect(!units.isEmpty)
    for file in units {
      let declarations = file.lines.filter { line in
        ["struct ", "final class ", "class ", "enum "].contains { kind in
          line.hasPrefix(kind) || line.hasPrefix("public " + kind) || line.hasPrefix("public final " + kind)
        }
      }
      for line in declarations {
        #expect(line.contains(": VoiceUnit"), "\(file.path) declares a type that is not a unit: \(line)")
      }
    }
    for folder in ["DSP/Denoise/", "DSP/Feedback/", "DSP/WebRTC/"] {
      #expect(try Self.files().contains { $0.path.hasPrefix(folder) }, "\(folder) is missing")
    }
  }

  @Test("DSP, the presets and the offline tools import no JACK client and no engine")
  func layersImportDownward() throws {
    let forbidden: [String: Set<String>] = [
      "DSP": [
        "CJack", "CLilv", "LV2Host", "LiveMicEngine", "LiveMicControl", "LiveMicPresets", "LiveMicOffline",
      ],
      "LiveMicEngine": ["CLilv", "LV2Host", "LiveMicControl", "LiveMicPresets", "LiveMicOffline"],
      "LiveMicPresets": ["CJack", "LiveMicEngine", "LiveMicControl", "LiveMicOffline"],
      "LiveMicOffline": ["CJack", "LiveMicEngine", "LiveMicControl"],
    ]
    for file in try Self.files() {
      guard let refused = forbidden[file.target] else { continue }
      for line in file.lines where line.hasPrefix("import ") {
        let module = String(line.dropFirst("import ".count))
        #expect(!refused.contains(module), "\(file.path) imports \(module)")
      }
    }
  }
}
