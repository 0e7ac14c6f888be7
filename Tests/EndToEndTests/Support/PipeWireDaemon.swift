import CJack
import Foundation
import Testing

/// Which JACK implementation the end-to-end tests run on: jackd2's dummy backend (the default),
/// or PipeWire's libjack against a private `pipewire` daemon when `LIVEMIC_TEST_SERVER=pipewire`
/// (the test process must then run under `pw-jack`; scripts/test does that for a second run).
enum TestBackend {
  static let isPipeWire = ProcessInfo.processInfo.environment["LIVEMIC_TEST_SERVER"] == "pipewire"

  /// Why a measurement that one dropped cycle spoils is not run on PipeWire: on jackd such a
  /// cycle is an xrun and the test measures again; PipeWire 0.3.65's dummy driver reports none.
  static let unreportedDropouts =
    "a single dropped cycle spoils this measurement (a click, a level off by more than 0.05 dB);"
    + " on jackd that is an xrun and the test measures again, but PipeWire 0.3.65's dummy driver"
    + " reports no xruns, so the test cannot tell a dropout from a LiveMic fault"

  /// Why a test that stalls LiveMic by holding its generator's cycle is not run on PipeWire:
  /// jackd waits for the held client, PipeWire's scheduler ran LiveMic past it under --load.
  static let heldClientStallsOnJackdOnly =
    "a held upstream client stalls LiveMic deterministically on jackd only: PipeWire's scheduler"
    + " ran LiveMic past it under --load (the jackd run covers it)"

  /// The libjack this process loaded (from /proc/self/maps, read line by line: Foundation reads
  /// only its first page), or "?".
  static var libjackPath: String {
    guard let file = fopen("/proc/self/maps", "r") else { return "?" }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 4096)
    while fgets(&line, Int32(line.count), file) != nil {
      let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
      let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      if text.contains("/libjack.so"), let path = text.split(separator: " ").last { return String(path) }
    }
    return "?"
  }
}

extension Trait where Self == ConditionTrait {
  /// Runs the test on jackd2 only: on PipeWire it is skipped, and the reason says why.
  static func notOnPipeWire(_ reason: String) -> Self {
    .enabled(if: !TestBackend.isPipeWire, Comment(rawValue: "not on PipeWire: " + reason))
  }
}

/// The private PipeWire setup of one test process: a runtime folder of its own (mode 0700,
/// removed at exit) that holds every daemon's socket, named after its JACK server name.
/// PipeWire's libjack turns a JACK server name into the remote (socket) name, and
/// `PIPEWIRE_RUNTIME_DIR` takes precedence over `XDG_RUNTIME_DIR` (which the tests set for
/// LiveMic's control socket), so neither this process nor a child can reach a user's PipeWire.
enum PipeWireRuntime {
  static let folder: URL = {
    let url = Paths.temporaryFolder("pwrt")
    chmod(url.path, 0o700)
    setenv("PIPEWIRE_RUNTIME_DIR", url.path, 1)
    // Nothing from the caller's environment chooses another remote, quantum or latency.
    for name in ["PIPEWIRE_REMOTE", "PIPEWIRE_QUANTUM", "PIPEWIRE_LATENCY", "PIPEWIRE_PROPS"] {
      unsetenv(name)
    }
    atexit { try? FileManager.default.removeItem(at: PipeWireRuntime.folder) }
    return url
  }()

  /// What a child process gets so that it reaches this process's daemons only.
  static func apply(to env: inout [String: String]) {
    env["PIPEWIRE_RUNTIME_DIR"] = folder.path
    for name in ["PIPEWIRE_REMOTE", "PIPEWIRE_QUANTUM", "PIPEWIRE_LATENCY", "PIPEWIRE_PROPS"] {
      env[name] = nil
    }
  }

  /// Throws unless this process loaded PipeWire's libjack (it runs under `pw-jack`).
  static func checkLibjack() throws {
    let path = TestBackend.libjackPath
    guard path.contains("pipewire") else {
      throw HarnessError(
        "LIVEMIC_TEST_SERVER=pipewire needs PipeWire's libjack in this process, but libjack is \(path): "
          + "run the tests under pw-jack (scripts/test does)")
    }
  }
}

