import Foundation
import Synchronization
import TestSupport
import Testing

/// The release `livemic` binary run as a child process, its standard error kept in a file.
final class LiveMicProcess {
  let process = Process()
  let logFile: URL
  let folder: URL

  /// Starts `livemic ARGS`. With `guardOutput`, the project's real-time guard is preloaded and
  /// writes its counters there.
  init(
    _ arguments: [String], guardOutput: URL? = nil, preload: String? = nil,
    environment extra: [String: String] = [:]
  ) throws {
    folder = Paths.temporaryFolder("run")
    logFile = folder.appendingPathComponent("stderr.txt")
    _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
    guard FileManager.default.isExecutableFile(atPath: Paths.livemic.path) else {
      throw HarnessError(
        "no release binary at \(Paths.livemic.path): run 'swift build -c release' (scripts/test does)")
    }
    process.executableURL = Paths.livemic
    process.arguments = arguments
    var env = Paths.childEnvironment()
    env["JACK_NO_START_SERVER"] = "1"
    env["XDG_CONFIG_HOME"] = folder.path  // no user presets
    if let guardOutput {
      env["LD_PRELOAD"] = try RealtimeGuard.library().path
      env["RTGUARD_OUT"] = guardOutput.path
    }
    if let preload { env["LD_PRELOAD"] = preload }
    for (k, v) in extra { env[k] = v }
    process.environment = env
    process.standardError = try FileHandle(forWritingTo: logFile)
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    // LiveMic outlives a lost server by design (it waits to reconnect): if this test process
    // dies, the watchdog stops it, so no orphan keeps reconnecting and loading the machine.
    startWatchdog(server: process.processIdentifier, killAfterSeconds: 3)
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
    try? FileManager.default.removeItem(at: folder)
  }

  var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

  /// Waits until the log contains `text`.
  @discardableResult
  func waitForLog(_ text: String, seconds: Double = 10) -> Bool {
    waitUntil(seconds: seconds) { log.contains(text) || !process.isRunning } && log.contains(text)
  }

  /// Sends SIGINT and waits for the exit status.
  func interrupt(seconds: Double = 10) -> Int32? {
    guard process.isRunning else { return process.terminationStatus }
    kill(process.processIdentifier, SIGINT)
    guard waitUntil(seconds: seconds, { !process.isRunning }) else { return nil }
    process.waitUntilExit()
    return process.terminationStatus
  }
}

