import Foundation

/// The structured event stream (`--events json` on standard output, `--events PATH` to a file):
/// one JSON object per line, `{"time": ISO-8601, "event": NAME, ...fields}`.
///
/// Events: `started`, `server-lost`, `reconnected`, `xrun`, `route-changed`, `preset-loaded`,
/// `plugin-failed`, `health`, `freewheel`, `record-started`, `record-stopped`, `record-failed`,
/// `stream-started`, `stream-opened`, `stream-closed`, `stream-stopped`, `stream-failed`, `stopped` (see docs/operations.md and docs/recording.md for their fields).
/// Thread: the supervisor.
final class EventStream {
  /// A field value.
  enum Value {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
  }

  private let handle: FileHandle?
  /// Also called with each event's name and line (without its newline): the subscribers.
  var listener: ((String, String) -> Void)?
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

  /// Writes one event line.
  func emit(_ event: String, _ fields: KeyValuePairs<String, Value> = [:]) {
    guard handle != nil || listener != nil else { return }
    var line = "{\"time\":\"\(formatter.string(from: Date()))\",\"event\":\(Self.quote(event))"
    for (key, value) in fields {
      line += ",\(Self.quote(key)):"
      switch value {
      case .string(let s): line += Self.quote(s)
      case .int(let n): line += String(n)
      case .double(let d): line += d.isFinite ? String(format: "%.3f", d) : "null"
      case .bool(let b): line += b ? "true" : "false"
      }
    }
    line += "}"
    listener?(event, line)
    handle?.write(Data((line + "\n").utf8))
  }

  static func quote(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }
}
