import CMicroHTTPD
import DSP
import Foundation
import LiveMicEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The web door (`--web [ADDR:]PORT`, docs/web.md): the page and the control protocol over
/// HTTP, served by libmicrohttpd on its own threads (a listening thread and one per
/// connection), never on the supervisor's loop and never near the audio thread.
///
/// One protocol, three transports: `POST /api` takes exactly one control request (a socket
/// line) and answers the same answer line, through the socket's own parsing and the same
/// supervisor (`ControlServer.respond(toLine:)`); `GET /events?topics=meters,events` is a
/// Server-Sent Events feed of exactly the stream lines the socket's subscribers get (the door
/// is attached to the control server as a `StreamSink`: meters are read only while some feed or
/// subscriber follows them). `GET /` is the page (WebPage), `GET /app.js` and `/app.css` its
/// script and style.
///
/// Every request must pass, in order: the Host rule (DNS rebinding), the Origin rule (another
/// site's page), the rate limit, the token (a `?token=` query, which also sets the cookie, the
/// HttpOnly SameSite=Strict cookie, or `Authorization: Bearer`), then its route's own limits.
/// Only the page shell's login form is answered without the token (status 401, nothing of the
/// rig in it).
final class WebDoor: StreamSink, @unchecked Sendable {
  /// The largest request body taken.
  static let maxBody = 64 * 1024
  /// Event feeds open at once.
  static let maxFeeds = 16
  /// Requests per second per client address, and the burst allowed, with the token: enough for
  /// six pages of one machine beside a script (one address), few enough that a runaway client
  /// cannot keep the supervisor from answering the others.
  static let ratePerSecond = 400.0
  static let rateBurst = 400.0
  /// The same without the token (or with a wrong one): guessing is slow.
  static let strangerRatePerSecond = 20.0
  static let strangerRateBurst = 60.0

  /// Where the door listens (the port resolved when 0 was asked for).
  let binding: WebBinding
  /// The token, read again from its file when that changes (checked at most once a second), so
  /// `livemic web token --rotate` locks out the old one at once.
  private let tokenState: Mutex<(token: String, checked: UInt64, modified: timespec)>
  private var token: String {
    tokenState.withLock { state in
      let now = DispatchTime.now().uptimeNanoseconds
      guard now > state.checked + 1_000_000_000 else { return state.token }
      state.checked = now
      var info = stat()
      if stat(WebToken.path, &info) == 0,
        info.st_mtim.tv_sec != state.modified.tv_sec || info.st_mtim.tv_nsec != state.modified.tv_nsec,
        let fresh = WebToken.read()
      {
        state.token = fresh
        state.modified = info.st_mtim
      }
      return state.token
    }
  }
  /// A file beside the control socket saying where the door listens (for `livemic doctor`),
  /// removed at shutdown.
  var markerPath: String?
  private let control: ControlServer
  private let rate = WebRateLimit(perSecond: WebDoor.ratePerSecond, burst: WebDoor.rateBurst)
  private let strangerRate = WebRateLimit(
    perSecond: WebDoor.strangerRatePerSecond, burst: WebDoor.strangerRateBurst)
  private let feeds = Locked<[Feed]>([])
  private var daemon: OpaquePointer?

  /// The cookie that carries the token; its name holds the port, since cookies are kept per
  /// host, not per port (two LiveMics on one machine keep two cookies).
  var cookieName: String { "livemic-token-\(binding.port)" }

  /// The page's address with the token, as printed at start.
  var url: String { "http://\(displayHost):\(binding.port)/?token=\(token)" }

  /// The host to print: the bound address, or this machine's first LAN address for a wildcard.
  private var displayHost: String {
    binding.isWildcard ? (Self.lanAddress() ?? "127.0.0.1") : binding.urlHost
  }

