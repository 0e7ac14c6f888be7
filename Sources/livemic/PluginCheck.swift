import DSP
import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What `livemic plugins check` is asked to do.
struct PluginCheckOptions: Equatable {
  var filter: String?
  var json = false
  /// A running JACK server to check on; nil: start a private dummy jackd.
  var server: String?
  /// The real-time guard library to preload into each child (`--guard`).
  var guardLibrary: String?
  /// How long a child may take before it is killed.
  var timeout = 10.0
  /// How many children run at once.
  var jobs = 1
}

/// Why `livemic plugins check` could not run; each message is one sentence.
enum PluginCheckError: CodedError, Equatable {
  case noJackd
  case serverDidNotStart(name: String, log: String)
  case noGuard(String)
  case launch(String)

  var description: String {
    switch self {
    case .noJackd:
      return "jackd is not installed (Debian: apt-get install jackd2), or give a running server with --server"
    case .serverDidNotStart(let name, let log):
      return "the private JACK server '\(name)' did not accept clients within 10 s"
        + (log.isEmpty ? "" : " (\(log))")
    case .noGuard(let path): return "the real-time guard library '\(path)' does not exist"
    case .launch(let reason): return "cannot start a check process: \(reason)"
    }
  }

  var code: String {
    switch self {
    case .noJackd: return "check.no-jackd"
    case .serverDidNotStart: return "check.server-did-not-start"
    case .noGuard: return "check.no-guard"
    case .launch: return "check.launch"
    }
  }
}

/// `livemic plugins check [FILTER]`: every installed plugin that matches, hosted in a child
/// process of its own (`livemic plugins check-one URI`) on a JACK server, one line each as it
/// is known, and a summary. Plugins LiveMic refuses by their description are not started.
///
/// Thread: the main thread (a CLI command); the children are waited for on worker threads.
enum PluginCheck {
  /// Below this peak (dBFS) the output counts as no sound.
  static let silenceDb = -100.0

  /// Runs the inventory; prints each line (or, with `--json`, the array at the end, the summary
  /// on standard error). Returns the exit status: 0 when every plugin was checked.
  /// `world`: the installed plugins (nil: `ChainBuilder.world`, loaded here, its time counted).
  static func run(_ options: PluginCheckOptions, world: LV2World? = nil) throws(PluginCheckError) -> Int32 {
    if let path = options.guardLibrary, !FileManager.default.fileExists(atPath: path) {
      throw .noGuard(path)
    }
    let started = Date()
    let world = world ?? ChainBuilder.world
    let needle = options.filter?.lowercased()
    let plugins = world.allPlugins().filter { p in
      guard let needle else { return true }
      return [p.uri, p.name, p.className].contains { $0.lowercased().contains(needle) }
    }.sorted { $0.uri < $1.uri }
    if plugins.isEmpty {
      print("no installed LV2 plugin matches" + (options.filter.map { " '\($0)'" } ?? ""))
      return 0
    }
    let server: CheckServer? = options.server == nil ? try CheckServer.start() : nil
    defer { server?.stop() }
    let serverName = options.server ?? server?.name
    let signals = stopOnSignals(serverPID: server?.pid)
    defer { signals.forEach { $0.cancel() } }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-check-\(getpid())")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let executable = URL(
      fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0])

    let queue = CheckQueue(count: plugins.count, printsLines: !options.json)
    let launchError = Mutex<PluginCheckError?>(nil)
    DispatchQueue.concurrentPerform(iterations: max(1, min(options.jobs, plugins.count))) { _ in
      while let i = queue.take() {
        let p = plugins[i]
        let entry: CheckEntry
        if let reason = p.unsupportedReason {
          entry = CheckEntry(uri: p.uri, name: p.name, outcome: .refused(reason), counts: nil, seconds: 0)
        } else {
          do throws(PluginCheckError) {
            entry = try ChildRun(
              executable: executable, uri: p.uri, server: serverName, guardLibrary: options.guardLibrary,
              folder: folder, index: i, timeout: options.timeout
            ).check(name: p.name)
          } catch {
            launchError.withLock { $0 = $0 ?? error }
            entry = CheckEntry(
              uri: p.uri, name: p.name, outcome: .failed(error.description), counts: nil, seconds: 0)
          }
        }
        queue.finish(i, entry)
      }
    }
    if let error = launchError.withLock({ $0 }) { throw error }
    let entries = queue.entries
    let summary = summary(
      entries, seconds: Date().timeIntervalSince(started), guarded: options.guardLibrary != nil)
    if options.json {
      FileHandle.standardOutput.write(
        Data((JSONValue.array(entries.map(\.json)).encoded(.pretty) + "\n").utf8))
      FileHandle.standardError.write(Data("livemic: \(summary)\n".utf8))
    } else {
      print(summary)
    }
    return 0
  }
}

