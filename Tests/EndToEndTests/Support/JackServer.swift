import CJack
import Foundation
import Synchronization

/// A private JACK server for one test, stopped by PID: jackd (dummy backend; real-time
/// scheduling when this process may use it, see `TestRealtime`), or with `LIVEMIC_TEST_SERVER=pipewire` a private `pipewire` daemon whose socket
/// is the server name (`PipeWireDaemon`). Its name never equals a client's name (jackd 1.9.21
/// deletes its own socket then).
final class JackServer {
  private static let counter = Counter()
  let name: String
  let sampleRate: Int
  private var process = Process()
  /// On PipeWire, the stand-in for jackd's physical `system` ports.
  private var systemPorts: SystemPorts?
  private let log: URL
  /// The PipeWire daemon's configuration folder (`PIPEWIRE_CONFIG_DIR`).
  private var configFolder: URL { log.deletingPathExtension().appendingPathExtension("conf.d") }

  /// The period of servers whose tests measure audio in takes (`retaking`): 1024 frames
  /// (21 ms). The host preempts the 2-vCPU CI machine's cores for milliseconds at a time: at
  /// 64 frames `scripts/xrun-probe` logged 23 xruns in 60 s, at 256 frames 7. On a noisier
  /// day (2026-12-02) the capture of a generator alone, no LiveMic, lost 21-22 cycles in 20 s at
  /// 256 frames on jackd and 5 on PipeWire, and 30% of the suite's takes were spoilt; at 1024
  /// frames it lost none, and 2 in 80 s with LiveMic running flat, eg-amp and voice beside it.
  /// Tests about small periods (the real-time guard, buffer-size changes, latency, the
  /// event stream) keep choosing 64 themselves.
  static let takePeriod = 1024

  init(period: Int = 64, sampleRate: Int = 48000) throws {
    name = "lmtestsrv\(getpid())x\(Self.counter.next())"
    self.sampleRate = sampleRate
    log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).log")
    guard TestBackend.isPipeWire || FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") else {
      throw HarnessError("/usr/bin/jackd is missing: install jackd2 (scripts/test does)")
    }
    try launch(period: period, sampleRate: sampleRate)
  }

  /// What runs the server: jackd, or the `pipewire` daemon.
  private var label: String { TestBackend.isPipeWire ? "pipewire" : "jackd" }

  /// Kills the server with SIGKILL (as a crash would) and starts a new one under the same name,
  /// possibly with another period or rate.
  func killAndRestart(period: Int = 64, sampleRate: Int? = nil) throws {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
    systemPorts?.close()
    systemPorts = nil
    try launch(period: period, sampleRate: sampleRate ?? self.sampleRate)
  }

  private func launch(period: Int, sampleRate: Int) throws {
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    process = Process()
    if TestBackend.isPipeWire {
      let (executable, arguments, environment) = try PipeWireDaemon.command(
        name: name, period: period, sampleRate: sampleRate, folder: configFolder)
      process.executableURL = executable
      process.arguments = arguments
      process.environment = environment
    } else {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
      process.arguments =
        ["-n", name] + TestRealtime.jackdArguments + [
          "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)",
        ]
    }
    process.standardOutput = try FileHandle(forWritingTo: log)
    process.standardError = try FileHandle(forWritingTo: log)
    do { try process.run() } catch {
      throw HarnessError("cannot start \(label) (scripts/setup --test installs it): \(error)")
    }
    startWatchdog(server: process.processIdentifier)
    // Ready when a client can open without starting a server.
    let name = self.name
    let ready = waitUntil(seconds: 10) {
      var status = jack_status_t(rawValue: 0)
      guard let c = livemic_client_open("lmprobe", JackNoStartServer, name, &status) else { return false }
      jack_client_close(c)
      return true
    }
    if !ready {
      // Where a server that is still running waits (gdb, where installed), before stopping it.
      let stacks =
        process.isRunning
        ? "still running; its threads: "
          + ((try? runTool(
            "gdb", ["-p", "\(process.processIdentifier)", "-batch", "-ex", "thread apply all bt"]))
            ?? "(gdb unavailable)")
        : "exited with status \(process.terminationStatus)"
      stop()
      let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
      throw HarnessError("\(label) '\(name)' did not accept clients within 10 s (\(stacks)): \(text)")
    }
    if TestBackend.isPipeWire { systemPorts = try SystemPorts(server: name) }
  }

  deinit { stop() }

  func stop() {
    systemPorts?.close()
    systemPorts = nil
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGTERM)
    if !waitUntil(seconds: 5, { !process.isRunning }) {
      kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    try? FileManager.default.removeItem(at: log)
    try? FileManager.default.removeItem(at: configFolder)
  }
}

