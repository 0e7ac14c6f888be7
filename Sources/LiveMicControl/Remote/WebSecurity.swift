import DSP
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where the web door listens (`--web [ADDR:]PORT`): an IP literal (loopback unless told
/// otherwise; never a name, which would need a resolver) and a TCP port (0: any free one).
///
/// Thread: any (value type).
public struct WebBinding: Sendable, Equatable {
  public var host: String
  public var port: Int

  public init(host: String = "127.0.0.1", port: Int) { (self.host, self.port) = (host, port) }

  /// `PORT`, `ADDR:PORT` or `[IPV6]:PORT`; nil when it is none of these (a name, a port out
  /// of range).
  public static func parse(_ text: String) -> WebBinding? {
    var host = "127.0.0.1"
    var portText = Substring(text)
    if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
      host = String(text[text.index(after: text.startIndex)..<close])
      let rest = text[text.index(after: close)...]
      guard rest.hasPrefix(":") else { return nil }
      portText = rest.dropFirst()
    } else if let colon = text.lastIndex(of: ":") {
      host = String(text[..<colon])
      portText = text[text.index(after: colon)...]
    }
    guard let port = Int(portText), (0...65535).contains(port), WebHost.isIPLiteral(host) else { return nil }
    return WebBinding(host: host, port: port)
  }

  /// True for 127.0.0.0/8 and ::1.
  public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

  /// True for a wildcard address (0.0.0.0, ::): the door answers on every interface.
  public var isWildcard: Bool { host == "0.0.0.0" || host == "::" }

  /// The address as it goes into a URL (`[::1]` for IPv6).
  public var urlHost: String { host.contains(":") ? "[\(host)]" : host }
}

/// The token every request to the web door needs: made at first start, kept 0600 at
/// `$XDG_CONFIG_HOME/livemic/web-token` (`~/.config/livemic/web-token` when the variable is
/// unset), replaced by `livemic web token --rotate`. 32 random bytes, base64url.
///
/// Thread: any (files only).
public enum WebToken {
  /// The token file's path.
  public static var path: String {
    let config =
      ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
      ?? (NSHomeDirectory() + "/.config")
    return config + "/livemic/web-token"
  }

  /// The file beside a control socket (`NAME.sock`) that says where that LiveMic's web door
  /// listens, `HOST PORT` (`livemic doctor` reads it); it exists while the door is open.
  public static func doorFile(socket: String) -> String {
    (socket.hasSuffix(".sock") ? String(socket.dropLast(5)) : socket) + ".web"
  }

  /// The stored token, nil when there is none (or it is unreadable or empty).
  public static func read() -> String? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
    return token.isEmpty ? nil : token
  }

  /// The stored token, made and stored first when there is none; `created` says which.
  public static func ensure() throws(WebTokenError) -> (token: String, created: Bool) {
    if let token = read() {
      chmod(path, 0o600)  // a copy made by hand must not stay readable by others
      return (token, false)
    }
    return (try rotate(), true)
  }

  /// Makes a new token and stores it 0600 (atomically: the old one is valid until the new file
  /// replaces it); returns it.
  @discardableResult
  public static func rotate() throws(WebTokenError) -> String {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let token = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
      .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    let folder = (path as NSString).deletingLastPathComponent
    do {
      try FileManager.default.createDirectory(
        atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch { throw WebTokenError(path: path, reason: "its folder cannot be created") }
    let temporary = path + ".new"
    unlink(temporary)
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    guard fd >= 0 else { throw WebTokenError(path: path, reason: String(cString: strerror(errno))) }
    let line = Array((token + "\n").utf8)
    let written = line.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == line.count, rename(temporary, path) == 0 else {
      unlink(temporary)
      throw WebTokenError(path: path, reason: "it could not be written")
    }
    return token
  }

  /// Compares two tokens in time that does not depend on where they differ.
  static func matches(_ given: String?, _ token: String) -> Bool {
    guard let given else { return false }
    let a = Array(given.utf8)
    let b = Array(token.utf8)
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for i in 0..<b.count { difference |= (i < a.count ? a[i] : 0) ^ b[i] }
    return difference == 0
  }
}

/// The token file could not be made or written.
public struct WebTokenError: CodedError {
  public let path: String
  public let reason: String
  public var description: String { "cannot store the web token at '\(path)': \(reason)" }
  public var code: String { "web.token" }
}

/// The `Host` header rule against DNS rebinding: a request must name the door by an IP literal,
/// `localhost`, or the address it is bound to; a name some DNS server chose is refused.
enum WebHost {
  /// True for an IPv4 or IPv6 literal (IPv6 without brackets).
  static func isIPLiteral(_ text: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
  }

  /// The name part of a `Host` header (`[::1]:8080` → `::1`, `a:80` → `a`), lowercased.
  static func name(of header: String) -> String {
    let text = header.lowercased()
    if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
      return String(text[text.index(after: text.startIndex)..<close])
    }
    if let colon = text.lastIndex(of: ":") { return String(text[..<colon]) }
    return text
  }

  /// True when `header` may name a door bound to `binding`.
  static func allowed(_ header: String?, binding: WebBinding) -> Bool {
    guard let header, !header.isEmpty else { return false }
    let host = name(of: header)
    return host == "localhost" || isIPLiteral(host) || host == binding.host.lowercased()
  }
}

