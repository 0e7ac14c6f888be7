import Foundation
import LiveMicPresets

/// The structured event stream (`--events json` on standard output, `--events PATH` to a file):
/// one JSON object per line, `{"time": ISO-8601, "event": NAME, ...fields}`.
///
/// Events: `started`, `state-changed`, `value-changed`, `server-lost`, `reconnected`, `xrun`, `route-changed`, `preset-loaded`,
/// `plugin-failed`, `health`, `freewheel`, `record-started`, `record-stopped`, `record-failed`,
/// `stream-started`, `stream-opened`, `stream-closed`, `stream-stopped`, `stream-failed`, `stopped` (see docs/operations.md and docs/recording.md for their fields).
/// Thread: the supervisor.
final class EventStream {
  private let handle: FileHandle?
  /// Also called with each event's name and object (`time`, `event`, then its fields): the
  /// subscribers.
  var listener: ((String, JSONObject) -> Void)?
  private let formatter: ISO8601DateFormatter = {
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f
  }()

  /// `nil`: no stream; `"json"`: standard output; anything else: a file path (appended to).
  init(destination: String?) throws(SessionError) {
    switch destination {
    case nil:
      handle = nil
    case "json", "-":
      handle = FileHandle.standardOutput
    case let path?:
      if !FileManager.default.fileExists(atPath: path) {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
      }
      guard let h = FileHandle(forWritingAtPath: path) else { throw .events(path: path) }
      h.seekToEndOfFile()
      handle = h
    }
  }

  /// The event object: `time` and `event` first, then `fields` in their order; a fraction is
  /// rounded to 3 decimals (milliseconds, percentages: more digits would be noise).
  func object(_ event: String, _ fields: JSONObject, at date: Date = Date()) -> JSONObject {
    var object: JSONObject = ["time": .string(formatter.string(from: date)), "event": .string(event)]
    for (key, value) in fields where object[key] == nil {
      if case .number(let n) = value, n.isFinite, n != n.rounded() {
        object[key] = .number((n * 1000).rounded() / 1000)
      } else {
        object[key] = value
      }
    }
    return object
  }

  /// Writes one event line.
  func emit(_ event: String, _ fields: JSONObject = [:]) {
    guard handle != nil || listener != nil else { return }
    let object = object(event, fields)
    listener?(event, object)
    handle?.write(Data((object.encoded() + "\n").utf8))
  }
}