/// Runs `livemic ARGS` to completion: exit status, standard output and standard error.
func runLiveMic(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (
  status: Int32, stdout: String, stderr: String
) {
  var env = Paths.childEnvironment()
  env["JACK_NO_START_SERVER"] = "1"
  for (k, v) in extra { env[k] = v }
  return try runToEnd(Paths.livemic, arguments, environment: env)
}

/// Runs `executable ARGS` in `environment` (from the package root when `inRoot`) to completion
/// through the tests' one runner (`Programs.run`: both pipes read at once, killed after
/// `limitSeconds`): exit status, standard output and standard error.
func runToEnd(
  _ executable: URL, _ arguments: [String], environment: [String: String], inRoot: Bool = false,
  limitSeconds: Double = 600
) throws -> (status: Int32, stdout: String, stderr: String) {
  let (status, out, err) = try Programs.run(
    executable.path, arguments, environment: environment, currentDirectory: inRoot ? Paths.root : nil,
    limitSeconds: limitSeconds)
  return (status, out, err)
}

/// Runs a tool found on PATH and returns its standard output (its errors go to the test's
/// output); nil when it is missing or fails.
func runTool(_ name: String, _ arguments: [String]) throws -> String? {
  guard let result = try Programs.run(tool: name, arguments) else { return nil }
  if !result.err.isEmpty { print(result.err, terminator: "") }
  return result.status == 0 ? result.out : nil
}

/// The project's real-time guard (Tests/Support/rtguard), compiled once per test run.
enum RealtimeGuard {
  private static let built: Result<URL, HarnessError> = {
    let folder = Paths.temporaryFolder("rtguard")
    let output = folder.appendingPathComponent("librtguard.so")
    let arguments = [
      "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-o", output.path, Paths.rtguardSource.path, "-ldl",
      "-lpthread",
    ]
    guard (try? runTool("cc", arguments)) != nil else {
      return .failure(
        HarnessError("cc failed to build the real-time guard (scripts/setup --test installs cc)"))
    }
    return .success(output)
  }()

  static func library() throws -> URL { try built.get() }

  /// The counters a real-time callback must keep at zero.
  static let forbidden = ["malloc", "free", "lock", "wait", "io", "sleep"]

  /// Expects every forbidden counter in a counters file to be zero (and the file to exist).
  static func expectNothingCounted(
    _ file: URL, _ label: String = "guard", sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let c = counters(file)
    for key in forbidden {
      #expect(
        c[key] == "0",
        "\(label): \(key)=\(c[key] ?? "?") after \(c["cycles"] ?? "?") cycles (first: \(c["first"] ?? "?"))\(stack(file))",
        sourceLocation: sourceLocation)
    }
  }

  /// The guard's record of the first counted call's stack (`FILE.backtrace`, one
  /// `module +offset symbol` line per frame), with `livemic`'s own frames resolved to source
  /// lines by `llvm-symbolizer` where it is installed; empty when there is none (or for rtcheck).
  static func stack(_ file: URL) -> String {
    guard let text = try? String(contentsOfFile: file.path + ".backtrace", encoding: .utf8) else { return "" }
    let lines = text.split(separator: "\n").map { line -> String in
      let parts = line.split(separator: " ")
      guard parts.count >= 2, parts[0].hasSuffix("/livemic"), parts[1].hasPrefix("+") else {
        return String(line)
      }
      let resolved = try? runTool(
        "llvm-symbolizer", ["--obj=\(parts[0])", "--inlining", "--no-demangle", String(parts[1].dropFirst())])
      // Pairs of lines per (inlined) frame: the function, then its file:line.
      let out = (resolved ?? "").split(separator: "\n").map(String.init)
      let places = stride(from: 0, to: out.count - 1, by: 2).map {
        out[$0 + 1].hasPrefix("/<compiler-generated>") ? out[$0] : out[$0 + 1]
      }
      return places.isEmpty ? String(line) : "\(line)  " + places.joined(separator: " < ")
    }
    return "\nfirst call's stack:\n" + lines.joined(separator: "\n")
  }

  /// Parses a counters line: `cycles=2133 malloc=0 … us_max=74.8`.
  static func counters(_ file: URL) -> [String: String] {
    guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [:] }
    var result: [String: String] = [:]
    for field in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
      let parts = field.split(separator: "=", maxSplits: 1)
      if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
    }
    return result
  }
}

/// The release binary run under the workplace's independent `rtcheck` (`Paths.rtcheck`).
/// Foundation starts the child as a process-group leader, so signalling the group reaches
/// livemic under rtcheck's shell script.
final class RtcheckRun {
  let output: URL
  let process = Process()

  init(_ arguments: [String], output: URL) throws {
    self.output = output
    process.executableURL = Paths.rtcheck
    process.arguments = ["-o", output.path, "--", Paths.livemic.path] + arguments
    process.environment = Paths.childEnvironment()
    process.standardError = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    try process.run()
  }

  /// Cycles rtcheck has seen so far.
  var cycles: Int { Int(RealtimeGuard.counters(output)["cycles"] ?? "0") ?? 0 }

  /// SIGINT to the group (rtcheck's shell dies of it too; livemic stops cleanly), then waits.
  func stop() {
    kill(-process.processIdentifier, SIGINT)
    _ = waitUntil(seconds: 10) { !process.isRunning }
    if process.isRunning { kill(-process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }
}