/// A per-client rate limit: a token bucket per peer address, `perSecond` refilled up to `burst`.
/// Thread: any (locked).
final class WebRateLimit: Sendable {
  private struct Bucket {
    var tokens: Double
    var last: UInt64
  }
  let perSecond: Double
  let burst: Double
  private let buckets = Mutex<[String: Bucket]>([:])

  init(perSecond: Double, burst: Double) { (self.perSecond, self.burst) = (perSecond, burst) }

  /// Takes one request from `client`'s bucket; false when it is empty.
  func allow(_ client: String) -> Bool {
    buckets.withLock { all in
      // Read under the lock: a time read before it could be older than a bucket's `last`.
      let now = DispatchTime.now().uptimeNanoseconds
      if all.count > 1024 { all.removeAll() }  // a flood of addresses cannot grow it for ever
      var bucket = all[client] ?? Bucket(tokens: burst, last: now)
      bucket.tokens = min(burst, bucket.tokens + Double(now &- min(now, bucket.last)) / 1e9 * perSecond)
      bucket.last = now
      let allowed = bucket.tokens >= 1
      if allowed { bucket.tokens -= 1 }
      all[client] = bucket
      return allowed
    }
  }
}

/// A request the web door refuses: its HTTP status, one sentence and a `web.*` code.
struct WebRefusal: Error {
  let status: UInt32
  let code: String
  let message: String

  /// The answer body: the control protocol's error line.
  var body: String { ControlServer.error(message, code: code) }

  static let unauthorized = WebRefusal(
    status: 401, code: "web.unauthorized",
    message: "this LiveMic needs its web token (open the URL it printed, or run 'livemic web token')")
  static let host = WebRefusal(
    status: 421, code: "web.host",
    message: "the Host header must be an IP address, localhost or the address LiveMic listens on")
  static let origin = WebRefusal(
    status: 403, code: "web.origin", message: "a request from another site's page is refused")
  static let rate = WebRefusal(
    status: 429, code: "web.rate-limited", message: "too many requests from this address; wait a second")
  static let tooLarge = WebRefusal(
    status: 413, code: "web.too-large", message: "a request body may hold at most 64 KiB")
  static let contentType = WebRefusal(
    status: 415, code: "web.content-type", message: "POST /api takes a body of type application/json")
  static let empty = WebRefusal(
    status: 400, code: "web.empty",
    message: "POST /api takes one control request as its body, and it was empty")
  static let oneRequest = WebRefusal(
    status: 400, code: "web.one-request",
    message: "POST /api takes exactly one control request, not several lines")
  static let notFound = WebRefusal(
    status: 404, code: "web.not-found", message: "there is no such page (try /, /api or /events)")
  static let method = WebRefusal(
    status: 405, code: "web.method",
    message: "this path does not take that method (GET /, GET /events, POST /api)")
  static let streams = WebRefusal(
    status: 503, code: "web.too-many-feeds", message: "too many event feeds are open; close a page")
  static func topic(_ name: String) -> WebRefusal {
    WebRefusal(
      status: 400, code: "web.unknown-topic",
      message: "unknown topic '\(name)' (topics: \(ControlProtocol.topics.joined(separator: ", ")))")
  }
}
