import Foundation

/// The package's folder and the programs the offline test targets run (the built `livemic`,
/// tools on PATH), for every test target that runs one. Thread: any.
public enum Programs {
  /// The package's root folder.
  public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// The first executable called `name` on PATH (and the usual system folders).
  public static func tool(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let folders = path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin"]
    return folders.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  /// The livemic binary: `$LIVEMIC_BINARY`, else the newer of the debug and release builds.
  public static var livemic: String? {
    if let path = ProcessInfo.processInfo.environment["LIVEMIC_BINARY"], !path.isEmpty { return path }
    let candidates = ["debug", "release"].map {
      packageRoot.appendingPathComponent(".build/\($0)/livemic").path
    }
    .filter { FileManager.default.isExecutableFile(atPath: $0) }
    func modified(_ path: String) -> Date {
      ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
    }
    return candidates.max { modified($0) < modified($1) }
  }

  /// The release livemic binary (`$LIVEMIC_BINARY`, else .build/release/livemic when built,
  /// else `livemic`): for what measures speed, which a debug build would falsify.
  public static var releaseLivemic: String? {
    if let path = ProcessInfo.processInfo.environment["LIVEMIC_BINARY"], !path.isEmpty { return path }
    let release = packageRoot.appendingPathComponent(".build/release/livemic").path
    return FileManager.default.isExecutableFile(atPath: release) ? release : livemic
  }

  /// Runs a program; returns its status, standard output and standard error.
  public static func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil)
    throws -> (
      status: Int32, out: String, err: String
    )
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    if let environment { process.environment = environment }
    // Files rather than pipes: nothing can block on a full pipe.
    let folder = FileManager.default.temporaryDirectory
    let outURL = folder.appendingPathComponent("livemic-native-out-\(getpid())-\(UUID().uuidString)")
    let errURL = folder.appendingPathComponent("livemic-native-err-\(getpid())-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer {
      try? FileManager.default.removeItem(at: outURL)
      try? FileManager.default.removeItem(at: errURL)
    }
    process.standardOutput = try FileHandle(forWritingTo: outURL)
    process.standardError = try FileHandle(forWritingTo: errURL)
    try process.run()
    process.waitUntilExit()
    let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
    return (process.terminationStatus, out, err)
  }
}
