import DSP
import Foundation
import LiveMicControl
import LiveMicPresets

#if canImport(Glibc)
  import Glibc
#endif

/// `livemic ctl`: sends one request to a running LiveMic's control socket and returns its
/// answer. Never real-time.
public enum ControlClient {
  /// Builds the request for `ctl` arguments (`set eq.bass_db 3`, `route override a,b`, …).
  public static func request(_ words: [String]) throws(ControlClientError) -> JSONObject {
    guard let command = words.first else {
      throw .usage("ctl needs a command (status, get, set, preset, mode, mute, unmute, route, connections)")
    }
    let rest = Array(words.dropFirst())
    switch (command, rest.count) {
    case ("status", 0), ("unmute", 0), ("connections", 0): return ["cmd": .string(command)]
    case ("meters", 0): return ["cmd": "meters"]
    case ("learn", 1): return ["cmd": "learn", "key": .string(rest[0])]
    case ("meters", 1) where rest[0] == "--once": return ["cmd": "meters"]
    case ("subscribe", _), ("unsubscribe", _): return ["cmd": .string(command), "topics": JSONValue(rest)]
    case ("get", 0): return ["cmd": "get"]
    case ("get", 1): return ["cmd": "get", "key": .string(rest[0])]
    case ("set", 2):
      if let number = Double(rest[1]) {
        return ["cmd": "set", "key": .string(rest[0]), "value": .number(number)]
      }
      switch rest[1].lowercased() {
      case "on", "true": return ["cmd": "set", "key": .string(rest[0]), "value": true]
      case "off", "false": return ["cmd": "set", "key": .string(rest[0]), "value": false]
      default:
        // Text, for a plugin property (a file to load): a relative path that exists is made
        // absolute here, since LiveMic does not know this shell's folder.
        var text = rest[1]
        if !text.hasPrefix("/"), FileManager.default.fileExists(atPath: text) {
          text = FileManager.default.currentDirectoryPath + "/" + text
        }
        return ["cmd": "set", "key": .string(rest[0]), "value": .string(text)]
      }
    case ("preset", 2) where rest[0] == "load" || rest[0] == "save":
      return ["cmd": "preset", "action": .string(rest[0]), "name": .string(rest[1])]
    case ("mode", 0): return ["cmd": "mode"]
    case ("mode", 2): return ["cmd": "mode", "id": .string(rest[0]), "mode": .string(rest[1])]
    case ("mute", 0): return ["cmd": "mute"]
    case ("mute", 2) where rest[0] == "--mode": return ["cmd": "mute", "mode": .string(rest[1])]
    case ("record", _): return try recordRequest(rest)
    case ("stream", 0): return ["cmd": "stream"]
    case ("stream", 1) where rest[0] == "stop": return ["cmd": "stream", "action": "stop"]
    case ("stream", _) where rest.first == "start":
      let usage = ControlClientError.usage("use 'ctl stream start PATH|- [--format f32|wav]'")
      var request: JSONObject = ["cmd": "stream", "action": "start"]
      var words = Array(rest.dropFirst())
      while let word = words.first {
        words.removeFirst()
        if word == "--format" {
          guard let value = words.first else { throw usage }
          words.removeFirst()
          request["format"] = .string(value)
        } else if request["path"] == nil && (word == "-" || !word.hasPrefix("-")) {
          request["path"] = .string(word)
        } else {
          throw usage
        }
      }
      guard request["path"] != nil else { throw usage }
      return request
    case ("loudness", 0): return ["cmd": "loudness"]
    case ("loudness", 1) where rest[0] == "reset": return ["cmd": "loudness", "action": "reset"]
    case ("route", 0): return ["cmd": "route"]
    case ("route", 1) where rest[0] == "clear": return ["cmd": "route", "action": "clear"]
    case ("route", _) where rest.count >= 2 && rest[0] == "default":
      return ["cmd": "route", "action": "default", "patterns": JSONValue(Array(rest.dropFirst()))]
    case ("route", 2) where rest[0] == "override":
      return [
        "cmd": "route", "action": "override",
        "ports": JSONValue(rest[1].split(separator: ",").map(String.init)),
      ]
    default:
      let given = "'ctl \(words.joined(separator: " "))'"
      let forms = Self.forms(of: command)
      guard forms.isEmpty else {
        throw .usage(
          "\(given) does not fit its command: use " + forms.map { "'ctl \($0)'" }.joined(separator: " or "))
      }
      throw .usage("\(given) is not a ctl command; see 'livemic help ctl'")
    }
  }

