import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// The NSM session LiveMic joined: the session manager's client, the session it opened, and
/// what is kept in its directory — `livemic.json`, a preset of the running chain with every
/// value, the MIDI mappings, the routes and the plugins' state (under `livemic.state/`), and
/// `connections.json`, the connections of LiveMic's ports. Tested without a session manager
/// (`NsmSessionTests`).
///
/// Thread: the supervisor.
final class NsmSession {
  let client: NsmClient
  /// The session the manager opened (nil until it does).
  private(set) var open: NsmClient.Open?
  /// The connections saved in the session (our short port name → other ports); nil when it
  /// holds none.
  private(set) var savedConnections: [String: [String]]?

  init(client: NsmClient) { self.client = client }

  /// The preset file inside a session directory.
  static func presetPath(_ directory: String) -> String { directory + "/livemic.json" }
  /// The connections file inside a session directory.
  static func connectionsPath(_ directory: String) -> String { directory + "/connections.json" }

  /// The session's preset file (nil outside a session).
  var presetPath: String? { open.map { Self.presetPath($0.path) } }

  /// Takes the manager's `open`: makes its directory and reads the connections saved there.
  func opened(_ open: NsmClient.Open) {
    self.open = open
    do {
      try FileManager.default.createDirectory(atPath: open.path, withIntermediateDirectories: true)
    } catch {
      Log.error("cannot create the session directory '\(open.path)'")
    }
    if let data = FileManager.default.contents(atPath: Self.connectionsPath(open.path)),
      let saved = Self.connections(in: data)
    {
      savedConnections = saved
    }
  }

  /// True when the session directory holds a saved preset.
  var hasSavedPreset: Bool { presetPath.map { FileManager.default.fileExists(atPath: $0) } ?? false }

  /// Writes `connections` (every port of ours, none left out) into the session directory.
  func writeConnections(_ connections: [String: [String]]) throws(ControlError) {
    guard let open else { throw ControlError("LiveMic is not in an NSM session") }
    let path = Self.connectionsPath(open.path)
    guard
      FileManager.default.createFile(
        atPath: path, contents: Data((JSONValue(connections).encoded(.pretty) + "\n").utf8))
    else { throw ControlError("cannot write '\(path)'") }
  }

  /// The saved connections in `connections.json`; nil when the file is not such an object.
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