extension PluginCheck {
  /// SIGINT and SIGTERM kill the children and stop the private server (when there is one)
  /// before the inventory exits with status 130.
  static func stopOnSignals(serverPID: Int32?) -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { sig in
      signal(sig, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
      source.setEventHandler {
        ChildRun.killAll()
        if let serverPID { kill(serverPID, SIGTERM) }
        exit(130)
      }
      source.resume()
      return source
    }
  }
}

/// The inventory's work list: which plugin is next, the results, and the lines printed in the
/// plugins' order as soon as every one before is known.
///
/// Thread: any (behind a mutex).
final class CheckQueue: Sendable {
  private struct State {
    var next = 0
    var printed = 0
    var entries: [CheckEntry?]
  }
  private let state: Mutex<State>
  private let printsLines: Bool

  init(count: Int, printsLines: Bool) {
    state = Mutex(State(entries: Array(repeating: nil, count: count)))
    self.printsLines = printsLines
  }

  /// The next plugin's index, or nil when every one is taken.
  func take() -> Int? {
    state.withLock { s in
      guard s.next < s.entries.count else { return nil }
      defer { s.next += 1 }
      return s.next
    }
  }

  /// Records a result, and prints the lines that are now in order.
  func finish(_ index: Int, _ entry: CheckEntry) {
    state.withLock { s in
      s.entries[index] = entry
      while s.printed < s.entries.count, let ready = s.entries[s.printed] {
        if printsLines { FileHandle.standardOutput.write(Data((ready.line + "\n").utf8)) }
        s.printed += 1
      }
    }
  }

  var entries: [CheckEntry] { state.withLock { $0.entries.compactMap { $0 } } }
}

/// A private dummy jackd for one inventory (48 kHz, 256 frames, no real-time scheduling),
/// stopped by its PID at the end.
///
/// Thread: the main thread.
final class CheckServer {
  let name: String
  private let process: Process
  var pid: Int32 { process.processIdentifier }

  private init(name: String, process: Process) {
    self.name = name
    self.process = process
  }

  /// Starts the server and waits until it accepts clients (at most 10 s).
  static func start(sampleRate: Int = 48000, period: Int = 256) throws(PluginCheckError) -> CheckServer {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
      .map { "\($0)/jackd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    guard
      let jackd = path
        ?? (FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") ? "/usr/bin/jackd" : nil)
    else { throw .noJackd }
    let name = "livemic-check-server-\(getpid())"
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: jackd)
    process.arguments = [
      "--no-realtime", "-n", name, "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)",
    ]
    var environment = ProcessInfo.processInfo.environment
    environment["JACK_NO_AUDIO_RESERVATION"] = "1"
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let handle = try? FileHandle(forWritingTo: log)
    process.standardOutput = handle ?? FileHandle.nullDevice
    process.standardError = handle ?? FileHandle.nullDevice
    do { try process.run() } catch { throw .launch("\(jackd): \(error.localizedDescription)") }
    let server = CheckServer(name: name, process: process)
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      if ServerProbe.probe(server: name) != nil {
        try? FileManager.default.removeItem(at: log)
        return server
      }
      if !process.isRunning { break }
      usleep(50_000)
    }
    server.stop()
    let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    try? FileManager.default.removeItem(at: log)
    let last = text.split(separator: "\n").last.map(String.init) ?? ""
    throw .serverDidNotStart(name: name, log: last)
  }

  /// Stops the server (SIGTERM, then SIGKILL after 2 s).
  func stop() {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGTERM)
    let deadline = Date().addingTimeInterval(2)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }
}
