import Dispatch
import Foundation
import Testing

@testable import LiveMicControl

/// The NSM session's files on their own: no session manager, a temporary session directory.
@Suite struct NsmSessionTests {
  /// One client for the whole run: its receiving thread outlives any test (as in LiveMic, where
  /// the client lives as long as the process).
  static let client = Result {
    try NsmClient(url: "osc.udp://127.0.0.1:9/", wake: DispatchSemaphore(value: 0))
  }

  static func session() throws -> NsmSession { NsmSession(client: try client.get()) }

  @Test("The connections written into a session are read back when it opens again")
  func connectionsRoundTrip() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lmnsm-\(UUID().uuidString)")
      .path
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let open = NsmClient.Open(
      path: folder + "/LiveMic.nABC", displayName: "LiveMic", clientId: "LiveMic.nABC")
    let first = try Self.session()
    #expect(first.presetPath == nil && !first.hasSavedPreset)
    #expect(throws: ControlError.self) { try first.writeConnections([:]) }
    first.opened(open)
    #expect(first.savedConnections == nil)
    #expect(first.presetPath == open.path + "/livemic.json" && !first.hasSavedPreset)
    let saved = ["out_1": ["system:playback_1"], "out_2": ["system:playback_2"], "in_1": []]
    try first.writeConnections(saved)
    let text = try String(contentsOfFile: open.path + "/connections.json", encoding: .utf8)
    #expect(text.hasPrefix("{\n  \"in_1\": [],\n  \"out_1\": [\n") && text.hasSuffix("}\n"), "\(text)")
    let second = try Self.session()
    second.opened(open)
    #expect(second.savedConnections == saved)
  }

  @Test("A connections file that is not an object of port lists is ignored")
  func malformed() {
    for text in ["[]", "{\"out_1\": \"a\"}", "{\"out_1\": [1]}", "not json"] {
      #expect(NsmSession.connections(in: Data(text.utf8)) == nil, "\(text)")
    }
    #expect(NsmSession.connections(in: Data("{}".utf8)) == [:])
  }
}
