import DSP
import Foundation
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A door beside the socket that follows stream topics of its own (the web door's feeds): the
/// supervisor's stream lines reach it through `ControlServer.broadcast`, and its following
/// counts in `hasSubscribers` (meters are read only while someone follows them).
///
/// Thread: `follows` and `send` are called on the supervisor's thread and must not wait.
protocol StreamSink: AnyObject, Sendable {
  /// True while some client of the door follows `topic`.
  func follows(_ topic: String) -> Bool
  /// Hands one stream line of `topic` to the door's clients that follow it, without waiting.
  func send(_ topic: String, _ line: String)
}

/// The control socket: a Unix domain socket at `$XDG_RUNTIME_DIR/livemic/NAME.sock` (mode 0600,
/// in a 0700 directory; `/tmp/livemic-UID/` when the variable is unset) speaking line-delimited
/// JSON, one request line, one response line (see docs/control.md).
///
/// Each connection has its own thread, which only parses; the request itself is handed to the
/// supervisor (`takeRequests`) and the connection waits for its answer, so every command runs
/// on the supervisor's thread. A connection that sends `{"cmd":"subscribe","topics":[...]}`
/// also receives stream lines (`{"stream":"meters",...}`, `{"stream":"event",...}`) written by
/// the supervisor through `broadcast`, never blocking it: a subscriber too slow to take a line
/// misses it, and one left with half a line is disconnected. Never real-time.
final class ControlServer: @unchecked Sendable {
  /// The topics a connection can subscribe to.
  static let topics = ControlProtocol.topics

  /// One client connection: its socket, a lock so responses and stream lines never interleave
  /// mid-line, and the topics it follows.
  final class Connection: @unchecked Sendable {
    let fd: Int32
    private let followed = Locked<Set<String>>([])
    /// Held while a line is written; false once the connection is closed for writing.
    private let writer = Locked<Bool>(true)
    init(fd: Int32) { self.fd = fd }

    /// The topics followed (changed only with their answer, by `changeTopics`).
    var topics: Set<String> { followed.withLock { $0 } }

    /// Changes the topics and writes `answer(topics)` while holding the writer, so no stream line
    /// goes out between the change and its answer: a subscriber reads the answer first (a
    /// stream line that finds the writer held is missed, as for any subscriber too slow to take
    /// it). False when the connection is closed for writing.
    func changeTopics(_ change: (inout Set<String>) -> Void, answer: (Set<String>) -> String) -> Bool {
      writer.withLock { open in
        let now = followed.withLock { topics in
          change(&topics)
          return topics
        }
        return write(Array((answer(now) + "\n").utf8), blocking: true, &open)
      }
    }

    /// Writes one line. `blocking: false` (stream lines) gives up rather than wait: when a
    /// response is being written, when the peer's buffer is full, and it closes the connection
    /// if only part of the line went out.
    func send(_ line: String, blocking: Bool) -> Bool {
      let bytes = Array((line + "\n").utf8)
      if blocking { return writer.withLock { open in write(bytes, blocking: true, &open) } }
      return writer.withLockIfAvailable { open in write(bytes, blocking: false, &open) } ?? false
    }

    private func write(_ bytes: [UInt8], blocking: Bool, _ open: inout Bool) -> Bool {
      guard open else { return false }
      var sent = 0
      while sent < bytes.count {
        let flags = Int32(MSG_NOSIGNAL) | (blocking ? 0 : Int32(MSG_DONTWAIT))
        let n = bytes[sent...].withUnsafeBufferPointer { Glibc.send(fd, $0.baseAddress, $0.count, flags) }
        if n > 0 {
          sent += n
          continue
        }
        if n < 0 && errno == EINTR { continue }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && sent == 0 { return false }
        // A broken peer, or half a line written: the stream can no longer be read as lines.
        open = false
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
        return false
      }
      return true
    }
  }

  /// A request waiting for the supervisor, and where its answer goes.
  final class Pending: @unchecked Sendable {
    let request: JSONObject
    private let done = DispatchSemaphore(value: 0)
    private(set) var response = ""
    init(_ request: JSONObject) { self.request = request }
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
  private let queue = Locked<[Pending]>([])
  private let subscribers = Locked<[Connection]>([])
  private let sinks = Locked<[any StreamSink]>([])
  /// Set by `close` (under `queue`'s lock): requests are refused from then on.
  private var closed = false
  private var closedReason = ""
  private let wake: DispatchSemaphore

  /// The socket path for a client name.
  static func socketPath(name: String) -> String { ControlProtocol.socketPath(name: name) }

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
    Thread.startOwn("livemic-control") { [unowned self] in self.acceptLoop() }
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

  /// True when some connection, or some door attached with `attach` (the web door's feeds),
  /// follows `topic` (the supervisor then reads meters at 20 Hz).
  func hasSubscribers(_ topic: String) -> Bool {
    subscribers.withLock { $0.contains { $0.topics.contains(topic) } }
      || sinks.withLock { $0.contains { $0.follows(topic) } }
  }

  /// Writes a stream line to every connection that follows `topic`, and hands it to every
  /// attached door that follows it, without waiting for any. Thread: the supervisor.
  func broadcast(_ topic: String, _ line: String) {
    let targets = subscribers.withLock { $0.filter { $0.topics.contains(topic) } }
    for connection in targets { _ = connection.send(line, blocking: false) }
    for sink in sinks.withLock({ $0 }) where sink.follows(topic) { sink.send(topic, line) }
  }

  /// Attaches a door that gets the stream lines of the topics it follows (the web door).
  func attach(_ sink: any StreamSink) { sinks.withLock { $0.append(sink) } }

  /// Detaches it again.
  func detach(_ sink: any StreamSink) { sinks.withLock { $0.removeAll { $0 === sink } } }

  /// Wakes the supervisor (a door's feed began to follow the meters: they start at once).
  func wakeSupervisor() { wake.signal() }

  private func acceptLoop() {
    while true {
      let fd = accept(listener, nil, nil)
      if fd < 0 {
        if errno == EINTR { continue }
        return
      }
      Thread.startOwn("livemic-control-\(fd)") { [unowned self] in self.serve(fd) }
    }
  }

  /// Reads request lines until the peer closes; a malformed line gets an error response and
  /// the connection goes on.
  private func serve(_ fd: Int32) {
    let connection = Connection(fd: fd)
    defer {
      subscribers.withLock { $0.removeAll { $0 === connection } }
      close(fd)
    }
    var pending = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fd, &chunk, chunk.count)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return }
      pending.append(contentsOf: chunk[0..<n])
      if pending.count > 1 << 20 {
        _ = connection.send(
          Self.error("a request line is longer than 1 MiB", code: "control.line-too-long"), blocking: true)
        return
      }
      while let newline = pending.firstIndex(of: 10) {
        let line = pending[pending.startIndex..<newline]
        pending = Data(pending[(newline + 1)...])
        if line.allSatisfy({ $0 == 32 || $0 == 13 }) { continue }
        switch handle(Data(line), connection) {
        case .answered(let written): if !written { return }
        case .answer(let response): if !connection.send(response, blocking: true) { return }
        }
      }
    }
  }

  /// What a request line got: an answer to write, or one already written (`written`: the
  /// connection is still open).
  private enum Reply {
    case answer(String)
    case answered(written: Bool)
  }

  private func handle(_ line: Data, _ connection: Connection) -> Reply {
    switch Self.parse(line) {
    case .failure(let refusal): return .answer(refusal.line)
    case .success(let (command, object)):
      switch command {
      case "subscribe", "unsubscribe": return subscription(command, object, connection)
      default: return .answer(submit(object))
      }
    }
  }

  /// A request line that is not a request: its error answer.
  struct Refusal: Error { let line: String }

  /// Parses one request line: its command and its object, or the error answer (the same for
  /// every door that takes lines).
  static func parse(_ line: Data) -> Result<(String, JSONObject), Refusal> {
    let value: JSONValue
    do { value = try JSONValue.parse(line) } catch {
      return .failure(
        Refusal(
          line: Self.error("the request is not valid JSON (\(error.reason))", code: "control.malformed-json"))
      )
    }
    guard let object = value.object else {
      return .failure(
        Refusal(line: error("the request must be a JSON object", code: "control.not-an-object")))
    }
    guard let command = object["cmd"]?.string else {
      return .failure(Refusal(line: error("the request has no \"cmd\" string", code: "control.no-command")))
    }
    return .success((command, object))
  }

  /// Answers one request line from a door without a connection of its own (the web door's
  /// `POST /api`): the same parsing and the same supervisor as a socket line, and the same
  /// answer line. Subscriptions belong to a connection: such a door streams by other means
  /// (the web door's `GET /events`). Any thread but the supervisor's.
  func respond(toLine line: Data) -> String {
    switch Self.parse(line) {
    case .failure(let refusal): return refusal.line
    case .success(let (command, object)):
      switch command {
      case "subscribe", "unsubscribe":
        return Self.error(
          "\(command) belongs to the socket; this door streams through its own feed (GET /events)",
          code: "control.socket-only")
      default: return submit(object)
      }
    }
  }

  /// `subscribe` adds topics (all when "topics" is absent), `unsubscribe` removes them (all
  /// when absent); the answer lists the topics now followed.
  private func subscription(_ command: String, _ object: JSONObject, _ connection: Connection)
    -> Reply
  {
    var named = Set(Self.topics)
    if let given = object["topics"] {
      guard let list = given.array?.compactMap(\.string), list.count == given.array?.count else {
        return .answer(
          Self.error("\"topics\" must be a list of strings (\(Self.topics.joined(separator: ", ")))"))
      }
      if let unknown = list.first(where: { !Self.topics.contains($0) }) {
        return .answer(
          Self.error("unknown topic '\(unknown)' (topics: \(Self.topics.joined(separator: ", ")))"))
      }
      named = Set(list)
    }
    let subscribing = command == "subscribe"
    if subscribing {
      subscribers.withLock { list in
        if !list.contains(where: { $0 === connection }) { list.append(connection) }
      }
    }
    // The topics change and the answer goes out together: the broadcasts, which filter on the
    // topics, can add no line before the answer.
    let written = connection.changeTopics { topics in
      if subscribing { topics.formUnion(named) } else { topics.subtract(named) }
    } answer: { now in
      Self.answer(["topics": JSONValue(now.sorted())])
    }
    if subscribing { wake.signal() }  // meters start at once
    return .answered(written: written)
  }

  /// Hands a request to the supervisor and waits for its answer (any thread but the
  /// supervisor's: the OSC door uses it too).
  func submit(_ object: JSONObject) -> String {
    let request = Pending(object)
    let queued = queue.withLock { q in
      guard !closed else { return false }
      q.append(request)
      return true
    }
    guard queued else { return Self.error(closedReason, code: "control.closing") }
    wake.signal()
    return request.wait()
  }

  /// Answers every request still waiting, and every later one, with `reason`: the supervisor's
  /// loop has ended, and a door's thread waiting for an answer must not wait for ever (the web
  /// door's daemon joins its threads when it stops). Thread: the supervisor.
  func closeRequests(reason: String) {
    let left = queue.withLock { q in
      closed = true
      closedReason = reason
      defer { q.removeAll() }
      return q
    }
    for request in left { request.answer(Self.error(reason, code: "control.closing")) }
  }

  /// One answer line: `{"ok": true}` with `fields`, keys sorted at every level (as answers have
  /// always been written; `ok` cannot be overridden).
  static func answer(_ fields: JSONObject) -> String {
    (["ok": true] as JSONObject).merging(fields).encoded(sortedKeys: true)
  }

  /// One error line: `{"ok": false, "error": message, "code": code}`, in that order.
  static func error(_ message: String, code: String = "control.refused") -> String {
    (["ok": false, "error": .string(message), "code": .string(code)] as JSONObject).encoded()
  }

  /// One stream line: `{"stream": name, ...fields}`, `stream` first (a client waiting for an
  /// answer tells the two apart by it) and the fields in their order.
  static func streamLine(_ name: String, _ fields: JSONObject) -> String {
    (["stream": .string(name)] as JSONObject).merging(fields).encoded()
  }
}
