import CJack
import DSP
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// LiveMic's JACK client: opens it, registers the ports, installs the callbacks, activates,
/// connects and closes. None of this runs on the audio thread.
///
/// Thread: the thread that created it (the supervisor), except the latency callback, which
/// libjack calls on its own non-real-time thread (on PipeWire it only asks the supervisor to
/// set the ranges: see `applyRequestedLatency()`).
public final class JackClient: @unchecked Sendable {
  let handle: OpaquePointer
  /// The name JACK gave the client (it may differ from the one asked for).
  public let name: String
  /// The server's name as asked for (nil: libjack's default).
  public let serverName: String?
  /// Sample rate at open.
  public let sampleRate: Double
  /// Buffer size at open, in frames.
  public let bufferFrames: Int
  /// What the callbacks report.
  public let events: EngineEvents
  private(set) var inputPorts: [OpaquePointer] = []
  private(set) var outputPorts: [OpaquePointer] = []
  private(set) var midiPort: OpaquePointer?
  private(set) var musicPorts: [OpaquePointer] = []
  private(set) var monitorPorts: [OpaquePointer] = []
  /// Pretty-names still to set once the client is active: on PipeWire, all of them. Its libjack
  /// may refuse metadata for a port the daemon has not exported yet, and a client already running
  /// (qjackctl) drops a name that reaches it before the port does; set again unchanged, the
  /// daemon sends it no second time. After activation the daemon has exported the ports.
  private var pendingPrettyNames: [(port: OpaquePointer, name: String)] = []
  /// Whether the libjack in use is PipeWire's. There the latency callback leaves setting the
  /// ranges to the supervisor: PipeWire's libjack (0.3.65) calls it on its loop thread with the
  /// loop unlocked, and a range set there goes to the daemon at once, unlocked, racing any call
  /// the supervisor makes at that moment (it aborted LiveMic with an assertion in
  /// module-protocol-native.c). Set from any other thread, libjack queues the update onto its
  /// loop. Pretty-names wait for activation there too (`pendingPrettyNames`).
  private let onPipeWire: Bool
  /// Set by the latency callback on PipeWire; cleared by `applyRequestedLatency()`.
  private let latencyRequested = Atomic<Bool>(false)
  /// The audio thread's state, once started.
  public private(set) var state: ProcessState?
  private var active = false

  /// Opens a client on a running server (never starts one). Its callbacks signal `wake`.
  public init(name: String, server: String?, wake: DispatchSemaphore = DispatchSemaphore(value: 0))
    throws(EngineError)
  {
    events = EngineEvents(wake: wake)
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open(name, JackNoStartServer, server, &status) else {
      throw .serverUnavailable(server: server ?? Self.defaultServerName, status: status.rawValue)
    }
    handle = h
    events.clientHandle = h
    self.name = String(cString: jack_get_client_name(h))
    serverName = server
    sampleRate = Double(jack_get_sample_rate(h))
    bufferFrames = Int(jack_get_buffer_size(h))
    events.sampleRate.store(UInt32(sampleRate), ordering: .relaxed)
    events.bufferFrames.store(UInt32(bufferFrames), ordering: .relaxed)
    // PipeWire's libjack says "3.0.0.0 (using PipeWire 0.3.65)".
    onPipeWire = jack_get_version_string().map { String(cString: $0).contains("PipeWire") } ?? false
    daemonConnection = pipeWireSocketPath.map(DaemonConnection.init(path:))
  }

  deinit { close() }

  /// The real-time priority of this client's process thread (nil when it does not run in real
  /// time).
  public var realtimePriority: Int32? {
    let priority = jack_client_real_time_priority(handle)
    return priority > 0 ? priority : nil
  }

  /// The server name libjack uses when none is given.
  public static var defaultServerName: String {
    getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? "default"
  }

  /// Registers `in_1`(, `in_2`), `out_1`, `out_2` (with `music`, `music_1`, `music_2`; with
  /// `monitor`, `monitor_1`, `monitor_2`) with readable pretty-names.
  public func registerPorts(inputCount: Int, music: Bool = false, monitor: Bool = false) throws(EngineError) {
    for i in 1...inputCount {
      inputPorts.append(
        try register("in_\(i)", flags: JackPortIsInput, pretty: "LiveMic input \(i)"))
    }
    for (i, side) in [(1, "left"), (2, "right")] {
      outputPorts.append(
        try register("out_\(i)", flags: JackPortIsOutput, pretty: "LiveMic output \(i) (\(side))"))
    }
    if music {
      for (i, side) in [(1, "left"), (2, "right")] {
        musicPorts.append(
          try register("music_\(i)", flags: JackPortIsInput, pretty: "LiveMic music \(i) (\(side))"))
      }
    }
    if monitor {
      for (i, side) in [(1, "left"), (2, "right")] {
        monitorPorts.append(
          try register("monitor_\(i)", flags: JackPortIsOutput, pretty: "LiveMic monitor \(i) (\(side))"))
      }
    }
    midiPort = try register(
      "midi_in", flags: JackPortIsInput, pretty: "LiveMic MIDI control", type: "8 bit raw midi")
  }

