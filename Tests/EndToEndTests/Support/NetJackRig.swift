import Foundation

/// A NetJACK2 pair on this one machine, over loopback: a master jackd (dummy backend) with the
/// `netmanager` internal client, and a slave jackd on the `net` backend that joins it. The
/// slave names the master's address explicitly (`-a 127.0.0.1`), so no multicast is needed and
/// no packet leaves the machine; the UDP port is derived from the test process's PID.
///
/// On the master the slave appears as a client (`slaveClient`) with ports `to_slave_N`
/// (what the slave's `system:capture_N` delivers) and `from_slave_N` (what the slave's
/// `system:playback_N` receives). Everything here is done with JACK's command-line tools in
/// child processes, so the test process's own libjack talks to one server only (the master).
final class NetJackRig {
  private static let counter = Counter()
  let masterName: String
  let slaveName: String
  /// The slave's client name on the master (never equal to a server's name).
  let slaveClient: String
  let udpPort: Int
  let period: Int
  let networkLatency: Int
  private var master = Process()
  private var slave = Process()
  private let folder: URL
  private var masterLog: URL { folder.appendingPathComponent("master.log") }
  private var slaveLog: URL { folder.appendingPathComponent("slave.log") }

  /// Why this machine cannot run the pair, or nil when it can: jackd2's `net` backend, the
  /// `netmanager` internal client and the tools must be installed.
  static let unavailableReason: String? = {
    let fm = FileManager.default
    for tool in ["jackd", "jack_load", "jack_unload", "jack_lsp"]
    where !fm.isExecutableFile(atPath: "/usr/bin/\(tool)") {
      return "/usr/bin/\(tool) is missing (Debian: jackd2)"
    }
    let libs = (try? fm.contentsOfDirectory(atPath: "/usr/lib")) ?? []
    let folders = ["/usr/lib/jack", "/usr/local/lib/jack"] + libs.map { "/usr/lib/\($0)/jack" }
    for module in ["jack_net.so", "netmanager.so"]
    where !folders.contains(where: { fm.fileExists(atPath: "\($0)/\(module)") }) {
      return "jackd2's \(module) (NetJACK2) is not installed"
    }
    return nil
  }()

  /// Starts the master, loads `netmanager` into it, starts the slave with `networkLatency`
  /// periods of network latency (the net backend's `-l`) and waits until they are joined.
  init(period: Int = JackServer.takePeriod, networkLatency: Int = 2) throws {
    let n = Self.counter.next()
    let id = "\(getpid())x\(n)"
    masterName = "lmnetmaster\(id)"
    slaveName = "lmnetslave\(id)"
    slaveClient = "lmnetlink\(id)"
    // 21000-29999: apart from the OSC tests' ports (17000-20999), since scripts/e2e runs suites
    // in several test processes at once.
    udpPort = 21000 + Int(getpid()) % 900 * 10 + n % 10
    self.period = period
    self.networkLatency = networkLatency
    folder = Paths.temporaryFolder("netjack")
    do {
      try startMasterUntilJoined(seconds: 15) {
        slave = try Self.launch(
          [
            "-n", slaveName,
          ] + TestRealtime.jackdArguments + [
            "-d", "net", "-a", "127.0.0.1", "-p", "\(udpPort)",
            "-n", slaveClient, "-C", "2", "-P", "2", "-l", "\(networkLatency)",
          ], log: slaveLog)
      }
    } catch {
      stop()
      throw error
    }
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(at: folder)
  }

  /// The last lines of both servers' logs, for failure messages.
  /// Lines in the servers' logs that say the link or a server lost a cycle (xruns, missing or
  /// late network packets): evidence, independent of a test's assertion, that a take was spoilt.
  var linkTroubles: Int {
    [masterLog, slaveLog].reduce(0) { count, url in
      let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
      return count
        + text.split(separator: "\n").filter {
          $0.contains("XRun") || $0.contains("missing") || $0.contains("late") || $0.contains("Packet")
        }.count
    }
  }

  var logs: String {
    func tail(_ url: URL) -> String {
      let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
      return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }
    return "master:\n\(tail(masterLog))\nslave:\n\(tail(slaveLog))"
  }

  /// Drops the link the hard way: the master is killed (SIGKILL, as a crash or a pulled cable
  /// would leave the slave), and this waits until the slave has noticed (its driver restarts
  /// and its `system` ports are gone while it waits for a master). In-process clients on the
  /// master must be closed first.
  func dropLink(waitForSlave: Bool = true) throws {
    if master.isRunning {
      kill(master.processIdentifier, SIGKILL)
      master.waitUntilExit()
    }
    guard waitForSlave else { return }
    let noticed = Self.poll(seconds: 15) {
      guard let ports = ports(on: slaveName) else { return false }
      return !ports.contains("system:capture_1")
    }
    guard noticed else { throw HarnessError("the slave did not notice the master's loss\n\(logs)") }
  }

  /// Starts the master again under the same name with `netmanager` and waits until the slave
  /// has joined it again.
  func restoreLink() throws {
    try startMasterUntilJoined(seconds: 20)
  }

  /// Ports of a server (`jack_lsp -s SERVER`), nil when the tool fails.
  func ports(on server: String, connections: Bool = false) -> [String]? {
    guard let (status, output) = Self.run("jack_lsp", ["-s", server] + (connections ? ["-c"] : [])),
      status == 0
    else { return nil }
    return output.split(separator: "\n").map(String.init)
  }

