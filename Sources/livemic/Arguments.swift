import LiveMicControl
import LiveMicOffline
import LiveMicPresets

/// A command-line mistake; the message is one sentence, printed with a pointer to --help.
struct UsageError: Error {
  let message: String
}

/// The parsed command line.
enum Command {
  case run(RunOptions)
  case render(RenderOptions)
  case plot(PlotOptions)
  case presets(show: String?)
  case params(markdown: Bool)
  case bench(BenchOptions)
  case plugins(filter: String?, json: Bool)
  case pluginShow(uri: String, json: Bool)
  /// `livemic plugins check [FILTER]`: the inventory.
  case pluginCheck(PluginCheckOptions)
  /// `livemic plugins check-one URI [-s SERVER]`: one plugin, the inventory's child (hidden).
  case pluginCheckOne(uri: String, server: String?)
  case ctl(name: String, json: Bool, words: [String], timeout: Double?)
  case monitor(name: String)
  case doctor(server: String?, json: Bool)
  /// `livemic web token [--rotate]`.
  case webToken(rotate: Bool)
  case help(String?)
  case version
}

/// Reads options one by one; knows `--opt value`, `--opt=value` and `-o value`.
struct ArgumentReader {
  private var args: [String]
  private(set) var positional: [String] = []

  init(_ args: [String]) { self.args = args }

  /// The next option (`-x`/`--xyz`), or nil at the end; positional words are collected.
  mutating func nextOption() -> String? {
    while let a = args.first {
      args.removeFirst()
      if a == "--" {
        positional += args
        args = []
        return nil
      }
      if a.hasPrefix("--"), let eq = a.firstIndex(of: "=") {
        args.insert(String(a[a.index(after: eq)...]), at: 0)
        return String(a[..<eq])
      }
      if a.hasPrefix("-") && a.count > 1 && Double(a) == nil { return a }
      positional.append(a)
    }
    return nil
  }

  /// The long spelling of an option, for messages.
  static func longName(_ option: String) -> String {
    let long = [
      "-n": "--name", "-s": "--server", "-p": "--preset", "-c": "--set", "-i": "--inputs",
      "-h": "--help", "-o": "--output",
    ]
    return long[option] ?? option
  }

  mutating func value(for option: String) throws(UsageError) -> String {
    guard let v = args.first else {
      throw UsageError(message: "\(Self.longName(option)) needs a value")
    }
    args.removeFirst()
    return v
  }

  /// The option's value, a port-name pattern (`PortPattern`).
  mutating func pattern(for option: String) throws(UsageError) -> String {
    let text = try value(for: option)
    if let complaint = PortPattern.complaint(text, as: Self.longName(option)) {
      throw UsageError(message: complaint)
    }
    return text
  }

  mutating func int(for option: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
    let text = try value(for: option)
    guard let n = Int(text), range.contains(n) else {
      throw UsageError(
        message:
          "\(Self.longName(option)) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
      )
    }
    return n
  }

  /// A loudness target in LUFS, -40 to -6.
  mutating func loudness(for option: String) throws(UsageError) -> Float {
    let text = try value(for: option)
    guard let v = Float(text), (-40 ... -6).contains(v) else {
      throw UsageError(message: "\(option) takes a loudness in LUFS from -40 to -6, not '\(text)'")
    }
    return v
  }

  mutating func override(for option: String) throws(UsageError) -> ParameterOverride {
    let text = try value(for: option)
    do { return try ParameterOverride(parsing: text) } catch {
      throw UsageError(message: error.description)
    }
  }
}

