import DSP
import Dispatch
import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets
import Synchronization

/// Why a live session could not start. Each message is one sentence.
public enum SessionError: CodedError {
  case preset(PresetError)
  case override(OverrideError)
  case chain(ChainError)
  case engine(EngineError)
  case plugin(id: String, PluginError)
  case events(path: String)
  case control(path: String, reason: String)
  case osc(reason: String)
  case web(reason: String)
  case autoload(AutoloadError)

  public var description: String {
    switch self {
    case .preset(let e): return e.description
    case .override(let e): return e.description
    case .chain(let e): return e.description
    case .engine(let e): return e.description
    case .plugin(let id, let e): return "plugin stage '\(id)': \(e.description)"
    case .events(let path): return "cannot write the event stream to '\(path)'"
    case .control(let path, let reason): return "cannot serve the control socket '\(path)': \(reason)"
    case .osc(let reason): return "cannot serve OSC: \(reason)"
    case .web(let reason): return "cannot serve the web remote: \(reason)"
    case .autoload(let e): return e.description
    }
  }

  public var code: String {
    switch self {
    case .preset(let e): return e.code
    case .override(let e): return e.code
    case .chain(let e): return e.code
    case .engine(let e): return e.code
    case .plugin(_, let e): return e.code
    case .events: return "session.events-unwritable"
    case .control: return "session.control-socket"
    case .osc: return "session.osc"
    case .web: return "session.web"
    case .autoload(let e): return e.code
    }
  }
}

extension SessionError {
  /// The session's error for a chain that cannot be built.
  init(_ error: BuildError) {
    switch error {
    case .chain(let e): self = .chain(e)
    case .plugin(let id, let e): self = .plugin(id: id, e)
    }
  }
}

/// The supervisor of one live run: opens the client, builds and warms the chain, starts audio,
/// connects, then watches JACK's events until a signal or a server loss. Never real-time.
public final class LiveSession: @unchecked Sendable {
  var options: RunOptions
  /// What SIGINT/SIGTERM, SIGHUP and SIGUSR1 asked for.
  let signals = SignalFlags()
  /// Wakes the supervisor: JACK's callbacks (of every client it opens) and the signal handlers.
  let wake: DispatchSemaphore
  /// The one state: the server link, the user's mute mode, the route's mute
  /// (`SupervisorState`; changed only through `transition`).
  var supervisorState = SupervisorState()
  /// While a `suspend` mute fades out: when the supervisor gives up waiting for silence. The
  /// client stays active (its connections live) until the fade ends or this passes; the loop
  /// then deactivates it (`finishSuspend`), so no door waits for the fade.
  var suspendFadeDeadline: DispatchTime?
  /// The chain running (or to run after a reconnection), its preset and MIDI mappings; set
  /// once the first chain is built in `run`.
  var running: RunningChain!
  /// The connections, the routes, the autoload rules and the graph's settling.
  let routing = Routing()
  /// The control socket, OSC and the meters they serve.
  let doors = Doors()
  /// The NSM session manager, the session it opened and the connections saved in it.
  var nsm: NsmSession?
  /// The `learn` requests waiting for a MIDI controller to move.
  let midiLearn = MidiLearn()
  /// The structured event stream (`--events`), also fanned out to the subscribers.
  let stream: EventStream
  /// The recordings, the stream and the loudness meter, with the tap table they share.
  let recorder: Recorder

  // The parts' state the supervisor's code reads most, by the names it has always had.
  var route: RouteController? {
    get { routing.output }
    set { routing.output = newValue }
  }
  var inputRoute: RouteController? {
    get { routing.input }
    set { routing.input = newValue }
  }
  var book: ConnectionBook { routing.book }
  var control: ControlServer? {
    get { doors.control }
    set { doors.control = newValue }
  }

  /// A session for `options`; opens the event stream (`--events`), nothing else yet.
  public init(options: RunOptions) throws(SessionError) {
    self.options = options
    let events = try EventStream(destination: options.events)
    let semaphore = DispatchSemaphore(value: 0)
    stream = events
    wake = semaphore
    recorder = Recorder(options: options, stream: events, wake: semaphore)
  }

  /// Loads the preset and applies the command line's additions and overrides (before JACK is
  /// touched, so a bad preset is reported without opening a client).
  public static func stages(for options: RunOptions, library: PresetLibrary = PresetLibrary())
    throws(SessionError) -> (Preset, [ChainEntry])
  {
    do { return try options.chainRequest.stages(library: library) } catch {
      switch error {
      case .preset(let e): throw .preset(e)
      case .override(let e): throw .override(e)
      }
    }
  }