  /// Starts the daemon on `binding`; `token` is required on every request.
  init(binding requested: WebBinding, token: String, control: ControlServer) throws(SessionError) {
    var info = stat()
    let modified = stat(WebToken.path, &info) == 0 ? info.st_mtim : timespec()
    tokenState = Mutex((token, DispatchTime.now().uptimeNanoseconds, modified))
    self.control = control
    let (fd, port) = try Self.listen(on: requested)
    binding = WebBinding(host: requested.host, port: port)
    let family = requested.host.contains(":") ? AF_INET6 : AF_INET
    guard
      let started = livemic_mhd_start(
        fd, family, webAccessHandler, Unmanaged.passUnretained(self).toOpaque(), webRequestCompleted, 64, 60,
        512 * 1024)
    else {
      Glibc.close(fd)
      throw .web(reason: "libmicrohttpd did not start on \(requested.urlHost):\(port)")
    }
    daemon = started
    control.attach(self)
  }

  /// Ends every feed and stops the daemon (its threads are joined). Thread: the supervisor.
  func shutdown() {
    control.detach(self)
    for feed in feeds.withLock({ $0 }) { feed.close() }
    if let daemon { MHD_stop_daemon(daemon) }
    daemon = nil
    if let markerPath { unlink(markerPath) }
  }

  // MARK: StreamSink

  func follows(_ topic: String) -> Bool { feeds.withLock { $0.contains { $0.topics.contains(topic) } } }

  func send(_ topic: String, _ line: String) {
    for feed in feeds.withLock({ $0 }) where feed.topics.contains(topic) { feed.offer(line) }
  }

  // MARK: Requests (libmicrohttpd's connection threads)

  /// One request's state between libmicrohttpd's calls: its body so far, and a refusal decided
  /// before the body was read.
  final class Request {
    var body = Data()
    var refusal: WebRefusal?
  }