  /// The forms of `command` as `livemic help ctl` lists them (its lines that start with the
  /// command), for a known command given the wrong words; empty for an unknown one.
  static func forms(of command: String) -> [String] {
    ctlHelp.split(separator: "\n").compactMap { line -> String? in
      guard line.hasPrefix("  \(command)") else { return nil }
      let text = line.dropFirst(2)
      let form = text.range(of: "  ").map { String(text[..<$0.lowerBound]) } ?? String(text)
      return form.split(separator: " ").first.map(String.init) == command ? form : nil
    }
  }

  /// `record [list]`, `record start [--tap input|output] [--format F] [PATH]`, `record stop [ID]`.
  static func recordRequest(_ words: [String]) throws(ControlClientError) -> JSONObject {
    let usage = ControlClientError.usage(
      "use 'ctl record start [--tap input|output] [--format wav|flac|ogg|mp3] [PATH]', 'ctl record stop [ID]' or 'ctl record'"
    )
    switch words.first {
    case nil, "list": return ["cmd": "record", "action": "list"]
    case "stop":
      guard words.count <= 2 else { throw usage }
      guard words.count == 2 else { return ["cmd": "record", "action": "stop"] }
      guard let id = Int(words[1]) else { throw .usage("'\(words[1])' is not a recording id") }
      return ["cmd": "record", "action": "stop", "id": .int(id)]
    case "start":
      var request: JSONObject = ["cmd": "record", "action": "start"]
      var rest = Array(words.dropFirst())
      while let word = rest.first {
        rest.removeFirst()
        if word == "--tap" || word == "--format" {
          guard let value = rest.first else { throw usage }
          rest.removeFirst()
          request[String(word.dropFirst(2))] = .string(value)
        } else if request["path"] == nil && !word.hasPrefix("--") {
          request["path"] = .string(word)
        } else {
          throw usage
        }
      }
      return request
    default: throw usage
    }
  }

  /// Sends `request` to the LiveMic named `name` and returns the response line.
  /// Gives up after `timeout` seconds without an answer (`--timeout`; 2 s by default).
  public static func send(_ request: JSONObject, name: String, timeout: Double = 2)
    throws(ControlClientError)
    -> String
  {
    let connection = try ControlConnection(name: name)
    connection.deadline = Date().addingTimeInterval(timeout)
    do { return try connection.request(request) } catch {
      guard connection.timedOut else { throw error }
      throw .timeout("LiveMic '\(name)' did not answer within \(String(format: "%g", timeout)) s")
    }
  }

  /// Subscribes to `topics` and calls `line` with every stream line until LiveMic closes the
  /// connection (it stopped) or `line` returns false.
  public static func follow(
    _ topics: [String], name: String, _ line: (String) -> Bool
  ) throws(ControlClientError) {
    let connection = try ControlConnection(name: name)
    let answer = try connection.request(["cmd": "subscribe", "topics": JSONValue(topics)])
    let (ok, text) = human(answer)
    guard ok else { throw .connection(text) }
    while let next = connection.readLine() {
      if !line(next) { return }
    }
  }

  /// One line of meters for people: `in -12.3/-20.1 -12.0/-19.8  out …` (peak/RMS dBFS),
  /// then each stage's gain reduction and the loudness (`M -18.2 S -19.0 I -20.1 LUFS TP -3.2
  /// dBTP`); from a `meters` response or stream line.
  public static func meterLine(_ response: String) -> String? {
    guard let object = (try? JSONValue.parse(response))?.object,
      object["ok"]?.bool == true || object["stream"]?.string == "meters"
    else { return nil }
    let reductions = numbers(object["gain_reduction_db"]).sorted { $0.key < $1.key }
      .map { "  \($0.key) GR " + String(format: "%.1f", $0.value) + " dB" }.joined()
    func side(_ key: String) -> String {
      (object[key]?.array ?? []).map {
        String(format: "%6.1f/%6.1f", $0["peak_dbfs"]?.number ?? -200, $0["rms_dbfs"]?.number ?? -200)
      }.joined(separator: " ")
    }
    return "in " + side("input") + "   out " + side("output") + "   (peak/RMS dBFS)" + reductions
      + loudnessLine(object["loudness"].map(numbers))
  }

  /// The numbers of an object (`gain_reduction_db`, `loudness`) by key; other values left out.
  static func numbers(_ value: JSONValue?) -> [String: Double] {
    var result: [String: Double] = [:]
    for (key, item) in value?.object ?? [:] { result[key] = item.number }
    return result
  }