  /// Runs until SIGINT/SIGTERM (exit status 0). When the server goes away, closes the dead
  /// client and reconnects by itself (see `reconnect`).
  public func run() throws(SessionError) -> Int32 {
    // Before anything that logs: a SIGINT sent as soon as the log says LiveMic runs must not
    // meet the default disposition (or an ignored signal between the two).
    signals.install(wake: wake)
    JackMessages.install()
    let requestedPreset = options.preset
    if let url = ProcessInfo.processInfo.environment["NSM_URL"], !url.isEmpty {
      joinSession(url: url)
      if signals.stopRequested { return 0 }
    }
    defer { nsm?.client.shutdown() }
    let (preset, stages, sessionNote) = try loadStartingPreset(requested: requestedPreset)
    do { routing.autoload = try AutoloadRules.load(options.autoload) } catch { throw .autoload(error) }
    if let autoload = routing.autoload {
      Log.info(
        "autoload: \(autoload.rules.count) rule(s) from '\(autoload.path)'"
          + (autoload.fallback.map { ", fallback '\($0)'" } ?? ""))
    }
    let client: JackClient
    do {
      client = try JackClient(name: options.clientName, server: options.serverName, wake: wake)
    } catch { throw .engine(error) }
    let built: BuiltChain
    do { built = try ChainBuilder.build(stages, settings: settings(for: client)) } catch {
      throw SessionError(error)
    }
    report(skipped: built.skipped, fellBack: built.fellBack)
    running = RunningChain(built, entries: stages, preset: preset, midi: options.midiMappings)
    if options.startMuted { transition(.mute(.ramp), reason: "--start-muted") }
    let lock = MemoryLock.lockAll()
    if lock == .locked { Log.info(MemoryLock.describe(lock)) } else { Log.error(MemoryLock.describe(lock)) }
    let state: ProcessState
    do { state = try start(client, chain: running.chain) } catch { throw .engine(error) }
    // The socket exists before LiveMic says it runs (requests wait for the supervisor's loop).
    do { control = try ControlServer(name: client.name, wake: wake) } catch {
      Log.error(error.description + "; running without it")
    }
    defer { control?.shutdown() }
    bindMidi(state)
    Log.info(
      "client '\(client.name)' on server '\(serverLabel)': "
        + "\(Int(client.sampleRate)) Hz, \(client.bufferFrames) frames per period, preset '\(preset.name)'")
    connectAndRoute(client, preset: preset)
    followAutoload(client, state)
    logLatency(client, chainLatencyFrames: running.chain.latencyFrames)
    stream.emit(
      "started",
      [
        "client": .string(client.name), "server": .string(serverLabel),
        "sample_rate": .int(Int(client.sampleRate)), "buffer_frames": .int(client.bufferFrames),
        "latency_frames": .int(running.chain.latencyFrames),
      ])
    stream.emit("preset-loaded", ["name": .string(preset.name), "reason": .string("start")])
    recorder.startTapConsumers(client.host)
    stream.listener = { [unowned self] name, object in self.fanOut(event: name, object: object) }
    if let port = options.oscPort, let control {
      do {
        doors.osc = try OscServer(host: options.oscHost, port: port, control: control)
        Log.info("OSC on \(options.oscHost):\(port) (/livemic/...)")
      } catch { Log.error(error.description + "; running without it") }
    }
    defer { doors.osc?.shutdown() }
    if let binding = options.web, let control = doors.control { openWebDoor(binding, control: control) }
    defer {
      doors.control?.closeRequests(reason: "LiveMic is stopping")
      doors.web?.shutdown()
    }
    confirmSessionOpen(note: sessionNote)
    return superviseUntilStopped(client, state)
  }

  /// The preset to start with, its entries, and a note for the session manager: a session's
  /// saved state that cannot be read is said so, and the command line's preset runs instead.
  private func loadStartingPreset(requested: String) throws(SessionError) -> (Preset, [ChainEntry], String?) {
    do {
      let (preset, stages) = try Self.stages(for: options)
      return (preset, stages, nil)
    } catch {
      guard let saved = nsm?.presetPath, options.preset == saved else { throw error }
      let note = "the saved state could not be used (\(error.description)); running '\(requested)'"
      Log.error(note)
      options.preset = requested
      let (preset, stages) = try Self.stages(for: options)
      return (preset, stages, note)
    }
  }

  /// Makes the default and the session's connections, then applies the output and input routes
  /// (the command line's, else the preset's).
  private func connectAndRoute(_ client: JackClient, preset: Preset) {
    let patterns = options.routeOut.isEmpty ? preset.routeOut : options.routeOut
    if !patterns.isEmpty { route = RouteController(patterns: patterns, policy: options.onRouteLoss) }
    let inputPatterns = options.routeIn.isEmpty ? preset.routeIn : options.routeIn
    if !inputPatterns.isEmpty {
      inputRoute = RouteController(patterns: inputPatterns, policy: .continue, isOutput: false)
    }
    connect(client)
    restoreSessionConnections(client)
    for controller in [route, inputRoute].compactMap({ $0 }) {
      controller.apply(client, book: book)
      Log.info(controller.describe(client))
    }
  }