func portList(_ text: String) -> [String] {
  text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

/// The subcommands; a command line without one runs the live session.
enum Subcommand: String, CaseIterable {
  case run, render, plot, presets, params, bench, plugins, ctl, monitor, doctor, web, help
}

func parseCommandLine(_ arguments: [String]) throws(UsageError) -> Command {
  var words = arguments
  let sub = words.first.flatMap(Subcommand.init(rawValue:)) ?? .run
  if words.first == sub.rawValue { words.removeFirst() }
  var reader = ArgumentReader(words)
  switch sub {
  case .help: return .help(words.first)
  case .presets: return try parsePresets(&reader)
  case .ctl: return try parseCtl(words)
  case .monitor: return try parseMonitor(&reader)
  case .plugins where words.first == "check" || words.first == "check-one":
    var rest = ArgumentReader(Array(words.dropFirst()))
    return try parsePluginCheck(&rest, one: words.first == "check-one")
  case .plugins: return try parsePlugins(&reader)
  case .doctor: return try parseDoctor(&reader)
  case .web:
    guard let first = words.first, first == "token", words.count <= 2,
      words.count == 1 || words[1] == "--rotate"
    else { throw UsageError(message: "usage: livemic web token [--rotate]") }
    return .webToken(rotate: words.count == 2)
  case .params: return try parseParams(&reader)
  case .bench: return try parseBench(&reader)
  case .plot: return try parsePlot(&reader)
  case .render: return try parseRender(&reader)
  case .run:
    var configured = ArgumentReader(try RunConfiguration.expand(words))
    return try parseRun(&configured)
  }
}

/// `livemic presets [show NAME]`.
private func parsePresets(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  while let o = reader.nextOption() {
    if o == "-h" || o == "--help" { return .help("presets") }
    throw UsageError(message: "unknown option '\(o)' for 'livemic presets'")
  }
  if reader.positional.isEmpty { return .presets(show: nil) }
  guard reader.positional.count == 2, reader.positional[0] == "show" else {
    throw UsageError(message: "use 'livemic presets' or 'livemic presets show NAME'")
  }
  return .presets(show: reader.positional[1])
}

/// `livemic ctl [OPTIONS] COMMAND…`: options first, then the command words as they are (`--json`, `-n NAME` and `--timeout` may also follow the command).
private func parseCtl(_ words: [String]) throws(UsageError) -> Command {
  // Options first (-n NAME, --json), then the command words as they are.
  var name = "livemic"
  var json = false
  var timeout: Double?
  var rest = words
  while let first = rest.first, first.hasPrefix("-"), Double(first) == nil {
    rest.removeFirst()
    switch first {
    case "-n", "--name":
      guard let value = rest.first else { throw UsageError(message: "--name needs a value") }
      name = value
      rest.removeFirst()
    case "--json": json = true
    case "--timeout":
      guard let value = rest.first.flatMap(Double.init), value > 0, value.isFinite else {
        throw UsageError(message: "--timeout needs a number of seconds above 0")
      }
      timeout = value
      rest.removeFirst()
    case "-h", "--help": return .help("ctl")
    default: throw UsageError(message: "unknown option '\(first)' for 'livemic ctl'")
    }
  }
  // --json (and -n NAME) may also follow the command: `livemic ctl status --json`.
  if rest.contains("--json") {
    json = true
    rest.removeAll { $0 == "--json" }
  }
  if let at = rest.firstIndex(where: { $0 == "-n" || $0 == "--name" }), at > 0, at + 1 < rest.count {
    name = rest[at + 1]
    rest.removeSubrange(at...(at + 1))
  }
  if let at = rest.firstIndex(of: "--timeout"), at > 0, at + 1 < rest.count,
    let value = Double(rest[at + 1]), value > 0, value.isFinite
  {
    timeout = value
    rest.removeSubrange(at...(at + 1))
  }
  return .ctl(name: name, json: json, words: rest, timeout: timeout)
}

/// `livemic monitor [-n NAME]`.
private func parseMonitor(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var name = "livemic"
  while let o = reader.nextOption() {
    switch o {
    case "-n", "--name": name = try reader.value(for: o)
    case "-h", "--help": return .help("monitor")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic monitor'")
    }
  }
  guard reader.positional.isEmpty else { throw UsageError(message: "'livemic monitor' takes no arguments") }
  return .monitor(name: name)
}

/// `livemic plugins [--json] [FILTER]` and `livemic plugins show URI`.
/// `livemic doctor [-s SERVER] [--json]`.
private func parseDoctor(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var (server, json): (String?, Bool) = (nil, false)
  while let o = reader.nextOption() {
    switch o {
    case "-s", "--server": server = try reader.value(for: o)
    case "--json": json = true
    case "-h", "--help": return .help("doctor")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic doctor'")
    }
  }
  guard reader.positional.isEmpty else {
    throw UsageError(message: "use 'livemic doctor [-s SERVER] [--json]'")
  }
  return .doctor(server: server, json: json)
}

private func parsePlugins(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var json = false
  while let o = reader.nextOption() {
    switch o {
    case "--json": json = true
    case "-h", "--help": return .help("plugins")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic plugins'")
    }
  }
  if reader.positional.first == "show" {
    guard reader.positional.count == 2 else {
      throw UsageError(message: "use 'livemic plugins show URI'")
    }
    return .pluginShow(uri: reader.positional[1], json: json)
  }
  guard reader.positional.count <= 1 else {
    throw UsageError(message: "use 'livemic plugins [--json] [FILTER]'")
  }
  return .plugins(filter: reader.positional.first, json: json)
}

/// `livemic plugins check [FILTER] [--json] [-s SERVER] [--guard LIBRARY] [--timeout SECONDS]
/// [--jobs N]`, and its child, `livemic plugins check-one URI [-s SERVER]`.
private func parsePluginCheck(_ reader: inout ArgumentReader, one: Bool) throws(UsageError) -> Command {
  var options = PluginCheckOptions()
  while let o = reader.nextOption() {
    switch o {
    case "--json" where !one: options.json = true
    case "-s", "--server": options.server = try reader.value(for: o)
    case "--guard" where !one: options.guardLibrary = try reader.value(for: o)
    case "--timeout" where !one:
      let text = try reader.value(for: o)
      guard let seconds = Double(text), seconds > 0, seconds <= 3600 else {
        throw UsageError(message: "--timeout takes a number of seconds above 0, up to 3600, not '\(text)'")
      }
      options.timeout = seconds
    case "--jobs" where !one: options.jobs = try reader.int(for: o, in: 1...16)
    case "-h", "--help": return .help("plugins")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic plugins check'")
    }
  }
  if one {
    guard reader.positional.count == 1 else {
      throw UsageError(message: "use 'livemic plugins check-one URI'")
    }
    return .pluginCheckOne(uri: reader.positional[0], server: options.server)
  }
  guard reader.positional.count <= 1 else {
    throw UsageError(message: "use 'livemic plugins check [FILTER] [--json] [--guard LIBRARY]'")
  }
  options.filter = reader.positional.first
  return .pluginCheck(options)
}

/// `livemic params [--markdown]`.
private func parseParams(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var markdown = false
  while let o = reader.nextOption() {
    switch o {
    case "--markdown": markdown = true
    case "-h", "--help": return .help("params")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic params'")
    }
  }
  return .params(markdown: markdown)
}

/// `livemic bench [--seconds N] [--no-sox] [--blocks]`.
private func parseBench(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var options = BenchOptions()
  while let o = reader.nextOption() {
    switch o {
    case "--seconds": options.seconds = try reader.int(for: o, in: 1...3600)
    case "--no-sox": options.compareWithSox = false
    case "--blocks": options.blocksOnly = true
    case "-h", "--help": return .help("bench")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic bench'")
    }
  }
  return .bench(options)
}

/// `livemic plot PRESET [-o FILE]`.
private func parsePlot(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var options = PlotOptions()
  while let o = reader.nextOption() {
    switch o {
    case "-o", "--output": options.outputPath = try reader.value(for: o)
    case "-c", "--set": options.overrides.append(try reader.override(for: o))
    case "--plugin": options.plugins.append(try reader.value(for: o))
    case "-h", "--help": return .help("plot")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic plot'")
    }
  }
  guard reader.positional.count == 1 else {
    throw UsageError(message: "'livemic plot' needs one preset name or path")
  }
  options.preset = reader.positional[0]
  return .plot(options)
}

/// `livemic render IN OUT [OPTIONS]`.
private func parseRender(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var options = RenderOptions()
  while let o = reader.nextOption() {
    switch o {
    case "-p", "--preset": options.preset = try reader.value(for: o)
    case "-c", "--set": options.overrides.append(try reader.override(for: o))
    case "--frames": options.blockFrames = try reader.int(for: o, in: 1...65536)
    case "--plugin": options.plugins.append(try reader.value(for: o))
    case "--no-plugins": options.noPlugins = true
    case "--loudness-target": options.loudnessTargetLufs = try reader.loudness(for: o)
    case "--music": options.musicPath = try reader.value(for: o)
    case "-h", "--help": return .help("render")
    default: throw UsageError(message: "unknown option '\(o)' for 'livemic render'")
    }
  }
  guard reader.positional.count == 2 else {
    throw UsageError(message: "'livemic render' needs an input and an output file (IN OUT)")
  }
  options.inputPath = reader.positional[0]
  options.outputPath = reader.positional[1]
  return .render(options)
}

/// `livemic [run] [OPTIONS]`: the live session.
private func parseRun(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
  var options = RunOptions()
  while let o = reader.nextOption() {
    switch o {
    case "-n", "--name": options.clientName = try reader.value(for: o)
    case "-s", "--server": options.serverName = try reader.value(for: o)
    case "-p", "--preset": options.preset = try reader.value(for: o)
    case "-c", "--set": options.overrides.append(try reader.override(for: o))
    case "-i", "--inputs": options.inputCount = try reader.int(for: o, in: 1...2)
    case "--connect-in": options.connectIn = portList(try reader.value(for: o))
    case "--connect-out": options.connectOut = portList(try reader.value(for: o))
    case "--no-connect": options.noConnect = true
    case "--music": options.music = true
    case "--connect-music": options.connectMusic = portList(try reader.value(for: o))
    case "--monitor": options.monitor = true
    case "--loudness-target": options.loudnessTargetLufs = try reader.loudness(for: o)
    case "--connect-monitor": options.connectMonitor = portList(try reader.value(for: o))
    case "--plugin": options.plugins.append(try reader.value(for: o))
    case "--watch": options.watch = true
    case "--no-plugins": options.noPlugins = true
    case "--autoload": options.autoload = try reader.value(for: o)
    case "--start-muted": options.startMuted = true
    case "--osc": options.oscPort = try reader.int(for: o, in: 1...65535)
    case "--osc-host": options.oscHost = try reader.value(for: o)
    case "--web":
      let text = try reader.value(for: o)
      guard let binding = WebBinding.parse(text) else {
        throw UsageError(
          message: "--web takes [ADDRESS:]PORT with an IP address and a port 0-65535, not '\(text)'")
      }
      options.web = binding
    case "--midi-cc":
      let text = try reader.value(for: o)
      guard let mapping = MidiMapping(parsing: text) else {
        throw UsageError(
          message:
            "--midi-cc takes CC[:CHANNEL]=KEY (e.g. 7=output.volume or 7:1=output.volume), not '\(text)'")
      }
      options.midiMappings.append(mapping)
    case "--events": options.events = try reader.value(for: o)
    case "--route-out": options.routeOut.append(try reader.pattern(for: o))
    case "--route-in": options.routeIn.append(try reader.pattern(for: o))
    case "--on-route-loss":
      let text = try reader.value(for: o)
      guard let policy = RouteLossPolicy(rawValue: text) else {
        throw UsageError(message: "--on-route-loss takes mute or continue, not '\(text)'")
      }
      options.onRouteLoss = policy
    case "--record": options.recordDirectory = try reader.value(for: o)
    case "--autorecord": options.autorecordDirectory = try reader.value(for: o)
    case "--record-format":
      let text = try reader.value(for: o)
      guard let format = RecordingFormat(rawValue: text) else {
        throw UsageError(message: "--record-format takes wav, flac, ogg or mp3, not '\(text)'")
      }
      options.recordFormat = format
    case "--stream-out":
      let path = try reader.value(for: o)
      if let problem = StreamDestination.problem(path: path) {
        throw UsageError(message: "--stream-out '\(path)' cannot be written: \(problem)")
      }
      options.streamOut = path
    case "--stream-format":
      let text = try reader.value(for: o)
      guard text == "f32" || text == "wav" else {
        throw UsageError(message: "--stream-format takes f32 or wav, not '\(text)'")
      }
      options.streamWavHeader = text == "wav"
    case "-h", "--help": return .help("run")
    case "--version": return .version
    default: throw UsageError(message: "unknown option '\(o)'")
    }
  }
  if let extra = reader.positional.first {
    throw UsageError(
      message: "unexpected argument '\(extra)' (commands: run, render, presets, params, bench)")
  }
  if options.clientName.isEmpty { throw UsageError(message: "--name must not be empty") }
  if options.streamOut == "-" && (options.events == "json" || options.events == "-") {
    throw UsageError(message: "--stream-out - and --events json cannot share standard output")
  }
  return .run(options)
}