/// Starts a watchdog that stops `server` (a server or a livemic: SIGTERM; then SIGKILL after
/// `killAfterSeconds`, if given) when this test process dies, so a crashed run never leaves
/// servers (jackd allows only a few at once) or clients behind; it exits by itself once the
/// process is gone.
func startWatchdog(server: Int32, killAfterSeconds: Int? = nil) {
  let watchdog = Process()
  watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
  let me = getpid()
  watchdog.arguments = [
    "-c",
    "while kill -0 \(me) 2>/dev/null && kill -0 \(server) 2>/dev/null; do sleep 0.5; done; "
      + "kill \(server) 2>/dev/null"
      + (killAfterSeconds.map { " && sleep \($0) && kill -9 \(server) 2>/dev/null" } ?? ""),
  ]
  watchdog.standardInput = FileHandle.nullDevice
  watchdog.standardOutput = FileHandle.nullDevice
  watchdog.standardError = FileHandle.nullDevice
  try? watchdog.run()
}

/// A thread-safe counter for unique names.
final class Counter: @unchecked Sendable {
  private var value = 0
  private let lock = NSLock()
  func next() -> Int {
    lock.lock()
    defer { lock.unlock() }
    value += 1
    return value
  }
}

/// Whether the test servers run with real-time scheduling: when this process may use SCHED_FIFO
/// (root, or an rtprio limit), asked by trying it on a probe thread; `LIVEMIC_TEST_REALTIME=0`
/// or `1` decides instead. With it, jackd runs `-R -P 70` and libjack runs every client's
/// process thread in real time too; PipeWire's daemons load `libpipewire-module-rt` at the same
/// priority. The choice is printed once.
enum TestRealtime {
  /// The priority of the servers' real-time threads (clients run just below it).
  static let priority: Int32 = 70

  static let enabled: Bool = {
    let forced = ProcessInfo.processInfo.environment["LIVEMIC_TEST_REALTIME"]
    let (allowed, reason): (Bool, String) =
      switch forced {
      case "0": (false, "LIVEMIC_TEST_REALTIME=0")
      case "1": (true, "LIVEMIC_TEST_REALTIME=1")
      default: probe()
      }
    print(
      "[servers] test servers run \(allowed ? "with" : "without") real-time scheduling "
        + "(\(allowed ? "-R -P \(priority)" : "--no-realtime")): \(reason)")
    return allowed
  }()

  static var jackdArguments: [String] { enabled ? ["-R", "-P", "\(priority)"] : ["--no-realtime"] }

  /// Tries SCHED_FIFO at `priority` on a thread of its own.
  private static func probe() -> (Bool, String) {
    let result = Mutex<Int32>(-1)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
      var parameters = sched_param(sched_priority: priority)
      result.withLock { $0 = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) }
      done.signal()
    }
    thread.start()
    done.wait()
    let code = result.withLock { $0 }
    return code == 0
      ? (true, "SCHED_FIFO \(priority) was granted to a probe thread")
      : (false, "SCHED_FIFO \(priority) was refused to a probe thread (\(String(cString: strerror(code))))")
  }
}
