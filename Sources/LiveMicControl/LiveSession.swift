import DSP
import Dispatch
import Foundation
import LV2Host
import LiveMicEngine
import Synchronization

/// What `livemic run` was asked to do.
///
/// Thread: any (value type).
public struct RunOptions: Sendable {
  public var clientName = "livemic"
  public var serverName: String?
  public var preset = "voice"
  public var overrides: [ParameterOverride] = []
  public var inputCount = 1
  public var connectIn: [String]?
  public var connectOut: [String]?
  public var noConnect = false
  /// LV2 plugin URIs appended to the chain (before the output volume).
  public var plugins: [String] = []

  public init() {}
}

/// Why a live session could not start. Each message is one sentence.
public enum SessionError: Error, CustomStringConvertible {
  case preset(PresetError)
  case override(OverrideError)
  case chain(ChainError)
  case engine(EngineError)
  case plugin(id: String, PluginError)

  public var description: String {
    switch self {
    case .preset(let e): return e.description
    case .override(let e): return e.description
    case .chain(let e): return e.description
    case .engine(let e): return e.description
    case .plugin(let id, let e): return "plugin stage '\(id)': \(e.description)"
    }
  }
}

/// The supervisor of one live run: opens the client, builds and warms the chain, starts audio,
/// connects, then watches JACK's events until a signal or a server loss. Never real-time.
public final class LiveSession: @unchecked Sendable {
  private let options: RunOptions
  private let stopRequested = Atomic<Bool>(false)
  private var signalSources: [any DispatchSourceSignal] = []
  private var plugins: [PluginStage] = []

  public init(options: RunOptions) {
    self.options = options
  }

  /// Loads the preset and applies the overrides (before JACK is touched, so a bad preset is
  /// reported without opening a client).
  public static func stages(for options: RunOptions, library: PresetLibrary = PresetLibrary())
    throws(SessionError) -> (Preset, [ChainEntry])
  {
    let preset: Preset
    do { preset = try library.load(options.preset) } catch { throw .preset(error) }
    do {
      var entries = preset.entries
      // --plugin entries go before the final output stage.
      for uri in options.plugins {
        var id = PluginIdentifiers.suggestedId(for: uri)
        var n = 2
        while entries.contains(where: { $0.id == id }) {
          id = PluginIdentifiers.suggestedId(for: uri) + "\(n)"
          n += 1
        }
        let at = entries.lastIndex { $0.unit?.type == OutputVolume.typeName } ?? entries.count
        entries.insert(.plugin(PluginDescription(id: id, uri: uri)), at: at)
      }
      var withPlugins = preset
      withPlugins.chain = entries
      return (preset, try withPlugins.stages(applying: options.overrides))
    } catch { throw .override(error) }
  }

  /// Runs until SIGINT/SIGTERM (exit status 0) or the server goes away (status 1).
  public func run() throws(SessionError) -> Int32 {
    let (preset, stages) = try Self.stages(for: options)
    let client: JackClient
    do {
      client = try JackClient(name: options.clientName, server: options.serverName)
    } catch { throw .engine(error) }
    let settings = HostSettings(
      sampleRate: client.sampleRate, maxBlockFrames: client.bufferFrames,
      nominalBlockFrames: client.bufferFrames, fixedBlocks: true)
    let built = try ChainBuilder.build(stages, settings: settings)
    for message in built.skipped { Log.error(message) }
    let chain = built.chain
    plugins = built.plugins
    let state: ProcessState
    do {
      try client.registerPorts(inputCount: options.inputCount)
      state = try client.start(chain: chain)
    } catch { throw .engine(error) }
    Log.info(
      "client '\(client.name)' on server '\(options.serverName ?? JackClient.defaultServerName)': "
        + "\(Int(client.sampleRate)) Hz, \(client.bufferFrames) frames per period, preset '\(preset.name)'")
    connect(client)
    logLatency(client, chainLatencyFrames: chain.latencyFrames)
    installSignalHandlers(wake: client.events.wake)
    let status = supervise(client, state: state)
    return status
  }

