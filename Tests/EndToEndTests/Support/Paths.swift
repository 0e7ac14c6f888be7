import Foundation

/// Where things are, relative to this source file (the package root is three levels up).
enum Paths {
  static let root: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// The release binary the end-to-end tests run (`swift build -c release` makes it; the test
  /// script does that first). `$LIVEMIC_BINARY` names another one (a build with its own
  /// `--scratch-path`).
  static var livemic: URL {
    if let path = binaryOverride { return URL(fileURLWithPath: path) }
    return root.appendingPathComponent(".build/release/livemic")
  }

  private static var binaryOverride: String? {
    ProcessInfo.processInfo.environment["LIVEMIC_BINARY"].flatMap { $0.isEmpty ? nil : $0 }
  }

  /// The environment for a child `livemic`: this process's, plus, for a binary outside the
  /// package (which cannot find the shipped presets beside itself), `LIVEMIC_PRESETS_DIR`. On
  /// PipeWire, the private runtime folder (`PipeWireRuntime`); the `LD_LIBRARY_PATH` that
  /// `pw-jack` set is inherited, so the child loads PipeWire's libjack too.
  static func childEnvironment() -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    if TestBackend.isPipeWire { PipeWireRuntime.apply(to: &env) }
    if binaryOverride != nil && env["LIVEMIC_PRESETS_DIR"] == nil {
      env["LIVEMIC_PRESETS_DIR"] = root.appendingPathComponent("presets").path
    }
    return env
  }

  static var rtguardSource: URL { root.appendingPathComponent("Tests/Support/rtguard/rtguard.c") }
  /// The guard's positive control: a C client whose callback allocates once.
  static var leakyClientSource: URL { root.appendingPathComponent("Tests/Support/rtguard/leaky-client.c") }

  /// The workplace's independent real-time checker, when present beside the repository.
  static var rtcheck: URL { root.appendingPathComponent("../shared/tools/rtcheck/rtcheck").standardized }

  /// A fresh temporary folder for one test.
  static func temporaryFolder(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("livemic-e2e-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}

/// A test failure in the harness itself, with one readable sentence.
struct HarnessError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass.
func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    if condition() { return true }
    usleep(10_000)
  }
  return condition()
}