  private func register(
    _ short: String, flags: JackPortFlags, pretty: String, type: String = "32 bit float mono audio"
  ) throws(EngineError) -> OpaquePointer {
    guard
      let port = jack_port_register(
        handle, short, type, UInt(flags.rawValue), 0)
    else { throw .portRegistration("\(name):\(short)") }
    if onPipeWire || !setPrettyName(port, pretty) { pendingPrettyNames.append((port, pretty)) }
    return port
  }

  /// Sets a port's pretty-name metadata; false when libjack refused it.
  private func setPrettyName(_ port: OpaquePointer, _ pretty: String) -> Bool {
    jack_set_property(handle, jack_port_uuid(port), livemic_pretty_name_key(), pretty, "text/plain") == 0
  }

  /// Installs the callbacks with `chain` (prepared and warmed at `sampleRate`) and activates.
  /// `taps` feeds the recordings and streams (it may come from an earlier client). `muted`: the
  /// output ramp starts at silence and stays there; `inputMuted`: the microphone starts muted.
  public func start(
    chain: VoiceChain, muted: Bool = false, inputMuted: Bool = false, taps: TapTable = TapTable()
  ) throws(EngineError) -> ProcessState {
    let state = ProcessState(
      inputs: inputPorts, outputs: outputPorts, midiIn: midiPort, chain: chain, sampleRate: sampleRate,
      taps: taps, musicInputs: musicPorts, monitorOutputs: monitorPorts, client: handle)
    if muted { state.ramp.fadeOut() }
    if inputMuted { state.startInputMuted() }
    self.state = state
    events.processState = state
    events.chainLatencyFrames.store(UInt32(chain.latencyFrames), ordering: .relaxed)
    let stateContext = Unmanaged.passUnretained(state).toOpaque()
    let eventsContext = Unmanaged.passUnretained(events).toOpaque()
    let selfContext = Unmanaged.passUnretained(self).toOpaque()
    jack_set_process_callback(handle, { livemicProcess(frames: $0, context: $1) }, stateContext)
    // Flush-to-zero and denormals-are-zero on the process thread, before its first cycle.
    jack_set_thread_init_callback(handle, { _ in _ = livemic_flush_denormals() }, nil)
    jack_on_info_shutdown(
      handle, { livemicShutdown(code: $0, reason: $1, context: $2) }, eventsContext)
    // jackd calls only the callback above when both are set; PipeWire's libjack (0.3.65) calls
    // only this one when its daemon goes away.
    jack_on_shutdown(handle, { livemicShutdown(code: JackFailure, reason: nil, context: $0) }, eventsContext)
    jack_set_xrun_callback(handle, { livemicXrun(context: $0) }, eventsContext)
    jack_set_buffer_size_callback(
      handle, { livemicBufferSize(frames: $0, context: $1) }, eventsContext)
    jack_set_sample_rate_callback(
      handle, { livemicSampleRate(rate: $0, context: $1) }, eventsContext)
    jack_set_freewheel_callback(handle, { livemicFreewheel(starting: $0, context: $1) }, eventsContext)
    jack_set_port_registration_callback(
      handle, { livemicPortRegistration(id: $0, registered: $1, context: $2) }, eventsContext)
    jack_set_port_connect_callback(
      handle, { _, _, _, context in livemicGraphChanged(context: context) }, eventsContext)
    jack_set_client_registration_callback(
      handle, { _, _, context in livemicClientRegistration(context: context) }, eventsContext)
    jack_set_graph_order_callback(handle, { livemicGraphOrder(context: $0) }, eventsContext)
    jack_set_latency_callback(
      handle,
      { mode, context in
        guard let context else { return }
        Unmanaged<JackClient>.fromOpaque(context).takeUnretainedValue().latencyCallback(mode: mode)
      }, selfContext)
    state.warm(frames: bufferFrames)
    guard jack_activate(handle) == 0 else { throw .activation }
    active = true
    // Activation waited for the daemon, so the ports are known to libjack by now.
    pendingPrettyNames = pendingPrettyNames.filter { !setPrettyName($0.port, $0.name) }
    return state
  }

  /// What libjack's latency callback does: set the ranges, or (on PipeWire) ask the supervisor to.
  private func latencyCallback(mode: jack_latency_callback_mode_t) {
    guard onPipeWire else { return updateLatency(mode: mode) }
    latencyRequested.store(true, ordering: .releasing)
    events.wake.signal()
  }