  private func connect(_ client: JackClient) {
    if options.noConnect {
      Log.info("--no-connect: ports registered, nothing connected")
      return
    }
    let sources = options.connectIn ?? Array(client.physicalPorts(capture: true).prefix(options.inputCount))
    let destinations = options.connectOut ?? Array(client.physicalPorts(capture: false).prefix(2))
    let inputs = client.inputPortNames
    let outputs = client.outputPortNames
    if sources.isEmpty { Log.info("no capture ports to connect: patch the inputs by hand") }
    if destinations.isEmpty { Log.info("no playback ports to connect: patch the outputs by hand") }
    for (i, source) in sources.enumerated() {
      attempt { () throws(EngineError) in try client.connect(source, inputs[min(i, inputs.count - 1)]) }
    }
    for (i, destination) in destinations.prefix(2).enumerated() {
      attempt { () throws(EngineError) in try client.connect(outputs[i], destination) }
    }
  }

  /// Reports a failed connection in one line and carries on: audio keeps running.
  private func attempt(_ body: () throws(EngineError) -> Void) {
    do { try body() } catch { Log.error(error.description) }
  }

  private func logLatency(_ client: JackClient, chainLatencyFrames: Int) {
    guard let input = client.inputPortNames.first, let output = client.outputPortNames.first else { return }
    let capture = client.latencyRange(of: input, capture: true).upperBound
    let playback = client.latencyRange(of: output, capture: false).upperBound
    let total = capture + chainLatencyFrames + playback
    let ms = Double(total) * 1000 / client.sampleRate
    Log.info(
      "latency capture-to-playback: \(capture) + \(chainLatencyFrames) (chain) + \(playback) = "
        + "\(total) frames (" + String(format: "%.1f", ms) + " ms)")
  }

  private func installSignalHandlers(wake: DispatchSemaphore) {
    for sig in [SIGINT, SIGTERM] {
      signal(sig, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
      source.setEventHandler { [weak self] in
        self?.stopRequested.store(true, ordering: .releasing)
        wake.signal()
      }
      source.resume()
      signalSources.append(source)
    }
  }

  /// Watches the engine's events until asked to stop.
  private func supervise(_ client: JackClient, state: ProcessState) -> Int32 {
    let events = client.events
    var reportedXruns: UInt64 = 0
    var lastXrunReport = DispatchTime(uptimeNanoseconds: 0)
    var bufferFrames = events.bufferFrames.load(ordering: .relaxed)
    var sampleRate = events.sampleRate.load(ordering: .relaxed)
    while true {
      _ = events.wake.wait(timeout: .now() + .seconds(1))
      if stopRequested.load(ordering: .acquiring) {
        state.ramp.fadeOut()
        let deadline = DispatchTime.now() + .milliseconds(300)
        while !state.ramp.isSilent && DispatchTime.now() < deadline
          && !events.serverLost.load(ordering: .acquiring)
        {
          usleep(2000)
        }
        client.close()
        Log.info("stopped after \(state.cycles.load(ordering: .relaxed)) cycles")
        return 0
      }
      if events.serverLost.load(ordering: .acquiring) {
        Log.error("the JACK server went away; closing the client")
        client.close()
        return 1
      }
      let xruns = events.xruns.load(ordering: .relaxed)
      if xruns != reportedXruns
        && DispatchTime.now().uptimeNanoseconds > lastXrunReport.uptimeNanoseconds + 1_000_000_000
      {
        Log.info("xruns: \(xruns - reportedXruns) new, \(xruns) in total")
        reportedXruns = xruns
        lastXrunReport = .now()
      }
      for plugin in plugins {
        for line in plugin.drainLog() { Log.info("plugin '\(plugin.id)': \(line)") }
      }
      let frames = events.bufferFrames.load(ordering: .relaxed)
      if frames != bufferFrames {
        bufferFrames = frames
        Log.info("buffer size is now \(frames) frames")
      }
      let rate = events.sampleRate.load(ordering: .relaxed)
      if rate != sampleRate {
        sampleRate = rate
        Log.info("sample rate is now \(rate) Hz")
      }
    }
  }
}
