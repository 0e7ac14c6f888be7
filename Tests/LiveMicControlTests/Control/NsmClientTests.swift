import CLo
import Foundation
import Testing

@testable import LiveMicControl

/// The NSM client's reading of a session manager's messages, offline.
@Suite struct NsmClientTests {
  /// An OSC datagram of `path` with `build` adding its arguments, as bytes.
  static func datagram(_ path: String, _ build: (lo_message) -> Void) -> [UInt8] {
    guard let message = lo_message_new() else { return [] }
    defer { lo_message_free(message) }
    build(message)
    var size = 0
    guard let raw = lo_message_serialise(message, path, nil, &size) else { return [] }
    defer { free(raw) }
    return Array(UnsafeRawBufferPointer(start: raw, count: size))
  }

  @Test("Numeric arguments become text: whole numbers without a point, any double without trapping")
  func numbersAsText() throws {
    var bytes = Self.datagram("/nsm/client/open") { m in
      lo_message_add_string(m, "/sessions/a")
      lo_message_add_int32(m, 5)
      lo_message_add_double(m, 2.5)
      lo_message_add_double(m, 1e300)  // a whole number no Int holds: converting it trapped
      lo_message_add_double(m, -9.3e18)
    }
    let decoded = try #require(NsmClient.decode(&bytes, bytes.count))
    #expect(decoded.0 == "/nsm/client/open")
    #expect(decoded.1 == ["/sessions/a", "5", "2.5", "1e+300", "-9.3e+18"])
  }
}