  func handle(
    _ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
    uploadSize: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
  ) -> MHD_Result {
    guard let raw = context.pointee else {
      // The first call: the headers are in; the body (if any) comes in the next calls.
      let request = Request()
      request.refusal = admit(connection, method: method)
      if request.refusal == nil, let length = header(connection, "Content-Length").flatMap(Int.init),
        length > Self.maxBody
      {
        request.refusal = .tooLarge
      }
      context.pointee = Unmanaged.passRetained(request).toOpaque()
      return .YES
    }
    let request = Unmanaged<Request>.fromOpaque(raw).takeUnretainedValue()
    if uploadSize.pointee > 0 {
      if request.refusal == nil, let upload {
        if request.body.count + uploadSize.pointee > Self.maxBody {
          request.refusal = .tooLarge
          request.body = Data()
        } else {
          upload.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
            request.body.append($0, count: uploadSize.pointee)
          }
        }
      }
      uploadSize.pointee = 0
      return .YES
    }
    if let refusal = request.refusal { return refuse(connection, refusal) }
    return route(connection, url: url, method: method, body: request.body)
  }

  /// The checks every request passes before its route: Host, Origin, the rate of its kind (with
  /// or without the token); nil when it may go on. The token itself is checked by the route
  /// (the page shell answers its login form without it).
  private func admit(_ connection: OpaquePointer, method: String) -> WebRefusal? {
    guard WebHost.allowed(header(connection, "Host"), binding: binding) else { return .host }
    if header(connection, "Sec-Fetch-Site") == "cross-site" { return .origin }
    if let origin = header(connection, "Origin"), origin != "http://" + (header(connection, "Host") ?? "") {
      return .origin
    }
    let bucket = authorized(connection) ? rate : strangerRate
    guard bucket.allow(peer(connection)) else { return .rate }
    return nil
  }

  /// The token the request carries is the door's.
  private func authorized(_ connection: OpaquePointer) -> Bool {
    let token = token
    if WebToken.matches(argument(connection, "token"), token) { return true }
    if WebToken.matches(cookie(connection, cookieName), token) { return true }
    if let bearer = header(connection, "Authorization"), bearer.hasPrefix("Bearer ") {
      return WebToken.matches(String(bearer.dropFirst(7)), token)
    }
    return false
  }

  private func route(_ connection: OpaquePointer, url: String, method: String, body: Data) -> MHD_Result {
    let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    guard authorized(connection) else {
      if path == "/" && method == "GET" {
        return answer(
          connection, status: 401, body: WebPage.login, type: "text/html; charset=utf-8", page: true)
      }
      return refuse(connection, .unauthorized)
    }
    // A token given in the query becomes the cookie; the page drops it from the address.
    let token = token
    let fromQuery = WebToken.matches(argument(connection, "token"), token)
    switch (method, path) {
    case ("GET", "/"):
      if fromQuery { return redirectSettingCookie(connection) }
      return answer(connection, status: 200, body: WebPage.html, type: "text/html; charset=utf-8", page: true)
    case ("GET", "/app.js"):
      return answer(connection, status: 200, body: WebPage.script, type: "text/javascript; charset=utf-8")
    case ("GET", "/app.css"):
      return answer(connection, status: 200, body: WebPage.style, type: "text/css; charset=utf-8")
    case ("POST", "/api"): return api(connection, body: body)
    case ("GET", "/events"): return events(connection)
    case (_, "/"), (_, "/app.js"), (_, "/app.css"), (_, "/api"), (_, "/events"):
      return refuse(connection, .method)
    default: return refuse(connection, .notFound)
    }
  }

  /// `POST /api`: one control request, one answer line (HTTP 200 whatever the answer says: the
  /// protocol's own `ok`, `error` and `code` tell).
  private func api(_ connection: OpaquePointer, body: Data) -> MHD_Result {
    let type = (header(connection, "Content-Type") ?? "").lowercased()
    guard type.hasPrefix("application/json") else { return refuse(connection, .contentType) }
    let lines = body.split(separator: 10).filter { !$0.allSatisfy { $0 == 32 || $0 == 13 || $0 == 9 } }
    guard let line = lines.first else { return refuse(connection, .empty) }
    guard lines.count == 1 else { return refuse(connection, .oneRequest) }
    let reply = control.respond(toLine: Data(line))
    return answer(connection, status: 200, body: reply + "\n", type: "application/json")
  }

  /// `GET /events?topics=meters,events`: a Server-Sent Events feed of the stream lines.
  private func events(_ connection: OpaquePointer) -> MHD_Result {
    var topics = Set(ControlProtocol.topics)
    if let given = argument(connection, "topics") {
      let names = given.split(separator: ",").map(String.init)
      if let unknown = names.first(where: { !ControlProtocol.topics.contains($0) }) {
        return refuse(connection, .topic(unknown))
      }
      topics = Set(names)
    }
    let feed = Feed(topics: topics)
    let admitted = feeds.withLock { list in
      guard list.count < Self.maxFeeds else { return false }
      list.append(feed)
      return true
    }
    guard admitted else { return refuse(connection, .streams) }
    control.wakeSupervisor()  // meters start at once
    let context = Unmanaged.passRetained(FeedContext(feed: feed, door: self)).toOpaque()
    guard
      let response = MHD_create_response_from_callback(
        livemic_mhd_size_unknown, 16 * 1024, webFeedRead, context, webFeedFree)
    else {
      Unmanaged<FeedContext>.fromOpaque(context).release()
      remove(feed)
      return .NO
    }
    addCommonHeaders(response)
    MHD_add_response_header(response, "Content-Type", "text/event-stream")
    MHD_add_response_header(response, "X-Accel-Buffering", "no")
    let queued = MHD_queue_response(connection, 200, response)
    MHD_destroy_response(response)
    return queued
  }

  /// Forgets a feed whose client went away.
  func remove(_ feed: Feed) { feeds.withLock { $0.removeAll { $0 === feed } } }

  private func redirectSettingCookie(_ connection: OpaquePointer) -> MHD_Result {
    let token = token
    guard let response = MHD_create_response_from_buffer(0, nil, livemic_mhd_persistent) else { return .NO }
    addCommonHeaders(response)
    MHD_add_response_header(
      response, "Set-Cookie", "\(cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000")
    MHD_add_response_header(response, "Location", "/")
    let queued = MHD_queue_response(connection, 303, response)
    MHD_destroy_response(response)
    return queued
  }

  private func refuse(_ connection: OpaquePointer, _ refusal: WebRefusal) -> MHD_Result {
    answer(connection, status: refusal.status, body: refusal.body + "\n", type: "application/json") {
      response in
      if refusal.status == 429 { MHD_add_response_header(response, "Retry-After", "1") }
    }
  }

  private func answer(
    _ connection: OpaquePointer, status: UInt32, body: String, type: String, page: Bool = false,
    extra: (OpaquePointer) -> Void = { _ in }
  ) -> MHD_Result {
    var bytes = Array(body.utf8)
    let made = bytes.withUnsafeMutableBytes {
      MHD_create_response_from_buffer($0.count, $0.baseAddress, livemic_mhd_must_copy)
    }
    guard let response = made else { return .NO }
    addCommonHeaders(response)
    MHD_add_response_header(response, "Content-Type", type)
    if page {
      MHD_add_response_header(
        response, "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
          + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    }
    extra(response)
    let queued = MHD_queue_response(connection, status, response)
    MHD_destroy_response(response)
    return queued
  }

  private func addCommonHeaders(_ response: OpaquePointer) {
    MHD_add_response_header(response, "Cache-Control", "no-store")
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff")
    MHD_add_response_header(response, "X-Frame-Options", "DENY")
    MHD_add_response_header(response, "Referrer-Policy", "no-referrer")
  }

  private func header(_ connection: OpaquePointer, _ name: String) -> String? {
    MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
  }

  private func argument(_ connection: OpaquePointer, _ name: String) -> String? {
    MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, name).map { String(cString: $0) }
  }

  private func cookie(_ connection: OpaquePointer, _ name: String) -> String? {
    MHD_lookup_connection_value(connection, .COOKIE_KIND, name).map { String(cString: $0) }
  }

  /// The client's address, for the rate limit.
  private func peer(_ connection: OpaquePointer) -> String {
    guard let address = livemic_mhd_client_address(connection) else { return "?" }
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    if address.pointee.sa_family == sa_family_t(AF_INET6) {
      address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { six in
        var a = six.pointee.sin6_addr
        _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
      }
    } else {
      address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { four in
        var a = four.pointee.sin_addr
        _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
      }
    }
    return Self.text(text)
  }

  /// A listening TCP socket on `binding` and the port it got (the one asked for, or a free one
  /// for 0).
  private static func listen(on binding: WebBinding) throws(SessionError) -> (Int32, Int) {
    var storage = sockaddr_storage()
    let length = socketAddress(binding, into: &storage)
    guard length > 0 else { throw .web(reason: "'\(binding.host)' is not an IP address") }
    let fd = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .web(reason: "no socket is available") }
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
    }
    guard bound == 0, Glibc.listen(fd, 32) == 0 else {
      let reason = String(cString: strerror(errno))
      Glibc.close(fd)
      throw .web(reason: "cannot listen on \(binding.urlHost):\(binding.port) (\(reason))")
    }
    var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
    }
    let port =
      storage.ss_family == sa_family_t(AF_INET6)
      ? withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          Int(UInt16(bigEndian: $0.pointee.sin6_port))
        }
      }
      : withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
          Int(UInt16(bigEndian: $0.pointee.sin_port))
        }
      }
    return (fd, port)
  }

  /// Fills `storage` with `binding`'s address; its length, 0 when the host is no IP literal.
  private static func socketAddress(_ binding: WebBinding, into storage: inout sockaddr_storage) -> Int {
    withUnsafeMutablePointer(to: &storage) { pointer in
      if binding.host.contains(":") {
        return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { six in
          six.pointee.sin6_family = sa_family_t(AF_INET6)
          six.pointee.sin6_port = UInt16(binding.port).bigEndian
          return inet_pton(AF_INET6, binding.host, &six.pointee.sin6_addr) == 1
            ? MemoryLayout<sockaddr_in6>.size : 0
        }
      }
      return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { four in
        four.pointee.sin_family = sa_family_t(AF_INET)
        four.pointee.sin_port = UInt16(binding.port).bigEndian
        return inet_pton(AF_INET, binding.host, &four.pointee.sin_addr) == 1
          ? MemoryLayout<sockaddr_in>.size : 0
      }
    }
  }

  /// A C string in a buffer.
  private static func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// This machine's first non-loopback IPv4 address (for the URL of a door on every interface).
  static func lanAddress() -> String? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var entry = list
    while let current = entry {
      defer { entry = current.pointee.ifa_next }
      guard let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else {
        continue
      }
      var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN) + 1)
      address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { four in
        var a = four.pointee.sin_addr
        _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
      }
      let name = Self.text(text)
      if !name.hasPrefix("127.") { return name }
    }
    return nil
  }
}
