import Foundation
import Synchronization

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

  /// Runs `program ARGS` to completion, in `environment` (the test's when nil) and
  /// `currentDirectory`: exit status, standard output and standard error. A run that has not
  /// ended after `limitSeconds` is killed (SIGKILL, status 9, and a line saying so at the end of
  /// its standard error): a hung child fails its test instead of holding the suite until CI's own
  /// limit. The one runner of the tests (EndToEndTests' `runToEnd` and `runLiveMic` call it).
  public static func run(
    _ program: String, _ arguments: [String], environment: [String: String]? = nil,
    currentDirectory: URL? = nil, limitSeconds: Double = 600
  ) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let killed = Mutex(false)
    let pid = process.processIdentifier
    DispatchQueue.global().asyncAfter(deadline: .now() + limitSeconds) { [process] in
      guard process.isRunning else { return }
      killed.withLock { $0 = true }
      kill(pid, SIGKILL)
    }
    // Both pipes are read at once: a child that fills one (64 KiB) while the runner waits for the
    // other's end would block forever (EndToEndTests' ProcessRunnerTests).
    let errRead = DispatchSemaphore(value: 0)
    let errBox = Mutex(Data())
    Thread.detachNewThread {
      let data = err.fileHandleForReading.readDataToEndOfFile()
      errBox.withLock { $0 = data }
      errRead.signal()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    errRead.wait()
    let errData = errBox.withLock { $0 }
    process.waitUntilExit()
    var errText = String(decoding: errData, as: UTF8.self)
    if killed.withLock({ $0 }) {
      errText +=
        "\nrun: \(URL(fileURLWithPath: program).lastPathComponent) did not end within "
        + "\(Int(limitSeconds)) s and was killed\n"
    }
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), errText)
  }

  /// Runs the tool `name` found on PATH (`tool`) to completion; nil when it is not installed.
  public static func run(tool name: String, _ arguments: [String]) throws -> (
    status: Int32, out: String, err: String
  )? {
    guard let path = tool(name) else { return nil }
    return try run(path, arguments)
  }
}
