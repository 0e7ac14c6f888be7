import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The control socket: a Unix domain socket at `$XDG_RUNTIME_DIR/livemic/NAME.sock` (mode 0600,
/// in a 0700 directory; `/tmp/livemic-UID/` when the variable is unset) speaking line-delimited
/// JSON, one request line, one response line (see docs/control.md).
///
/// Each connection has its own thread, which only parses; the request itself is handed to the
/// supervisor (`takeRequests`) and the connection waits for its answer, so every command runs
/// on the supervisor's thread. Never real-time.
final class ControlServer: @unchecked Sendable {
  /// A request waiting for the supervisor, and where its answer goes.
  final class Pending: @unchecked Sendable {
    let request: [String: JSONValue]
    private let done = DispatchSemaphore(value: 0)
    private(set) var response = ""
    init(_ request: [String: JSONValue]) { self.request = request }
    func answer(_ line: String) {
      response = line
      done.signal()
    }
    func wait() -> String {
      done.wait()
      return response
    }
  }

  let path: String
  private let listener: Int32
  private let queue = Mutex<[Pending]>([])
  private let wake: DispatchSemaphore

  /// The socket path for a client name.
  static func socketPath(name: String) -> String {
    let base: String
    if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
      base = runtime + "/livemic"
    } else {
      base = "/tmp/livemic-\(getuid())"
    }
    return base + "/\(name).sock"
  }

  /// Binds and listens; `wake` is signalled when a request arrives.
  init(name: String, wake: DispatchSemaphore) throws(SessionError) {
    path = Self.socketPath(name: name)
    self.wake = wake
    let directory = (path as NSString).deletingLastPathComponent
    mkdir(directory, 0o700)
    unlink(path)
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard listener >= 0, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      throw .control(path: path, reason: "the path is too long or no socket is available")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
      raw[bytes.count] = 0
    }
    let old = umask(0o177)  // the socket file is created 0600
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    umask(old)
    guard bound == 0, listen(listener, 8) == 0 else {
      close(listener)
      throw .control(path: path, reason: String(cString: strerror(errno)))
    }
    chmod(path, 0o600)
    let thread = Thread { [unowned self] in self.acceptLoop() }
    thread.name = "livemic-control"
    thread.start()
  }

  /// Removes the socket file.
  func shutdown() {
    Glibc.shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
    unlink(path)
  }

  /// The requests that arrived since the last call (supervisor thread).
  func takeRequests() -> [Pending] {
    queue.withLock { q in
      defer { q.removeAll() }
      return q
    }
  }

  private func acceptLoop() {
    while true {
      let fd = accept(listener, nil, nil)
      if fd < 0 {
        if errno == EINTR { continue }
        return
      }
      let thread = Thread { [unowned self] in self.serve(fd) }
      thread.start()
    }
  }

  /// Reads request lines until the peer closes; a malformed line gets an error response and
  /// the connection goes on.
  private func serve(_ fd: Int32) {
    defer { close(fd) }
    var pending = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fd, &chunk, chunk.count)
      if n <= 0 { return }
      pending.append(contentsOf: chunk[0..<n])
      if pending.count > 1 << 20 {
        _ = send(fd, Self.error("a request line is longer than 1 MiB"))
        return
      }
      while let newline = pending.firstIndex(of: 10) {
        let line = pending[pending.startIndex..<newline]
        pending = Data(pending[(newline + 1)...])
        if line.allSatisfy({ $0 == 32 || $0 == 13 }) { continue }
        let response = handle(Data(line))
        if !send(fd, response) { return }
      }
    }
  }

  private func handle(_ line: Data) -> String {
    let value: JSONValue
    do { value = try JSONValue.parse(line) } catch {
      return Self.error("the request is not valid JSON (\(error.reason))")
    }
    guard let object = value.object else { return Self.error("the request must be a JSON object") }
    guard object["cmd"]?.string != nil else { return Self.error("the request has no \"cmd\" string") }
    return submit(object)
  }

  /// Hands a request to the supervisor and waits for its answer (any thread but the
  /// supervisor's: the OSC door uses it too).
  func submit(_ object: [String: JSONValue]) -> String {
    let request = Pending(object)
    queue.withLock { $0.append(request) }
    wake.signal()
    return request.wait()
  }

  private func send(_ fd: Int32, _ line: String) -> Bool {
    let bytes = Array((line + "\n").utf8)
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
      if n <= 0 { return false }
      sent += n
    }
    return true
  }

  static func error(_ message: String) -> String {
    "{\"ok\":false,\"error\":\(EventStream.quote(message))}"
  }
}
