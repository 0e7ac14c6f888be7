import Foundation
import Testing

@testable import LiveMicControl
@testable import livemic

/// A client waiting for an answer skips the subscription's stream lines, and only those: the
/// monitor once took a meters line (keys sorted, `stream` last) that arrived before the answer
/// to its `subscribe` for that answer, and quit with "refused the subscription".
@Suite struct StreamLineTests {
  @Test(
    "A meters line starts with its stream name and is told from an answer; a status answer is not a stream line"
  )
  func streamLinesAreToldApart() throws {
    let line = LiveSession.meterStreamLine([
      "cycles": 12, "in": [["peak_dbfs": -6.0, "rms_dbfs": -9.0]], "stream": "ignored",
    ])
    #expect(line.hasPrefix("{\"stream\":\"meters\","), "\(line)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(object["stream"] as? String == "meters" && object["cycles"] as? Int == 12, "\(object)")
    #expect(ControlConnection.isStreamLine(line))
    // The form the meters had before (sorted keys): still a stream line to a client.
    #expect(ControlConnection.isStreamLine("{\"cycles\":12,\"in\":[],\"stream\":\"meters\"}"))
    #expect(ControlConnection.isStreamLine("{\"stream\":\"event\",\"event\":\"xrun\"}"))
    // Answers: the subscribe answer, and a status whose `stream` is an object.
    #expect(!ControlConnection.isStreamLine("{\"ok\":true,\"topics\":[\"events\",\"meters\"]}"))
    #expect(!ControlConnection.isStreamLine("{\"ok\":true,\"stream\":{\"running\":false}}"))
    #expect(!ControlConnection.isStreamLine("not json"))
  }
}