  /// Supervises the client, and after a server loss the next one, until a signal stops
  /// LiveMic (exit status 0).
  private func superviseUntilStopped(_ client: JackClient, _ state: ProcessState) -> Int32 {
    var (client, state) = (client, state)
    while true {
      let connection = LiveConnection(
        client: client, state: state, freewheel: Recorder.FreewheelWatch(droppedAtStart: recorder.dropCounts))
      switch supervise(connection) {
      case .stop:
        recorder.stopAllTapConsumers()
        stream.emit("stopped", ["cycles": .int(Int(state.cycles.load(ordering: .relaxed)))])
        return 0
      case .serverLost:
        Log.error("the JACK server '\(serverLabel)' went away; reconnecting when it is back")
        stream.emit("server-lost", ["server": .string(serverLabel)])
        transition(.serverLost, reason: "the server went away")
        // A route loss's fade belonged to the old client's ramp: the new one times its own.
        route?.loss?.fadeDeadline = nil
        route?.loss?.cut = false
        JackMessages.setQuiet(true)  // closing the dead client and polling print noise
        guard let next = reconnect(closing: client) else {
          transition(.stop, reason: "signal")
          recorder.stopAllTapConsumers()
          return 0
        }
        (client, state) = next
        recorder.restartRecordings(after: client.host)
      }
    }
  }

  /// Reads the preset again and crossfades to it (equal power, 50 ms) on the audio thread; the
  /// new chain is built and warmed here first, the old one is freed here after the fade. A
  /// broken file, or a plugin of it that cannot be made, is reported and the running chain kept.
  @discardableResult
  /// Returns nil when the new chain runs, else the one-sentence reason it does not.
  func reloadPreset(_ client: JackClient, state: ProcessState, reason: String, applyRoute: Bool = true)
    -> String?
  {
    let started = DispatchTime.now()
    do throws(SessionError) {
      let (preset, stages) = try Self.stages(for: options)
      // Strict: a plugin that cannot be made fails the reload, and the running chain stays.
      let built: BuiltChain
      do { built = try ChainBuilder.build(stages, settings: settings(for: client), strict: true) } catch {
        throw SessionError(error)
      }
      // Never waits for the fade (the supervisor answers requests meanwhile): the audio thread
      // takes the chain at its next cycle, the next swap collects the old one. Suspended, the
      // chain is swapped at once and runs at unmute.
      running.swapUnderway = !state.slot.crossfade(
        to: built.chain, running: !suspended, timeoutMilliseconds: 0)
      running.adopt(built, entries: stages, preset: preset, midi: options.midiMappings)
      report(skipped: [], fellBack: built.fellBack)
      bindMidi(state)
      if applyRoute { applyPresetRoute(preset, client, state) }
      let ms = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6
      Log.info(
        "preset '\(preset.name)' reloaded (\(reason)) and crossfaded in after " + String(format: "%.0f", ms)
          + " ms")
      stream.emit(
        "preset-loaded", ["name": .string(preset.name), "reason": .string(reason), "ms": .number(ms)])
      return nil
    } catch {
      Log.error("preset not reloaded (\(reason)): \(error.description); the running chain is kept")
      return error.description
    }
  }

  /// Maps the MIDI controllers onto the running chain's parameters (after a start, a reload or
  /// a reconnection); a mapping to a key the chain lacks is reported and skipped.
  func bindMidi(_ state: ProcessState) {
    for refusal in running.bind(state.midi) { Log.error(refusal) }
  }

  /// Logs a route change and emits it as a `route-changed` event.
  func report(_ change: RouteController.Change, direction: String) {
    Log.info("\(direction) route changed: \(change.reason): \(change.from) → \(change.to)")
    stream.emit(
      "route-changed",
      [
        "direction": .string(direction), "reason": .string(change.reason),
        "code": .string(change.code.rawValue),
        "from": .string(change.from.joined(separator: ",")), "to": .string(change.to.joined(separator: ",")),
      ])
  }

  /// Reports plugin stages left out, and `automatic` stages whose plugin could not be made and
  /// whose built-in unit runs instead, in the log and the event stream.
  func report(skipped: [(id: String, message: String)], fellBack: [(id: String, reason: String)] = []) {
    for (id, message) in skipped {
      Log.error(message)
      stream.emit("plugin-failed", ["id": .string(id), "error": .string(message)])
    }
    for (id, reason) in fellBack {
      let message = "stage '\(id)': its plugin could not be made (\(reason)); the built-in unit runs instead"
      Log.error(message)
      stream.emit(
        "plugin-failed", ["id": .string(id), "error": .string(message), "fallback": .string("builtin")])
    }
  }

