import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A plain HTTP/1.1 client over one TCP connection, for the web door's tests: every header is
/// the test's to choose (a wrong Host, another site's Origin), which URLSession does not allow.
final class WebClient {
  struct Answer {
    let status: Int
    let headers: [String: String]
    let body: String
    /// The body as a JSON object (empty when it is none).
    var json: [String: Any] { jsonObject(body.trimmingCharacters(in: .whitespacesAndNewlines)) }
  }

  let port: Int
  private var fd: Int32 = -1

  init(port: Int) { self.port = port }
  deinit { if fd >= 0 { close(fd) } }

  /// Connects to 127.0.0.1:`port`; the file descriptor, or -1.
  static func connect(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard ok == 0 else {
      close(fd)
      return -1
    }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    return fd
  }

  /// One request; `headers` replace the defaults (`Host: 127.0.0.1:PORT`). Nil: no answer.
  func request(
    _ method: String, _ path: String, headers: [String: String] = [:], body: Data = Data()
  ) -> Answer? {
    if fd < 0 { fd = Self.connect(port: port) }
    guard fd >= 0 else { return nil }
    var all = ["Host": "127.0.0.1:\(port)"]
    if !body.isEmpty || method == "POST" { all["Content-Length"] = "\(body.count)" }
    for (k, v) in headers { all[k] = v }
    var text = "\(method) \(path) HTTP/1.1\r\n"
    for (k, v) in all.sorted(by: { $0.key < $1.key }) where !v.isEmpty { text += "\(k): \(v)\r\n" }
    text += "\r\n"
    let bytes = Array(text.utf8) + Array(body)
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBufferPointer {
        send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if n <= 0 { return reset() }
      sent += n
    }
    return readAnswer()
  }

  /// `POST /api` with one JSON line and the token as a bearer.
  func api(_ line: String, token: String) -> Answer? {
    request(
      "POST", "/api", headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
      body: Data(line.utf8))
  }

  private var buffered = [UInt8]()

  private func readAnswer() -> Answer? {
    guard let end = readUntil(Array("\r\n\r\n".utf8)) else { return reset() }
    let head = String(decoding: buffered[..<end], as: UTF8.self)
    buffered.removeFirst(end + 4)
    var lines = head.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return reset() }
    var headers: [String: String] = [:]
    for line in lines {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
        in: .whitespaces)
    }
    let length = Int(headers["content-length"] ?? "0") ?? 0
    while buffered.count < length { if !fill() { return reset() } }
    let body = String(decoding: buffered[..<length], as: UTF8.self)
    buffered.removeFirst(length)
    if headers["connection"]?.lowercased() == "close" { _ = reset() }
    return Answer(status: status, headers: headers, body: body)
  }

  private func readUntil(_ marker: [UInt8]) -> Int? {
    while true {
      if buffered.count >= marker.count {
        for i in 0...(buffered.count - marker.count) where Array(buffered[i..<(i + marker.count)]) == marker {
          return i
        }
      }
      if !fill() { return nil }
    }
  }

  private func fill() -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let n = read(fd, &chunk, chunk.count)
    guard n > 0 else { return false }
    buffered += chunk[0..<n]
    return true
  }

  private func reset() -> Answer? {
    if fd >= 0 { close(fd) }
    fd = -1
    buffered = []
    return nil
  }
}

/// A `GET /events` feed read on a thread of its own: the `data:` lines as they come, with when.
final class WebFeed: @unchecked Sendable {
  private let fd: Int32
  private let received = Mutex<[(time: Date, line: String)]>([])
  let status = Mutex<Int>(0)
  private let done = Atomic<Bool>(false)

  init?(port: Int, token: String, topics: String = "meters,events") {
    fd = WebClient.connect(port: port)
    guard fd >= 0 else { return nil }
    let text =
      "GET /events?topics=\(topics) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n"
    _ = Array(text.utf8).withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    let thread = Thread { [self] in self.readLoop() }
    thread.start()
  }

  deinit { close() }

  /// Every data line so far.
  var lines: [(time: Date, line: String)] { received.withLock { $0 } }

  func close() {
    guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
    shutdown(fd, Int32(SHUT_RDWR))
  }

  private func readLoop() {
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 16384)
    while !done.load(ordering: .acquiring) {
      let n = read(fd, &chunk, chunk.count)
      if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
      if n <= 0 { break }
      bytes += chunk[0..<n]
      // Bytes, not a String: "\r\n" is one Character, which a search for "\n" does not find.
      while let newline = bytes.firstIndex(of: 10) {
        var lineBytes = bytes[..<newline]
        if lineBytes.last == 13 { lineBytes = lineBytes.dropLast() }
        let line = String(decoding: lineBytes, as: UTF8.self)
        bytes.removeSubrange(...newline)
        if line.hasPrefix("HTTP/1.1 "), let code = Int(line.split(separator: " ")[1]) {
          status.withLock { $0 = code }
        }
        if line.hasPrefix("data: ") {
          let entry = (time: Date(), line: String(line.dropFirst(6)))
          received.withLock { $0.append(entry) }
        }
      }
    }
    Glibc.close(fd)
  }
}