/// How to start a private `pipewire` daemon as a JACK server: no session manager, no devices,
/// a dummy driver at a fixed rate and quantum (the JACK sample rate and buffer size), its socket
/// named `name` in `PipeWireRuntime.folder`.
enum PipeWireDaemon {
  /// Writes the daemon's configuration into `folder` and returns the executable, its arguments
  /// and its environment.
  static func command(name: String, period: Int, sampleRate: Int, folder: URL) throws -> (
    URL, [String], [String: String]
  ) {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/pipewire") else {
      throw HarnessError("/usr/bin/pipewire is missing: install pipewire pipewire-bin (scripts/setup --test)")
    }
    try PipeWireRuntime.checkLibjack()
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try configuration(name: name, period: period, sampleRate: sampleRate)
      .write(to: folder.appendingPathComponent("livemic-test.conf"), atomically: true, encoding: .utf8)
    var env = ProcessInfo.processInfo.environment
    PipeWireRuntime.apply(to: &env)
    env["PIPEWIRE_CONFIG_DIR"] = folder.path
    env["DBUS_SESSION_BUS_ADDRESS"] = nil
    env["PIPEWIRE_DEBUG"] = nil
    return (URL(fileURLWithPath: "/usr/bin/pipewire"), ["-c", "livemic-test.conf"], env)
  }

  /// With real-time test servers (`TestRealtime`), the module that gives the daemon's data
  /// threads SCHED_FIFO at the jackd servers' priority (directly: no RTKit, no D-Bus here).
  static var realtimeModule: String {
    guard TestRealtime.enabled else { return "" }
    return """
          { name = libpipewire-module-rt
              args = { rt.prio = \(TestRealtime.priority) nice.level = -11 rt.time.soft = -1 rt.time.hard = -1 }
              flags = [ ifexists nofail ]
          }
      """
  }

  /// The daemon's whole configuration (PipeWire 0.3.65's pipewire.conf, cut to what a JACK
  /// graph needs): `core.name` is the socket name, the clock is forced to the requested rate
  /// and quantum, and a `default` metadata object holds the JACK port metadata.
  static func configuration(name: String, period: Int, sampleRate: Int) -> String {
    """
    context.properties = {
        core.daemon = true
        core.name = \(name)
        default.clock.rate = \(sampleRate)
        default.clock.allowed-rates = [ \(sampleRate) ]
        default.clock.quantum = \(period)
        default.clock.min-quantum = \(period)
        default.clock.max-quantum = \(period)
        default.clock.force-quantum = \(period)
        default.clock.force-rate = \(sampleRate)
        mem.allow-mlock = false
        support.dbus = false
        log.level = 2
    }
    context.spa-libs = {
        support.* = support/libspa-support
    }
    context.modules = [
    \(realtimeModule)
        { name = libpipewire-module-protocol-native }
        { name = libpipewire-module-metadata }
        { name = libpipewire-module-spa-node-factory }
        { name = libpipewire-module-client-node }
        { name = libpipewire-module-access args = { } }
        { name = libpipewire-module-adapter }
        { name = libpipewire-module-link-factory }
    ]
    context.objects = [
        { factory = spa-node-factory
            args = {
                factory.name = support.node.driver
                node.name = Dummy-Driver
                node.group = pipewire.dummy
                priority.driver = 20000
            }
        }
        { factory = spa-node-factory
            args = {
                factory.name = support.node.driver
                node.name = Freewheel-Driver
                priority.driver = 19000
                node.group = pipewire.freewheel
                node.freewheel = true
            }
        }
        { factory = metadata args = { metadata.name = default } }
    ]

    """
  }
}

/// The physical ports jackd's dummy backend has and a bare PipeWire graph lacks: an in-process
/// client named `system` whose ports carry JackPortIsPhysical (PipeWire's libjack publishes the
/// flag as `port.physical`), `capture_1`, `capture_2` (silent outputs) and `playback_1`,
/// `playback_2` (inputs), so LiveMic's default connections find the same ports on both servers.
final class SystemPorts {
  private let handle: OpaquePointer
  private var outputs: [OpaquePointer] = []
  /// The outputs as pointers for the process callback (a debug build's array iteration
  /// allocates, which a real-time thread must not).
  private let outputList = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: 2)

  init(server: String) throws {
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open("system", JackNoStartServer, server, &status) else {
      throw HarnessError("cannot open the 'system' client on '\(server)' (status \(status.rawValue))")
    }
    handle = h
    let physical = JackPortIsPhysical.rawValue | JackPortIsTerminal.rawValue
    for i in 1...2 {
      guard
        let port = jack_port_register(
          h, "capture_\(i)", "32 bit float mono audio", UInt(JackPortIsOutput.rawValue | physical), 0)
      else { throw HarnessError("the 'system' client on '\(server)' cannot register capture_\(i)") }
      outputs.append(port)
      outputList[i - 1] = outputs[i - 1]
    }
    for i in 1...2 {
      _ = jack_port_register(
        h, "playback_\(i)", "32 bit float mono audio", UInt(JackPortIsInput.rawValue | physical), 0)
    }
    jack_set_process_callback(
      h,
      { frames, context in
        guard let context else { return 0 }
        let ports = Unmanaged<SystemPorts>.fromOpaque(context).takeUnretainedValue().outputList
        for i in 0..<2 {
          jack_port_get_buffer(ports[i], frames)?.initializeMemory(
            as: Float.self, repeating: 0, count: Int(frames))
        }
        return 0
      }, Unmanaged.passUnretained(self).toOpaque())
    guard jack_activate(h) == 0 else { throw HarnessError("cannot activate the 'system' client") }
  }

  private var closed = false
  /// Closes the client (also after its server died).
  func close() {
    guard !closed else { return }
    closed = true
    jack_client_close(handle)
  }

  deinit {
    close()
    outputList.deallocate()
  }
}
