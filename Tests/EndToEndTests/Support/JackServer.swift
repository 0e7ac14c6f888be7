import CJack
import Foundation

/// A private jackd (dummy backend, no real-time scheduling) for one test, stopped by PID.
/// Its name never equals a client's name (jackd 1.9.21 deletes its own socket then).
final class JackServer {
  private static let counter = Counter()
  let name: String
  let sampleRate: Int
  private var process = Process()
  private let log: URL

  init(period: Int = 64, sampleRate: Int = 48000) throws {
    name = "lmtestsrv\(getpid())x\(Self.counter.next())"
    self.sampleRate = sampleRate
    log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).log")
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/jackd") else {
      throw HarnessError("/usr/bin/jackd is missing: install jackd2 (scripts/test does)")
    }
    try launch(period: period, sampleRate: sampleRate)
  }

  /// Kills jackd with SIGKILL (as a crash would) and starts a new one under the same name,
  /// possibly with another period or rate.
  func killAndRestart(period: Int = 64, sampleRate: Int? = nil) throws {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
    try launch(period: period, sampleRate: sampleRate ?? self.sampleRate)
  }

  private func launch(period: Int, sampleRate: Int) throws {
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
    process.arguments = [
      "-n", name, "--no-realtime", "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)",
    ]
    process.standardOutput = try FileHandle(forWritingTo: log)
    process.standardError = try FileHandle(forWritingTo: log)
    do { try process.run() } catch {
      throw HarnessError("cannot start /usr/bin/jackd (install jackd2: scripts/test does): \(error)")
    }
    // A watchdog stops jackd if this test process dies, so a crashed run never leaves servers
    // behind (jackd allows only a few at once); it exits by itself once jackd is gone.
    let watchdog = Process()
    watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
    let (me, server) = (getpid(), process.processIdentifier)
    watchdog.arguments = [
      "-c",
      "while kill -0 \(me) 2>/dev/null && kill -0 \(server) 2>/dev/null; do sleep 0.5; done; "
        + "kill \(server) 2>/dev/null",
    ]
    watchdog.standardInput = FileHandle.nullDevice
    watchdog.standardOutput = FileHandle.nullDevice
    watchdog.standardError = FileHandle.nullDevice
    try? watchdog.run()
    // Ready when a client can open without starting a server.
    let name = self.name
    let ready = waitUntil(seconds: 10) {
      var status = jack_status_t(rawValue: 0)
      guard let c = livemic_client_open("lmprobe", JackNoStartServer, name, &status) else { return false }
      jack_client_close(c)
      return true
    }
    if !ready {
      stop()
      let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
      throw HarnessError("jackd '\(name)' did not accept clients within 10 s: \(text)")
    }
  }

  deinit { stop() }

  func stop() {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGTERM)
    if !waitUntil(seconds: 5, { !process.isRunning }) {
      kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    try? FileManager.default.removeItem(at: log)
  }
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
