import Foundation
import LiveMicControl
import LiveMicEngine
import LiveMicOffline
import LiveMicPresets

// Argument parsing and wiring only.

func fail(_ message: String, status: Int32) -> Never {
  FileHandle.standardError.write(Data("livemic: error: \(message)\n".utf8))
  exit(status)
}

let command: Command
do {
  command = try parseCommandLine(Array(CommandLine.arguments.dropFirst()))
} catch {
  fail("\(error.message); see 'livemic --help'", status: 2)
}

// LIVEMIC_PARSE_ONLY=1: check a command line (the options, a run's or render's preset and
// --set values, a ctl command's words) and do nothing else; the documentation's tests use it.
if let check = ProcessInfo.processInfo.environment["LIVEMIC_PARSE_ONLY"], !check.isEmpty {
  switch command {
  case .ctl(_, _, let words, _) where words != ["meters"] && words != ["events"]:
    do { _ = try ControlClient.request(words) } catch { fail(error.description, status: 2) }
  case .run(let options):
    do { _ = try LiveSession.stages(for: options) } catch { fail(error.description, status: 1) }
  case .render(let options):
    var run = RunOptions()
    (run.preset, run.overrides, run.plugins) = (options.preset, options.overrides, options.plugins)
    do { _ = try LiveSession.stages(for: run) } catch { fail(error.description, status: 1) }
  default: break
  }
  print("livemic: the command line is valid")
  exit(0)
}

switch command {
case .help(let topic):
  print(help(for: topic))
case .version:
  print("livemic \(version)")
case .presets(nil):
  print(Reference.presetList(), terminator: "")
case .presets(let name?):
  do { print(Reference.presetDetails(try PresetLibrary().load(name)), terminator: "") } catch {
    fail(error.description, status: 1)
  }
case .params(let markdown):
  print(Reference.parameters(markdown: markdown), terminator: "")
case .webToken(let rotate):
  // The token the web remote asks for (made now when there is none); --rotate replaces it, and
  // a running web door takes the new one within a second (the old one and its cookies stop
  // working).
  do {
    let token = rotate ? try WebToken.rotate() : try WebToken.ensure().token
    print(token)
    FileHandle.standardError.write(
      Data("livemic: the web token is stored at '\(WebToken.path)' (0600)\n".utf8))
  } catch { fail(error.description, status: 1) }
case .doctor(let server, let json):
  let (text, status) = Doctor.report(server: server, json: json)
  print(text, terminator: "")
  exit(status)
case .plugins(let filter, let json):
  print(PluginReference.list(filter: filter, json: json), terminator: "")
case .pluginCheck(let options):
  do { exit(try PluginCheck.run(options)) } catch { fail(error.description, status: 1) }
case .pluginCheckOne(let uri, let server):
  do { print(try PluginCheckChild.run(uri: uri, server: server)) } catch {
    fail(error.description, status: 1)
  }
case .pluginShow(let uri, let json):
  do { print(try PluginReference.show(uri: uri, json: json), terminator: "") } catch {
    fail(error.description, status: 1)
  }
case .ctl(let name, let json, let words, _) where words == ["meters"] || words == ["events"]:
  // Follow: a meter line about 20 times a second, or each event, until interrupted or LiveMic stops.
  let meters = words == ["meters"]
  do {
    try ControlClient.follow([meters ? "meters" : "events"], name: name) { line in
      let text =
        json ? line : meters ? (ControlClient.meterLine(line) ?? line) : ControlClient.eventLine(line)
      FileHandle.standardOutput.write(Data((text + "\n").utf8))
      return true
    }
  } catch {
    fail(error.description, status: 2)
  }
  fail("LiveMic '\(name)' stopped", status: 1)
case .ctl(let name, let json, let words, let timeout):
  do {
    // learn waits up to 10 s for a controller to move.
    let seconds = timeout ?? (words.first == "learn" ? 12 : 2)
    let response = try ControlClient.send(try ControlClient.request(words), name: name, timeout: seconds)
    var (ok, text) = ControlClient.human(response)
    if ok && words.first == "meters", let line = ControlClient.meterLine(response) { text = line }
    if json { print(response) } else if ok { print(text) }
    if !ok { fail(text, status: 1) }
  } catch {
    if case .timeout = error { fail(error.description, status: 1) }
    fail(error.description, status: 2)
  }
case .monitor(let name):
  do { exit(try Monitor.run(name: name)) } catch { fail(error.description, status: 2) }
case .render(let options):
  do { try Renderer.render(options) } catch { fail(error.description, status: 1) }
case .plot(let options):
  do {
    for warning in try ResponsePlot.run(options).warnings {
      FileHandle.standardError.write(Data("livemic: error: \(warning)\n".utf8))
    }
  } catch { fail(error.description, status: 1) }
case .bench(let options):
  do { print(try Benchmark.run(options, denormals: DenormalCost.report()), terminator: "") } catch {
    fail(error.description, status: 1)
  }
case .run(let options):
  do { exit(try LiveSession(options: options).run()) } catch { fail(error.description, status: 1) }
}
