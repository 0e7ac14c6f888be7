import CLo
import DSP
import Foundation
import LiveMicEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A client of the NSM session-manager protocol (New Session Manager, Non Session Manager,
/// RaySession, Agordejo), spoken when `NSM_URL` is set: LiveMic announces itself, waits for
/// `/nsm/client/open` (whose client id becomes its JACK name and whose path is the directory
/// its state lives in), and answers `/nsm/client/save` by writing that state.
///
/// The OSC messages are built and read with liblo over LiveMic's own UDP socket; a thread
/// receives them and hands `open` and `save` to the supervisor, which answers. Never real-time.
final class NsmClient: @unchecked Sendable {
  /// What `/nsm/client/open` asks for.
  struct Open: Sendable {
    /// The path prefix LiveMic keeps its state under (LiveMic uses it as a directory).
    let path: String
    let displayName: String
    /// The client id: LiveMic's JACK client name.
    let clientId: String
  }

  /// Why NSM could not be joined; one sentence.
  struct Failure: Error {
    let message: String
  }

  let url: String
  private let fd: Int32
  private var server = sockaddr_storage()
  private var serverLength = socklen_t(0)
  private let opens = Locked<[Open]>([])
  private let saves = Atomic<Int>(0)
  private let wake: DispatchSemaphore
  /// The session manager's name, once it accepted the announce.
  let managerName = Locked<String?>(nil)

  /// Resolves `osc.udp://HOST:PORT/` and opens LiveMic's socket (any address, a free port).
  init(url: String, wake: DispatchSemaphore) throws(Failure) {
    self.url = url
    self.wake = wake
    guard url.hasPrefix("osc.udp://") else {
      throw Failure(message: "NSM_URL '\(url)' is not an osc.udp:// address")
    }
    let hostPort = url.dropFirst("osc.udp://".count).split(separator: "/").first.map(String.init) ?? ""
    guard let colon = hostPort.lastIndex(of: ":"), let port = Int(hostPort[hostPort.index(after: colon)...])
    else {
      throw Failure(message: "NSM_URL '\(url)' has no port")
    }
    let host = String(hostPort[..<colon])
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
    var found: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
      throw Failure(message: "the session manager's host '\(host)' cannot be resolved")
    }
    defer { freeaddrinfo(found) }
    withUnsafeMutableBytes(of: &server) { raw in
      raw.copyMemory(
        from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
    }
    serverLength = first.pointee.ai_addrlen
    fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw Failure(message: "no UDP socket is available for NSM") }
    Thread.startOwn("livemic-nsm") { [unowned self] in self.receive() }
  }

  /// Announces LiveMic: application "LiveMic", no optional capabilities, API 1.2.
  func announce() {
    send(
      "/nsm/server/announce",
      [.string("LiveMic"), .string(":"), .string("livemic"), .int(1), .int(2), .int(Int32(getpid()))])
  }

  /// Waits until the session manager sends `open` (or `stop()` says to give up).
  func waitForOpen(until deadline: DispatchTime, stop: () -> Bool) -> Open? {
    while DispatchTime.now() < deadline && !stop() {
      if let open = takeOpens().first { return open }
      _ = wake.wait(timeout: .now() + .milliseconds(100))
    }
    return nil
  }

  /// The `open` requests received since the last call.
  func takeOpens() -> [Open] {
    opens.withLock { list in
      defer { list.removeAll() }
      return list
    }
  }

  /// The number of `save` requests received since the last call.
  func takeSaves() -> Int { saves.exchange(0, ordering: .acquiringAndReleasing) }

  /// Answers a request: `/reply PATH MESSAGE`.
  func reply(_ path: String, _ message: String) { send("/reply", [.string(path), .string(message)]) }

  /// Refuses a request: `/error PATH CODE MESSAGE` (code -1: a general error).
  func error(_ path: String, _ message: String, code: Int32 = -1) {
    send("/error", [.string(path), .int(code), .string(message)])
  }

  func shutdown() {
    Glibc.shutdown(fd, Int32(SHUT_RDWR))
    close(fd)
  }

  enum Argument {
    case string(String)
    case int(Int32)
  }

  private func send(_ path: String, _ arguments: [Argument]) {
    guard let message = lo_message_new() else { return }
    defer { lo_message_free(message) }
    for a in arguments {
      switch a {
      case .string(let s): lo_message_add_string(message, s)
      case .int(let i): lo_message_add_int32(message, i)
      }
    }
    var size = 0
    guard let data = lo_message_serialise(message, path, nil, &size) else { return }
    defer { free(data) }
    _ = withUnsafePointer(to: &server) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, data, size, 0, $0, serverLength) }
    }
  }

  private func receive() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = recv(fd, &buffer, buffer.count, 0)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return }
      guard let (path, args) = Self.decode(&buffer, n) else { continue }
      switch path {
      case "/reply" where args.first == "/nsm/server/announce":
        let name = args.count > 2 ? args[2] : "the session manager"
        managerName.withLock { $0 = name }
        Log.info("session manager '\(name)' accepted LiveMic: \(args.count > 1 ? args[1] : "")")
      case "/error" where args.first == "/nsm/server/announce":
        Log.error("the session manager refused LiveMic: \(args.last ?? "no reason given")")
      case "/nsm/client/open" where args.count >= 3:
        opens.withLock { $0.append(Open(path: args[0], displayName: args[1], clientId: args[2])) }
        wake.signal()
      case "/nsm/client/save":
        saves.add(1, ordering: .releasing)
        wake.signal()
      default:
        break  // other messages (show/hide GUI, session loaded, …) need no answer
      }
    }
  }

  /// The path and the string or number arguments (as text) of an OSC message.
  static func decode(_ buffer: inout [UInt8], _ size: Int) -> (String, [String])? {
    guard let (path, args) = OscCodec.decode(&buffer, size) else { return nil }
    return (
      path,
      args.map { arg in
        if let s = arg?.string { return s }
        if let n = arg?.number { return Int(exactly: n).map(String.init) ?? String(n) }
        return ""
      }
    )
  }
}
