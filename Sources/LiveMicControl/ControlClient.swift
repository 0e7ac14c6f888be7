import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `livemic ctl`: sends one request to a running LiveMic's control socket and returns its
/// answer. Never real-time.
public enum ControlClient {
  /// Builds the request for `ctl` arguments (`set eq.bass_db 3`, `route override a,b`, …).
  public static func request(_ words: [String]) throws(ControlClientError) -> [String: Any] {
    guard let command = words.first else {
      throw .usage("ctl needs a command (status, get, set, preset, mute, unmute, route, connections)")
    }
    let rest = Array(words.dropFirst())
    switch (command, rest.count) {
    case ("status", 0), ("unmute", 0), ("connections", 0): return ["cmd": command]
    case ("meters", 0): return ["cmd": "meters"]
    case ("learn", 1): return ["cmd": "learn", "key": rest[0]]
    case ("meters", 1) where rest[0] == "--once": return ["cmd": "meters"]
    case ("get", 0): return ["cmd": "get"]
    case ("get", 1): return ["cmd": "get", "key": rest[0]]
    case ("set", 2):
      if let number = Double(rest[1]) { return ["cmd": "set", "key": rest[0], "value": number] }
      switch rest[1].lowercased() {
      case "on", "true": return ["cmd": "set", "key": rest[0], "value": true]
      case "off", "false": return ["cmd": "set", "key": rest[0], "value": false]
      default: throw .usage("'\(rest[1])' is not a number (or on/off)")
      }
    case ("preset", 2) where rest[0] == "load" || rest[0] == "save":
      return ["cmd": "preset", "action": rest[0], "name": rest[1]]
    case ("mute", 0): return ["cmd": "mute"]
    case ("mute", 2) where rest[0] == "--mode": return ["cmd": "mute", "mode": rest[1]]
    case ("route", 0): return ["cmd": "route"]
    case ("route", 1) where rest[0] == "clear": return ["cmd": "route", "action": "clear"]
    case ("route", 2) where rest[0] == "override":
      return ["cmd": "route", "action": "override", "ports": rest[1].split(separator: ",").map(String.init)]
    default:
      throw .usage("'ctl \(words.joined(separator: " "))' is not a ctl command; see 'livemic help ctl'")
    }
  }

  /// Sends `request` to the LiveMic named `name` and returns the response line.
  public static func send(_ request: [String: Any], name: String) throws(ControlClientError) -> String {
    let path = ControlServer.socketPath(name: name)
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw .connection("no socket is available") }
    defer { close(fd) }
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
      throw .connection("no LiveMic named '\(name)' is running (nothing listens on \(path))")
    }
    guard let data = try? JSONSerialization.data(withJSONObject: request, options: [.sortedKeys]) else {
      throw .usage("the request cannot be encoded")
    }
    let line = Array(data) + [10]
    _ = line.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
    var response = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !response.contains(10) {
      let n = read(fd, &chunk, chunk.count)
      if n <= 0 { break }
      response.append(contentsOf: chunk[0..<n])
    }
    guard let end = response.firstIndex(of: 10) else {
      throw .connection("LiveMic closed the connection without answering")
    }
    return String(decoding: response[..<end], as: UTF8.self)
  }

  /// One line of meters for people: `in -12.3/-20.1 -12.0/-19.8  out …` (peak/RMS dBFS).
  public static func meterLine(_ response: String) -> String? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any],
      object["ok"] as? Bool == true
    else { return nil }
    func side(_ key: String) -> String {
      (object[key] as? [[String: Double]] ?? []).map {
        String(format: "%6.1f/%6.1f", $0["peak_dbfs"] ?? -200, $0["rms_dbfs"] ?? -200)
      }.joined(separator: " ")
    }
    return "in " + side("input") + "   out " + side("output") + "   (peak/RMS dBFS)"
  }

  /// The response for people: the fields without "ok", pretty-printed; or the error.
  public static func human(_ response: String) -> (ok: Bool, text: String) {
    guard let object = try? JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any] else {
      return (false, "unreadable response: \(response)")
    }
    if object["ok"] as? Bool != true { return (false, object["error"] as? String ?? response) }
    var fields = object
    fields["ok"] = nil
    let data =
      (try? JSONSerialization.data(
        withJSONObject: fields, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
    return (true, String(decoding: data, as: UTF8.self))
  }
}

/// Why `livemic ctl` failed. One sentence.
public enum ControlClientError: Error, CustomStringConvertible {
  case usage(String)
  case connection(String)

  public var description: String {
    switch self {
    case .usage(let m), .connection(let m): return m
    }
  }
}