  /// `  M -18.2 S -19.0 I -20.1 LUFS TP -3.2 dBTP` from a `loudness` object ("-inf" when
  /// nothing is measured yet); empty without one.
  public static func loudnessLine(_ loudness: [String: Double]?) -> String {
    guard let l = loudness else { return "" }
    func v(_ key: String) -> String {
      let x = l[key] ?? -200
      return x <= -200 ? "-inf" : String(format: "%.1f", x)
    }
    return "  M \(v("momentary_lufs")) S \(v("shortterm_lufs")) I \(v("integrated_lufs")) LUFS"
      + " TP \(v("true_peak_dbtp")) dBTP"
  }

  /// One event stream line for people: `12:00:01.250 xrun new=1 total=3 …`.
  public static func eventLine(_ line: String) -> String {
    guard let object = (try? JSONValue.parse(line))?.object, let event = object["event"]?.string else {
      return line
    }
    let time = object["time"]?.string.map { String($0.dropFirst(11).prefix(12)) } ?? ""
    let fields = object.filter { !["time", "event", "stream"].contains($0.key) }.sorted { $0.key < $1.key }
      .map { "\($0.key)=" + ($0.value.string ?? $0.value.encoded()) }
    return ([time, event] + fields).joined(separator: " ")
  }

  /// The response for people: the fields without "ok", pretty-printed; or the error.
  public static func human(_ response: String) -> (ok: Bool, text: String) {
    guard let object = (try? JSONValue.parse(response))?.object else {
      return (false, "unreadable response: \(response)")
    }
    if object["ok"]?.bool != true { return (false, object["error"]?.string ?? response) }
    var fields = object
    fields["ok"] = nil
    return (true, fields.encoded(.pretty, sortedKeys: true))
  }
}

/// Why `livemic ctl` failed. One sentence.
public enum ControlClientError: CodedError {
  case usage(String)
  case connection(String)
  /// LiveMic did not answer in time.
  case timeout(String)

  public var description: String {
    switch self {
    case .usage(let m), .connection(let m), .timeout(let m): return m
    }
  }

  public var code: String {
    switch self {
    case .usage: return "ctl.usage"
    case .connection: return "ctl.connection"
    case .timeout: return "ctl.timeout"
    }
  }
}

/// One connection to a running LiveMic's control socket; one thread at a time. Never real-time.
public final class ControlConnection: @unchecked Sendable {
  private let fd: Int32
  private var buffered = Data()
  /// When reading gives up (nil: never), and whether it did.
  public var deadline: Date?
  public private(set) var timedOut = false

  /// Connects to the LiveMic named `name`.
  public init(name: String) throws(ControlClientError) {
    let path = ControlProtocol.socketPath(name: name)
    fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw .connection("no socket is available") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
    }
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard connected == 0 else {
      close(fd)
      throw .connection("no LiveMic named '\(name)' is running (nothing listens on \(path))")
    }
  }

  deinit { close(fd) }

  /// Sends one request and returns its response line (stream lines that arrive first are
  /// skipped: they belong to a subscription).
  public func request(_ request: JSONObject) throws(ControlClientError) -> String {
    let line = Array(request.encoded().utf8) + [10]
    var sent = 0
    while sent < line.count {
      let n = line[sent...].withUnsafeBufferPointer {
        Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard n > 0 else { throw .connection("LiveMic closed the connection") }
      sent += n
    }
    while let response = readLine() {
      if !Self.isStreamLine(response) { return response }
    }
    throw .connection("LiveMic closed the connection without answering")
  }

  /// Whether `line` is a subscription's stream line (its `stream` is a string: `meters`,
  /// `event`), not an answer (a status answer has a `stream` object). A meters line that
  /// arrived before the answer to `subscribe` was once taken for it: "refused the subscription".
  static func isStreamLine(_ line: String) -> Bool {
    (try? JSONValue.parse(line))?["stream"]?.string != nil
  }

  /// The next line from LiveMic, or nil once it closed the connection.
  public func readLine() -> String? {
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      if let end = buffered.firstIndex(of: 10) {
        let line = String(decoding: buffered[buffered.startIndex..<end], as: UTF8.self)
        buffered = Data(buffered[(end + 1)...])
        return line
      }
      if let deadline {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // Clamped before converting: a deadline days away (`--timeout 1e10`) trapped here.
        let milliseconds = Int32(min(max(deadline.timeIntervalSinceNow * 1000, 0), Double(Int32.max)))
        let ready = poll(&waiting, 1, milliseconds)
        if ready < 0 && errno == EINTR { continue }
        if ready == 0 {
          timedOut = true
          return nil
        }
      }
      let n = read(fd, &chunk, chunk.count)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return nil }
      buffered.append(contentsOf: chunk[0..<n])
    }
  }
}