  /// Sets the latency ranges the latency callback asked for (PipeWire only; else nothing is
  /// pending). Thread: the supervisor, once per wake.
  public func applyRequestedLatency() {
    guard latencyRequested.exchange(false, ordering: .acquiringAndReleasing) else { return }
    updateLatency(mode: JackCaptureLatency)
    updateLatency(mode: JackPlaybackLatency)
  }

  /// Propagates latency through the client: whatever reaches the inputs plus the chain's
  /// latency leaves the outputs (and the reverse for playback latency).
  private func updateLatency(mode: jack_latency_callback_mode_t) {
    let added = jack_nframes_t(events.chainLatencyFrames.load(ordering: .relaxed))
    /// The range over `ports` in `mode`, plus `frames`; nil without ports.
    func range(of ports: [OpaquePointer], plus frames: jack_nframes_t) -> jack_latency_range_t? {
      guard !ports.isEmpty else { return nil }
      var range = jack_latency_range_t(min: UInt32.max, max: 0)
      for port in ports {
        var r = jack_latency_range_t()
        jack_port_get_latency_range(port, mode, &r)
        range.min = min(range.min, r.min)
        range.max = max(range.max, r.max)
      }
      return jack_latency_range_t(min: range.min + frames, max: range.max + frames)
    }
    // Only changed ranges are set: each set is an update the server propagates to every peer.
    func set(_ ports: [OpaquePointer], _ range: jack_latency_range_t) {
      var r = range
      for port in ports {
        var now = jack_latency_range_t()
        jack_port_get_latency_range(port, mode, &now)
        if now.min != r.min || now.max != r.max { jack_port_set_latency_range(port, mode, &r) }
      }
    }
    // The voice path (in_N → chain → out_N and the monitor's voice) adds the chain's latency;
    // the music path (music_N → out_N and the monitor) adds none.
    let outputs = outputPorts + monitorPorts
    if mode == JackCaptureLatency {
      let voice = range(of: inputPorts, plus: added) ?? jack_latency_range_t(min: added, max: added)
      let music = range(of: musicPorts, plus: 0)
      let both = music.map { jack_latency_range_t(min: min(voice.min, $0.min), max: max(voice.max, $0.max)) }
      set(outputs, both ?? voice)
    } else {
      let downstream = range(of: outputs, plus: 0) ?? jack_latency_range_t(min: 0, max: 0)
      set(inputPorts, jack_latency_range_t(min: downstream.min + added, max: downstream.max + added))
      set(musicPorts, downstream)
    }
  }

  /// The full names of this client's ports (`livemic:in_1`, …).
  public var inputPortNames: [String] { inputPorts.map { String(cString: jack_port_name($0)) } }
  public var outputPortNames: [String] { outputPorts.map { String(cString: jack_port_name($0)) } }
  /// `monitor_1`, `monitor_2` with `--monitor`, else empty.
  public var monitorPortNames: [String] { monitorPorts.map { String(cString: jack_port_name($0)) } }
  /// `music_1`, `music_2` with `--music`, else empty.
  public var musicPortNames: [String] { musicPorts.map { String(cString: jack_port_name($0)) } }
  /// Every port of this client and whether it is an output: the inputs, music, `midi_in`, the
  /// outputs and the monitor.
  public var allPortNames: [(name: String, output: Bool)] {
    let midi = midiPort.map { [String(cString: jack_port_name($0))] } ?? []
    let inputs = inputPortNames + musicPortNames + midi
    return inputs.map { ($0, false) } + (outputPortNames + monitorPortNames).map { ($0, true) }
  }

  /// Physical ports: capture ports (`JackPortIsOutput`) or playback ports (`JackPortIsInput`).
  public func physicalPorts(capture: Bool) -> [String] {
    let flags = JackPortIsPhysical.rawValue | (capture ? JackPortIsOutput : JackPortIsInput).rawValue
    return Self.names(jack_get_ports(handle, nil, "32 bit float mono audio", UInt(flags)))
  }

  /// The names in a NULL-terminated list that libjack allocated, which is then freed.
  private static func names(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
    guard let list else { return [] }
    defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
    var names: [String] = []
    var i = 0
    while let p = list[i] {
      names.append(String(cString: p))
      i += 1
    }
    return names
  }

  /// Audio ports whose full names match `pattern` (a POSIX extended regular expression, as
  /// `jack_get_ports` takes), that receive audio (`playback`: input ports, where LiveMic's
  /// outputs go) or send it, in JACK's order.
  public func ports(matching pattern: String, playback: Bool) -> [String] {
    let flags = (playback ? JackPortIsInput : JackPortIsOutput).rawValue
    return Self.names(jack_get_ports(handle, pattern, "32 bit float mono audio", UInt(flags)))
      .filter { !$0.hasPrefix(name + ":") }
  }

