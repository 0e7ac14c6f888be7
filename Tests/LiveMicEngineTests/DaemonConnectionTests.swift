import Foundation
import Glibc
import Testing

@testable import LiveMicEngine

/// The suspended client's liveness probe on PipeWire (`DaemonConnection`), with the daemon played by
/// this test: it decides when the socket goes away and when another one is bound at its path,
/// so a daemon restarted between two probes is reproduced every time, not by chance.
@Suite struct DaemonConnectionTests {
  /// A listening Unix socket bound at `path`; returns its descriptor.
  static func listen(at path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard fd >= 0, bound == 0, Glibc.listen(fd, 4) == 0 else {
      throw POSIXError(.init(rawValue: errno) ?? .EIO)
    }
    return fd
  }

  static func folder() -> String {
    let path = NSTemporaryDirectory() + "lmsock-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  @Test("a daemon still listening answers; one that died, or was never there, does not")
  func sameDaemon() throws {
    let folder = Self.folder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/daemon-0"
    #expect(!DaemonConnection(path: path).answers(), "no socket file")
    let fd = try Self.listen(at: path)
    let connection = DaemonConnection(path: path)
    #expect(connection.answers())
    #expect(connection.answers(), "asking does not change the answer")
    close(fd)  // killed: the file stays, nobody listens
    #expect(!connection.answers())
    #expect(!DaemonConnection(path: path).answers(), "a socket file nobody listens on")
  }

  @Test("a daemon that accepted the connection and then died is gone")
  func acceptedThenDied() throws {
    let folder = Self.folder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/daemon-0"
    let listener = try Self.listen(at: path)
    let connection = DaemonConnection(path: path)
    let accepted = accept(listener, nil, nil)
    #expect(accepted >= 0)
    var hello: UInt8 = 1
    _ = send(accepted, &hello, 1, 0)  // a daemon that talks first
    #expect(connection.answers())
    close(accepted)
    close(listener)
    #expect(!connection.answers())
  }

  /// The fault seen in a CI-like run: the daemon is killed and a new one binds the same path
  /// before the next probe. On ext4 the new socket file even gets the freed inode number back.
  @Test("a daemon restarted between two probes is seen as gone", arguments: 0..<5)
  func restartedBetweenProbes(round: Int) throws {
    let folder = Self.folder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/daemon-0"
    let first = try Self.listen(at: path)
    let connection = DaemonConnection(path: path)
    #expect(connection.answers())
    close(first)
    unlink(path)  // what a new PipeWire daemon does with a stale socket before binding
    let second = try Self.listen(at: path)
    defer { close(second) }
    #expect(!connection.answers(), "the new daemon is not the one the client talked to")
    #expect(DaemonConnection(path: path).answers(), "a client connecting now sees the new daemon")
  }
}
