import Glibc

/// A connection to a server daemon's listening socket, held from a client's open: the way a
/// client on PipeWire tells whether the daemon it talks to is still there, while suspended or
/// after a shutdown callback (see `JackClient.serverAnswers()`, `JackClient.daemonStillThere`).
/// The daemon's death hangs the connection up, and a daemon started again at the same path
/// cannot hide it. (The socket file's inode could: ext4 gives a socket bound again at the same
/// path the inode number just freed.) Thread: the supervisor.
public final class DaemonConnection {
  /// The socket's path.
  public let path: String
  private let fd: Int32

  /// Connects to the socket at `path` now. A path with no daemon listening gives a connection
  /// that never answers.
  public init(path: String) {
    self.path = path
    fd = Self.connect(path)
  }

  /// Linux's `POLLRDHUP` (Glibc hides it behind `_GNU_SOURCE`).
  private static let pollReadHangUp: Int16 = 0x2000

  deinit { if fd >= 0 { Glibc.close(fd) } }

  /// Whether the daemon this connected to is still there: false once it hung up (died or closed
  /// the connection), or when there was none to connect to.
  public func answers() -> Bool {
    guard fd >= 0 else { return false }
    var entry = pollfd(fd: fd, events: Int16(POLLIN) | Self.pollReadHangUp, revents: 0)
    guard poll(&entry, 1, 0) >= 0 else { return true }
    if entry.revents & (Int16(POLLHUP) | Int16(POLLERR) | Self.pollReadHangUp) != 0 { return false }
    guard entry.revents & Int16(POLLIN) != 0 else { return true }
    var byte: UInt8 = 0
    let read = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
    return read > 0 || (read < 0 && (errno == EAGAIN || errno == EINTR))
  }

  /// A connected stream socket's descriptor, or -1.
  private static func connect(_ path: String) -> Int32 {
    guard path.utf8.count < 108 else { return -1 }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return -1 }
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard connected == 0 else {
      Glibc.close(fd)
      return -1
    }
    return fd
  }
}
