import Foundation
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One child of `livemic plugins check`: `livemic plugins check-one URI -s SERVER`, with the
/// real-time guard preloaded when one is given, killed when it takes longer than the timeout;
/// its exit (a signal, a status) and its JSON line make the plugin's outcome.
///
/// Thread: any but the audio thread (it starts a process and waits for it).
struct ChildRun {
  let executable: URL
  let uri: String
  let server: String?
  let guardLibrary: String?
  /// Where the child's output, errors and guard counts go (`N.out`, `N.err`, `N.rtguard`).
  let folder: URL
  let index: Int
  let timeout: Double

  /// The children running now, for the inventory's SIGINT and SIGTERM handler to kill.
  static let running = Mutex<Set<Int32>>([])

  /// Kills every child still running (SIGKILL). Any thread.
  static func killAll() {
    for pid in running.withLock({ $0 }) { kill(pid, SIGKILL) }
  }

  /// Runs the child and reads what became of the plugin.
  func check(name: String) throws(PluginCheckError) -> CheckEntry {
    let out = folder.appendingPathComponent("\(index).out")
    let err = folder.appendingPathComponent("\(index).err")
    let counters = folder.appendingPathComponent("\(index).rtguard")
    for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
    let process = Process()
    process.executableURL = executable
    process.arguments = ["plugins", "check-one", uri] + (server.map { ["-s", $0] } ?? [])
    var environment = ProcessInfo.processInfo.environment
    environment["JACK_NO_START_SERVER"] = "1"
    // A crash ends the child at once, without Swift's backtracer (it can take seconds).
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment.removeValue(forKey: "LD_PRELOAD")
    environment.removeValue(forKey: "RTGUARD_OUT")
    if let guardLibrary {
      environment["LD_PRELOAD"] = guardLibrary
      environment["RTGUARD_OUT"] = counters.path
    }
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let outHandle: FileHandle
    let errHandle: FileHandle
    do {
      outHandle = try FileHandle(forWritingTo: out)
      errHandle = try FileHandle(forWritingTo: err)
    } catch { throw .launch("cannot write into '\(folder.path)'") }
    defer {
      try? outHandle.close()
      try? errHandle.close()
    }
    process.standardOutput = outHandle
    process.standardError = errHandle
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    let started = Date()
    do { try process.run() } catch { throw .launch("\(executable.path): \(error.localizedDescription)") }
    let pid = process.processIdentifier
    Self.running.withLock { _ = $0.insert(pid) }
    defer { Self.running.withLock { _ = $0.remove(pid) } }
    var timedOut = false
    if exited.wait(timeout: .now() + timeout) == .timedOut {
      timedOut = true
      kill(pid, SIGKILL)
      exited.wait()
    }
    let seconds = Date().timeIntervalSince(started)
    let outcome: CheckEntry.Outcome
    if timedOut {
      outcome = .timedOut(seconds: timeout)
    } else if process.terminationReason == .uncaughtSignal {
      outcome = .crashed(signal: process.terminationStatus)
    } else {
      outcome = Self.outcome(
        status: process.terminationStatus, output: Self.text(out), errors: Self.text(err))
    }
    let counts = guardLibrary == nil ? nil : GuardCounts(line: Self.text(counters))
    for file in [out, err, counters] { try? FileManager.default.removeItem(at: file) }
    try? FileManager.default.removeItem(at: URL(fileURLWithPath: counters.path + ".backtrace"))
    return CheckEntry(uri: uri, name: name, outcome: outcome, counts: counts, seconds: seconds)
  }

  /// The outcome of a child that exited: its JSON line, or the last error it printed.
  static func outcome(status: Int32, output: String, errors: String) -> CheckEntry.Outcome {
    let last = output.split(separator: "\n").last.map(String.init) ?? ""
    if status == 0, let line = try? JSONValue.parse(last), let kind = line["outcome"]?.string {
      switch kind {
      case "refused": return .refused(line["reason"]?.string ?? "no reason given")
      case "rendered":
        let blocks = line["blocks"]?.integer ?? 0
        let nonFinite = line["nonFiniteBlocks"]?.integer ?? 0
        if nonFinite > 0 { return .nonFinite(blocks: nonFinite, of: blocks) }
        let peak = line["peak"]?.number ?? 0
        let db = peak > 0 ? 20 * log10(peak) : -Double.infinity
        return db < PluginCheck.silenceDb ? .noSound(peakDb: db) : .hosted(peakDb: db)
      default: return .failed(line["reason"]?.string ?? "the check process gave no reason")
      }
    }
    let error = errors.split(separator: "\n").last { $0.hasPrefix("livemic: error: ") }
    if let error { return .failed(String(error.dropFirst("livemic: error: ".count))) }
    return .failed("the check process exited with status \(status) and no result")
  }

  private static func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
}