  /// Disconnects `source` from `destination`; a missing connection is fine.
  public func disconnect(_ source: String, _ destination: String) {
    _ = jack_disconnect(handle, source, destination)
  }

  /// Connects `source` to `destination` (full port names); an existing connection is fine.
  public func connect(_ source: String, _ destination: String) throws(EngineError) {
    guard jack_port_by_name(handle, source) != nil else { throw .noSuchPort(source) }
    guard jack_port_by_name(handle, destination) != nil else { throw .noSuchPort(destination) }
    let code = jack_connect(handle, source, destination)
    guard code == 0 || code == EEXIST else {
      throw .connection(from: source, to: destination, code: code)
    }
  }

  /// Tells JACK the chain's latency changed (a plugin reported a new one): the latency callback
  /// adds the new value and JACK recomputes every port's latency.
  public func setChainLatency(frames: Int) {
    events.chainLatencyFrames.store(UInt32(max(frames, 0)), ordering: .relaxed)
    jack_recompute_total_latencies(handle)
  }

  /// JACK's DSP load estimate in percent.
  public var cpuLoadPercent: Float { jack_cpu_load(handle) }

  /// Whether a port of that full name exists now.
  public func portExists(_ port: String) -> Bool { jack_port_by_name(handle, port) != nil }

  /// The ports connected to `port` (full names).
  public func connections(of port: String) -> [String] {
    guard let p = jack_port_by_name(handle, port) else { return [] }
    return Self.names(jack_port_get_all_connections(handle, p))
  }

  /// A port's latency range for `capture` (true) or playback latency.
  public func latencyRange(of port: String, capture: Bool) -> ClosedRange<Int> {
    guard let p = jack_port_by_name(handle, port) else { return 0...0 }
    var r = jack_latency_range_t()
    jack_port_get_latency_range(p, capture ? JackCaptureLatency : JackPlaybackLatency, &r)
    return Int(r.min)...Int(max(r.min, r.max))
  }

  /// Activates again after `deactivate` (the `suspend` mute mode); connections must be made
  /// again by the caller (JACK drops them on deactivation).
  public func reactivate() throws(EngineError) {
    guard !active else { return }
    guard jack_activate(handle) == 0 else { throw .activation }
    active = true
  }

  /// Whether the server is still the one this client opened. PipeWire's libjack (0.3.65) tells
  /// a deactivated client nothing when its daemon goes away (no shutdown callback), and calls
  /// the shutdown callback of an active one for any error the daemon reports, not only the
  /// daemon's loss (`daemonStillThere`); no libjack call is a side-effect-free round trip there
  /// (a port alias, tried first, works once: PipeWire never removes it again). So on PipeWire the
  /// client connects to the daemon's socket itself when it opens (`PIPEWIRE_RUNTIME_DIR` or
  /// `XDG_RUNTIME_DIR`, named after the server, or `PIPEWIRE_REMOTE`, or `pipewire-0`) and holds
  /// the connection: hung up means the daemon this client talks to is gone, even when a new one
  /// already listens at the same path. jackd reports the loss to deactivated clients, so there
  /// (and while active, or when no socket path is known) this is always true. Thread: the
  /// supervisor.
  public func serverAnswers() -> Bool {
    guard onPipeWire, !active, let daemonConnection else { return true }
    return daemonConnection.answers()
  }

  /// Whether the PipeWire daemon this client opened still holds the connection made at the
  /// open: after a shutdown callback, false on jackd (where the callback means the loss) and
  /// when no socket path is known. Thread: the supervisor.
  public var daemonStillThere: Bool {
    guard onPipeWire, let daemonConnection else { return false }
    return daemonConnection.answers()
  }

  /// The PipeWire daemon's socket path.
  private lazy var pipeWireSocketPath: String? = {
    guard onPipeWire else { return nil }
    let variable = { (name: String) in getenv(name).map { String(cString: $0) } }
    guard let folder = variable("PIPEWIRE_RUNTIME_DIR") ?? variable("XDG_RUNTIME_DIR") else { return nil }
    let remote =
      serverName.flatMap { $0.isEmpty || $0 == "default" ? nil : $0 } ?? variable("PIPEWIRE_REMOTE")
      ?? "pipewire-0"
    return remote.hasPrefix("/") ? remote : folder + "/" + remote
  }()
  /// Held from the open on PipeWire, for `serverAnswers` and `daemonStillThere`.
  private var daemonConnection: DaemonConnection?

  /// Deactivates (the process callback stops being called).
  public func deactivate() {
    if active {
      jack_deactivate(handle)
      active = false
    }
  }

  private var closed = false
  /// Deactivates and closes the client. Safe to call twice; also right after a server loss.
  public func close() {
    guard !closed else { return }
    closed = true
    if !events.serverLost.load(ordering: .acquiring) { deactivate() }
    jack_client_close(handle)
  }
}