  /// The ports connected to `port` on `server`, from `jack_lsp -c` (indented lines follow
  /// their port).
  func connections(of port: String, on server: String) -> [String] {
    guard let lines = ports(on: server, connections: true) else { return [] }
    var result: [String] = []
    var inside = false
    for line in lines {
      if line.hasPrefix(" ") || line.hasPrefix("\t") {
        if inside { result.append(line.trimmingCharacters(in: .whitespaces)) }
      } else {
        inside = line == port
      }
    }
    return result
  }

  /// Stops both servers: `netmanager` is unloaded first (with it loaded, a SIGTERMed master
  /// waits about 5 s per network client), then the master and the slave get SIGTERM, and
  /// SIGKILL if they are still there after 5 s.
  func stop() {
    if master.isRunning {
      _ = Self.run("jack_unload", ["netmanager"], server: masterName, timeout: 5)
    }
    for process in [master, slave] where process.isRunning {
      kill(process.processIdentifier, SIGTERM)
      if !waitUntil(seconds: 5, { !process.isRunning }) {
        kill(process.processIdentifier, SIGKILL)
      }
      process.waitUntilExit()
    }
  }

  private func startMaster() throws {
    master = try Self.launch(
      ["-n", masterName] + TestRealtime.jackdArguments + ["-d", "dummy", "-r", "48000", "-p", "\(period)"],
      log: masterLog)
    guard Self.poll(seconds: 10, { ports(on: masterName) != nil }) else {
      throw HarnessError("the master jackd did not start: \(logs)")
    }
    let load = Self.run(
      "jack_load", ["-s", masterName, "netmanager", "-i", "-a 127.0.0.1 -p \(udpPort)"], timeout: 10)
    guard load?.status == 0 else {
      throw HarnessError("jack_load netmanager failed: \(load?.output ?? "timed out")\n\(logs)")
    }
  }

  /// What a jackd writes when its own bookkeeping broke: seen once on a loaded 2-core CI
  /// machine, where a master started under a waiting slave signalled the link client's
  /// semaphore after freeing it ("already deallocated") and from then on refused every new
  /// client, `jack_lsp` included ("Cannot create new client"). Evidence, independent of any
  /// test's assertion and of LiveMic (which runs on the slave), that the rig failed.
  private static let serverFaults = ["already deallocated", "Cannot create new client"]

  /// The first line of the master's log that shows it broke on its own, or nil.
  private var masterFault: String? {
    let text = (try? String(contentsOf: masterLog, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").first { line in Self.serverFaults.contains { line.contains($0) } }
      .map(String.init)
  }

  /// Starts the master (then runs `afterMaster`, once) and waits until the slave has joined it:
  /// the master has the slave's client ports and the slave has its system ports. A master that
  /// did not let the slave join and whose log shows it broke on its own (`serverFaults`) is
  /// killed and started again, as a retake (printed and in the take ledger); without that
  /// evidence a failed join fails the test.
  private func startMasterUntilJoined(seconds: Double, afterMaster: () throws -> Void = {}) throws {
    var first = true
    try retaking("NetJACK2: the master starts and the slave joins it") {
      if !first {
        kill(master.processIdentifier, SIGKILL)
        master.waitUntilExit()
      }
      try startMaster()
      if first { try afterMaster() }
      first = false
      let joined = Self.poll(seconds: seconds) {
        (ports(on: masterName)?.contains("\(slaveClient):from_slave_2") ?? false)
          && (ports(on: slaveName)?.contains("system:playback_2") ?? false)
      }
      if joined { return Take((), spoilt: nil) }
      guard let fault = masterFault else {
        throw HarnessError("the NetJACK2 slave did not join the master within \(seconds) s\n\(logs)")
      }
      return Take((), spoilt: "the master jackd broke on its own (its log: \"\(fault)\")")
    }
  }

  /// Starts jackd with `arguments`, its output into `log`, with a watchdog that stops it if
  /// this test process dies (SIGTERM, then SIGKILL 3 s later).
  private static func launch(_ arguments: [String], log: URL) throws -> Process {
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
    process.arguments = arguments
    process.environment = environment(server: nil)
    process.standardOutput = try FileHandle(forWritingTo: log)
    process.standardError = try FileHandle(forWritingTo: log)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    startWatchdog(server: process.processIdentifier, killAfterSeconds: 3)
    return process
  }

  /// Polls `condition` (which runs a tool) every 100 ms until it holds or `seconds` pass.
  static func poll(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      usleep(100_000)
    }
    return condition()
  }

  private static func environment(server: String?) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["JACK_NO_START_SERVER"] = "1"
    if let server { env["JACK_DEFAULT_SERVER"] = server }
    return env
  }

  /// Runs `/usr/bin/TOOL ARGS` (with `JACK_DEFAULT_SERVER=server` when given): its exit
  /// status and output, or nil when it did not finish within `timeout` seconds (it is killed).
  @discardableResult
  static func run(_ tool: String, _ arguments: [String], server: String? = nil, timeout: Double = 5)
    -> (status: Int32, output: String)?
  {
    let output = FileManager.default.temporaryDirectory
      .appendingPathComponent("livemic-netjack-\(getpid())-\(UUID().uuidString.prefix(8)).txt")
    _ = FileManager.default.createFile(atPath: output.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: output) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/\(tool)")
    process.arguments = arguments
    process.environment = environment(server: server)
    process.standardInput = FileHandle.nullDevice
    guard let handle = try? FileHandle(forWritingTo: output) else { return nil }
    process.standardOutput = handle
    process.standardError = handle
    guard (try? process.run()) != nil else { return nil }
    if !waitUntil(seconds: timeout, { !process.isRunning }) {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      return nil
    }
    process.waitUntilExit()
    return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
  }
}
