import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The control protocol, in one place for the server (`ControlServer`, the session's commands)
/// and the clients (`livemic ctl`, `livemic monitor`): where the socket is, its commands and
/// its stream topics. Line-delimited JSON over a Unix domain socket: a request
/// `{"cmd": COMMAND, ...}`, one answer `{"ok": true, ...}` or `{"ok": false, "error": SENTENCE}`;
/// a subscriber also gets stream lines `{"stream": TOPIC, ...}` (docs/control.md).
///
/// Thread: any.
public enum ControlProtocol {
  /// The commands a LiveMic answers.
  public enum Command: String, CaseIterable, Sendable {
    case status, get, set, preset, mode, mute, unmute, route, connections, meters, learn, record, loudness,
      stream
    case subscribe, unsubscribe
  }

  /// The actions of `preset`.
  public enum PresetAction: String, CaseIterable, Sendable { case load, save, list }
  /// The actions of `route` (`show` when none is given).
  public enum RouteAction: String, CaseIterable, Sendable { case show, override, clear, `default` }
  /// The actions of `record` (`list` when none is given).
  public enum RecordAction: String, CaseIterable, Sendable { case start, stop, list }
  /// The actions of `stream` (`show` when none is given).
  public enum StreamAction: String, CaseIterable, Sendable { case start, stop, show }
  /// The actions of `loudness` (`show` when none is given).
  public enum LoudnessAction: String, CaseIterable, Sendable { case show, reset }

  /// The commands, for messages: `status, get, set, …`.
  public static var commandList: String { Command.allCases.map(\.rawValue).joined(separator: ", ") }

  /// The stream topics a connection can subscribe to.
  public static let topics = ["meters", "events"]

  /// The socket of the LiveMic named `name`: `$XDG_RUNTIME_DIR/livemic/NAME.sock`, or
  /// `/tmp/livemic-UID/NAME.sock` when the variable is unset.
  public static func socketPath(name: String) -> String {
    let base: String
    if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
      base = runtime + "/livemic"
    } else {
      base = "/tmp/livemic-\(getuid())"
    }
    return base + "/\(name).sock"
  }
}