  var serverLabel: String { options.serverName ?? JackClient.defaultServerName }

  /// How plugins are run on this client: at its rate, in blocks of its period; with one input,
  /// both channels start out the same.
  func settings(for client: JackClient) -> HostSettings {
    // The period now (it may have changed since the client opened).
    let frames = max(Int(client.events.bufferFrames.load(ordering: .relaxed)), 1)
    // Helper threads of the units built with these (WebRTC's) run just below the audio thread,
    // with latency enough for a whole period.
    return HostSettings(
      sampleRate: client.sampleRate, maxBlockFrames: frames, nominalBlockFrames: frames, fixedBlocks: true,
      identicalChannels: options.inputCount == 1,
      processing: .live(helperPriority: (client.realtimePriority ?? 1) - 1, hostPeriodFrames: frames))
  }

  /// Registers the ports and activates `chain` on `client` as the state's audio says: silent
  /// from the start when the output is muted, the input muted in the input mode (a suspended
  /// state deactivates the client after its connections are known, see `reconnect`).
  func start(_ client: JackClient, chain: VoiceChain) throws(EngineError) -> ProcessState {
    try client.registerPorts(inputCount: options.inputCount, music: options.music, monitor: options.monitor)
    let audio = supervisorState.audio
    return try client.start(
      chain: chain, muted: audio.outputSilent, inputMuted: audio.inputMuted, taps: recorder.taps)
  }

  /// How long a fade-out to silence is given (the ramp's 50 ms, and a loaded machine's late
  /// cycles) before the audio thread counts as stalled: a stop, a `suspend` mute and a lost
  /// route's mute all wait this long at most.
  static let fadeLimitMilliseconds = 300

  /// Waits (up to `milliseconds`) until the output ramp is silent, or until `giveUp` says the
  /// wait is pointless (the server went away: no cycle will ramp). Only a stop waits so: the
  /// loop's other fades are looked at on its wakes.
  func waitUntilSilent(
    _ state: ProcessState, milliseconds: Int = fadeLimitMilliseconds, giveUp: () -> Bool = { false }
  ) -> Bool {
    let deadline = DispatchTime.now() + .milliseconds(milliseconds)
    while !state.ramp.isSilent && DispatchTime.now() < deadline && !giveUp() { usleep(2000) }
    return state.ramp.isSilent
  }

  func connect(_ client: JackClient) {
    if options.noConnect {
      Log.info("--no-connect: ports registered, nothing connected")
      route = route ?? RouteController(patterns: [], policy: options.onRouteLoss)
      return
    }
    let sources = options.connectIn ?? Array(client.physicalPorts(capture: true).prefix(options.inputCount))
    let destinations = options.connectOut ?? Array(client.physicalPorts(capture: false).prefix(2))
    let inputs = client.inputPortNames
    let outputs = client.outputPortNames
    if sources.isEmpty { Log.info("no capture ports to connect: patch the inputs by hand") }
    if destinations.isEmpty { Log.info("no playback ports to connect: patch the outputs by hand") }
    let short = { (full: String) in String(full.split(separator: ":", maxSplits: 1).last ?? "") }
    for (i, source) in sources.enumerated() where inputRoute == nil {
      book.want(short(inputs[min(i, inputs.count - 1)]), source, output: false, client: client)
    }
    for (port, source) in zip(client.musicPortNames, options.connectMusic ?? []) {
      book.want(short(port), source, output: false, client: client)
    }
    for (port, destination) in zip(client.monitorPortNames, options.connectMonitor ?? []) {
      book.want(short(port), destination, output: true, client: client)
    }
    // Without a preference list, the default route is the ports the outputs are connected to now.
    guard route == nil else { return }
    route = RouteController(
      patterns: [], policy: options.onRouteLoss, fixedDefault: Array(destinations.prefix(2)))
    for (i, destination) in destinations.prefix(2).enumerated() {
      book.want(short(outputs[i]), destination, output: true, client: client)
    }
  }

  func logLatency(_ client: JackClient, chainLatencyFrames: Int) {
    guard let input = client.inputPortNames.first, let output = client.outputPortNames.first else { return }
    let capture = client.latencyRange(of: input, capture: true).upperBound
    let playback = client.latencyRange(of: output, capture: false).upperBound
    let total = capture + chainLatencyFrames + playback
    let ms = Double(total) * 1000 / client.sampleRate
    Log.info(
      "latency capture-to-playback: \(capture) + \(chainLatencyFrames) (chain) + \(playback) = "
        + "\(total) frames (" + String(format: "%.1f", ms) + " ms)")
  }
}

extension JackClient {
  /// The client as the recorder knows it: its name and sample rate.
  var host: Recorder.Host { Recorder.Host(name: name, sampleRate: Int(sampleRate)) }
}
