import DSP
import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// NSM session support in the supervisor: joining a session at start, saving into it, and what
/// is saved. Thread: the supervisor.
///
/// The session directory (the path `open` gives) holds `livemic.json`, a preset of the running
/// chain with every value, the MIDI mappings, the routes and the plugins' state (under
/// `livemic.state/`), and `connections.json`, the connections of LiveMic's ports.
extension LiveSession {
  /// The preset file inside a session directory.
  static func sessionPresetPath(_ directory: String) -> String { directory + "/livemic.json" }
  /// The connections file inside a session directory.
  static func sessionConnectionsPath(_ directory: String) -> String { directory + "/connections.json" }

  /// Announces LiveMic to the session manager at `url` and waits (up to 30 s) for `open`:
  /// the client id becomes the JACK client name, and a saved state in the session directory
  /// replaces the preset and connections given on the command line.
  func joinSession(url: String) {
    let nsm: NsmClient
    do { nsm = try NsmClient(url: url, wake: wake) } catch {
      Log.error(error.message + "; running without a session manager")
      return
    }
    self.nsm = nsm
    nsm.announce()
    Log.info("announced to the session manager at \(url); waiting for it to open a session")
    guard
      let open = nsm.waitForOpen(
        until: .now() + .seconds(30),
        stop: { [unowned self] in self.stopRequested.load(ordering: .acquiring) })
    else {
      Log.error("the session manager at \(url) sent no open within 30 s; running outside the session")
      return
    }
    sessionOpen = open
    options.clientName = open.clientId
    do {
      try FileManager.default.createDirectory(atPath: open.path, withIntermediateDirectories: true)
    } catch {
      Log.error("cannot create the session directory '\(open.path)'")
    }
    let preset = Self.sessionPresetPath(open.path)
    if FileManager.default.fileExists(atPath: preset) {
      options.preset = preset
      options.overrides = []  // the saved values win over the command line's
    }
    if let data = FileManager.default.contents(atPath: Self.sessionConnectionsPath(open.path)),
      let saved = Self.connections(in: data)
    {
      sessionConnections = saved
      options.noConnect = true  // exactly the saved connections
    }
    Log.info("session '\(open.displayName)': client id '\(open.clientId)', state in '\(open.path)'")
  }

  /// Tells the session manager the session opened (after the chain runs), with a note when the
  /// saved state could not be used.
  func confirmSessionOpen(note: String?) {
    guard let nsm, sessionOpen != nil else { return }
    nsm.reply("/nsm/client/open", note ?? "LiveMic is running")
  }

  /// Makes the saved connections of the session (LiveMic's short port name → other ports).
  func restoreSessionConnections(_ client: JackClient) {
    for (ours, others) in sessionConnections {
      let output = ours.hasPrefix("out_") || ours.hasPrefix("monitor_")
      for other in others { book.want(ours, other, output: output, client: client) }
    }
  }

  /// Answers the session manager's `save` requests since the last call.
  func answerSessionSaves(_ client: JackClient) {
    guard let nsm, nsm.takeSaves() > 0 else { return }
    do throws(ControlError) {
      let path = try saveSession(client)
      nsm.reply("/nsm/client/save", "saved to \(path)")
      stream.emit("session-saved", ["path": .string(path)])
    } catch {
      Log.error("session not saved: \(error.message)")
      nsm.error("/nsm/client/save", error.message)
    }
  }

  /// Writes the state into the session directory; returns the preset's path.
  func saveSession(_ client: JackClient) throws(ControlError) -> String {
    guard let open = sessionOpen else { throw ControlError("LiveMic is not in an NSM session") }
    let path: String
    do {
      path = try PresetWriter.save(
        Self.sessionPresetPath(open.path), entries: running.entries, chain: running.chain,
        plugins: running.plugins, route: route?.patterns ?? [], inputRoute: inputRoute?.patterns ?? [],
        midi: running.midiMappings, modes: running.modes)
    } catch { throw ControlError(error) }
    // The book holds every port group's connections (in, out, music, monitor, midi_in), also
    // those waiting for their ports and, while suspended, those JACK dropped.
    if !suspended { book.record(client) }
    var connections = book.wanted
    for (port, _) in client.allPortNames {
      connections[String(port.split(separator: ":", maxSplits: 1).last ?? ""), default: []] += []
    }
    guard
      FileManager.default.createFile(
        atPath: Self.sessionConnectionsPath(open.path),
        contents: Data((JSONValue(connections).encoded(.pretty) + "\n").utf8))
    else { throw ControlError("cannot write '\(Self.sessionConnectionsPath(open.path))'") }
    Log.info("session state saved to '\(open.path)'")
    return path
  }

  /// The saved connections in `connections.json` (our short port name → other ports); nil when
  /// the file is not such an object.
  static func connections(in data: Data) -> [String: [String]]? {
    guard let object = (try? JSONValue.parse(data))?.object else { return nil }
    var result: [String: [String]] = [:]
    for (port, value) in object {
      guard let list = value.array, list.allSatisfy({ $0.string != nil }) else { return nil }
      result[port] = list.compactMap(\.string)
    }
    return result
  }
}
