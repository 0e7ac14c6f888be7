import Foundation
import LiveMicOffline
import LiveMicPresets
import Testing

@testable import LiveMicControl

/// The protocol's lines, as `ControlServer`, `EventStream` and the meter stream write them:
/// answers (keys sorted, as they have always been), errors (`ok`, `error`, `code`), stream lines
/// (`stream` first), events (`time`, `event`, then their fields).
@Suite struct ControlLineTests {
  @Test("An answer is one line: ok true and its fields, keys sorted at every level")
  func answers() throws {
    let line = ControlServer.answer([
      "value": 3, "key": "eq.bass_db", "values": ["b.x": 0.5, "a.y": -6.2], "list": [["z": 1, "y": 2]],
    ])
    #expect(
      line
        == #"{"key":"eq.bass_db","list":[{"y":2,"z":1}],"ok":true,"value":3,"values":{"a.y":-6.2,"b.x":0.5}}"#
    )
    // A field cannot turn an answer into a failure.
    #expect(ControlServer.answer(["ok": false]) == #"{"ok":true}"#)
    #expect(ControlServer.answer(["stopped": []]) == #"{"ok":true,"stopped":[]}"#)
    // Paths keep their slashes; strings are escaped.
    #expect(ControlServer.answer(["path": "/tmp/a \"b\"\n"]) == #"{"ok":true,"path":"/tmp/a \"b\"\n"}"#)
  }

  @Test("An error is ok false, the sentence and its code, in that order")
  func errors() {
    #expect(
      ControlServer.error("unknown topic 'nope' (topics: meters, events)")
        == #"{"ok":false,"error":"unknown topic 'nope' (topics: meters, events)","code":"control.refused"}"#)
    let line = ControlServer.error("the request is not \"valid\"\tJSON", code: "control.malformed-json")
    #expect(
      line == #"{"ok":false,"error":"the request is not \"valid\"\tJSON","code":"control.malformed-json"}"#)
    #expect(!line.contains("\n"))
  }

  @Test("A stream line starts with its stream name; its own fields follow in their order")
  func streamLines() throws {
    let line = ControlServer.streamLine("meters", ["output": [], "input": [], "stream": "ignored"])
    #expect(line == #"{"stream":"meters","output":[],"input":[]}"#)
    #expect(ControlServer.streamLine("event", [:]) == #"{"stream":"event"}"#)
  }

  @Test("A meter reading: input, output, gain reductions and loudness, to a tenth, as docs/control.md shows")
  func meters() {
    var loudness = LoudnessReading()
    loudness.momentary = -18.24
    let reading = MeterReading(
      channels: [(-6.04, -9), (-200, -200), (-12.26, -15.8), (-12.3, -15.8)],
      gainReductions: [("compressor", 7.44), ("limiter", 0.31)], loudness: loudness)
    let line = LiveSession.meterStreamLine(reading.fields)
    #expect(
      line
        == #"{"stream":"meters","input":[{"peak_dbfs":-6,"rms_dbfs":-9},{"peak_dbfs":-200,"rms_dbfs":-200}],"#
        + #""output":[{"peak_dbfs":-12.3,"rms_dbfs":-15.8},{"peak_dbfs":-12.3,"rms_dbfs":-15.8}],"#
        + #""gain_reduction_db":{"compressor":7.4,"limiter":0.3},"loudness":{"momentary_lufs":-18.2,"#
        + #""shortterm_lufs":-200,"integrated_lufs":-200,"range_lu":0,"true_peak_dbtp":-200}}"#, "\(line)")
    #expect(reading.oscValues.count == 9)
  }

  @Test("An event: time and event first, then its fields in order, fractions to 3 decimals")
  func events() throws {
    let stream = try EventStream(destination: nil)
    var seen: [(String, JSONObject)] = []
    stream.listener = { seen.append(($0, $1)) }
    stream.emit(
      "mode-changed",
      ["id": "denoise", "ms": .number(12.34567), "frames": .int(480), "on": true, "event": "not this"])
    let (name, object) = try #require(seen.first)
    #expect(name == "mode-changed")
    #expect(object.keys == ["time", "event", "id", "ms", "frames", "on"])
    #expect(object["event"] == "mode-changed" && object["ms"] == .number(12.346) && object["frames"] == 480)
    let line = object.encoded()
    #expect(
      line.hasPrefix(#"{"time":""#)
        && line.hasSuffix(#","event":"mode-changed","id":"denoise","ms":12.346,"frames":480,"on":true}"#),
      "\(line)")
    let date = Date(timeIntervalSince1970: 1_796_416_092.96)
    #expect(stream.object("muted", [:], at: date)["time"] == "2026-12-04T20:28:12.960Z")
    // The stream line a subscriber gets: `stream` first, then the event as written to --events.
    #expect(
      ControlServer.streamLine("event", stream.object("muted", ["mode": "ramp"], at: date))
        == #"{"stream":"event","time":"2026-12-04T20:28:12.960Z","event":"muted","mode":"ramp"}"#)
  }
}
