import Foundation
import LiveMicPresets
import Testing

/// `JSONValue`'s encoder and its own parser, the one JSON layer every answer, event, meter
/// line, preset and session file goes through.
@Suite struct JSONEncodingTests {
  static let sample: JSONValue = [
    "name": "voice", "volume": 0.5, "count": 3, "on": true, "off": false, "none": nil,
    "list": [1, "two", [3.25], [:], []], "nested": ["z": 1, "a": ["b": "c"]],
  ]

  @Test("What is encoded parses back to the same value, compact and pretty")
  func roundTrip() throws {
    for style in [JSONValue.Style.compact, .pretty] {
      let text = Self.sample.encoded(style)
      #expect(try JSONValue.parse(text) == Self.sample, "\(text)")
      // Foundation reads it too: the text is JSON to any reader.
      #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil, "\(text)")
    }
    #expect(!Self.sample.encoded().contains("\n"))
    #expect(Self.sample.encoded(.pretty).contains("\n  \"name\": \"voice\",\n"))
  }

  @Test("Whole numbers print without a fraction, fractions as the shortest text, large ones exactly")
  func numbers() {
    let cases: [(Double, String)] = [
      (1, "1"), (0, "0"), (-0.0, "0"), (-7, "-7"), (0.5, "0.5"), (-6.2, "-6.2"), (0.1, "0.1"),
      (48000, "48000"), (Double(9_007_199_254_740_993 as Int64), "9007199254740992"),
      (1e18, "1000000000000000000"),
      (-4_611_686_018_427_387_904, "-4611686018427387904"),
    ]
    for (n, text) in cases { #expect(JSONValue.number(n).encoded() == text, "\(n)") }
    // Beyond Int64 and tiny: still JSON numbers that read back to the same double.
    for n in [1e20, 1e-5, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude] {
      let text = JSONValue.number(n).encoded()
      #expect((try? JSONValue.parse(text)) == .number(n), "\(n) → \(text)")
    }
    #expect(JSONValue.int(UInt64(1) << 40).encoded() == "1099511627776")
    #expect(JSONValue(Float(0.1)).encoded() == "0.1")
  }

  @Test("NaN and the infinities encode as null")
  func nonFinite() {
    let value: JSONValue = ["a": .number(.nan), "b": .number(.infinity), "c": [.number(-.infinity)]]
    #expect(value.encoded() == #"{"a":null,"b":null,"c":[null]}"#)
  }

  @Test("Strings escape quotes, backslashes and control characters, and keep the rest of Unicode as UTF-8")
  func escaping() throws {
    let raw = "a\"b\\c/d\ne\rf\tg\u{08}h\u{0C}i\u{01}j\u{1F}k\u{7F} é ✓ 🎤 \u{2028}"
    let text = JSONValue.string(raw).encoded()
    #expect(
      text == "\"a\\\"b\\\\c/d\\ne\\rf\\tg\\bh\\fi\\u0001j\\u001fk\u{7F} é ✓ 🎤 \u{2028}\"", "\(text)")
    #expect(try JSONValue.parse(text) == .string(raw))
    #expect(
      try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? String == raw)
    // Keys are escaped the same way.
    #expect(JSONValue.object(["k\"\n": 1]).encoded() == #"{"k\"\n":1}"#)
    // Escapes read: \u with surrogate pairs, \/; a lone surrogate or a raw control character is refused.
    #expect(try JSONValue.parse(#""\u00e9\ud83c\udfa4\/""#) == .string("é🎤/"))
    for bad in [#""\ud800""#, #""\udc00""#, "\"a\u{01}\"", #""\x""#, "\"open"] {
      #expect(throws: JSONParseError.self, "\(bad)") { try JSONValue.parse(bad) }
    }
  }

  @Test("Objects keep their keys in insertion order; sortedKeys sorts at every level")
  func ordering() {
    var object: JSONObject = ["z": 1, "a": 2]
    object["m"] = 3
    object["z"] = 4  // keeps its place
    #expect(object.keys == ["z", "a", "m"])
    #expect(object.encoded() == #"{"z":4,"a":2,"m":3}"#)
    object["a"] = nil
    #expect(object.encoded() == #"{"z":4,"m":3}"# && object["a"] == nil && object["m"] == 3)
    let nested: JSONValue = ["b": ["y": 1, "x": 2], "a": [["d": 1, "c": 2]]]
    #expect(nested.encoded(sortedKeys: true) == #"{"a":[{"c":2,"d":1}],"b":{"x":2,"y":1}}"#)
    #expect(nested.encoded() == #"{"b":{"y":1,"x":2},"a":[{"d":1,"c":2}]}"#)
    // Merging adds the other's missing keys after its own; a key both have keeps the first value.
    let merged = (["ok": true, "b": 1] as JSONObject).merging(["b": 2, "c": 3])
    #expect(merged.encoded() == #"{"ok":true,"b":1,"c":3}"#)
    // Parsing keeps the document's order; equality ignores order.
    let parsed = try? JSONValue.parse(#"{"q":1,"p":2}"#)
    #expect(parsed?.object?.keys == ["q", "p"])
    #expect(parsed == ["p": 2, "q": 1])
    // A Swift dictionary's keys are sorted (its own order changes from run to run).
    #expect(JSONValue(["b": 1.0, "a": 2.0]).encoded() == #"{"a":2,"b":1}"#)
  }

  @Test("Pretty output indents two spaces, one key or element a line; empty containers stay short")
  func pretty() {
    let value: JSONValue = ["a": [1, 2], "b": [:], "c": []]
    #expect(value.encoded(.pretty) == "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {},\n  \"c\": []\n}")
  }

  @Test("Nesting deeper than the limit is refused in one clause; up to it parses")
  func depthLimit() throws {
    let limit = JSONValue.depthLimit
    #expect(limit == 256)
    let ok = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
    #expect(throws: Never.self) { try JSONValue.parse(ok) }
    let deep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
    let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
    #expect(error?.reason == "the document nests deeper than 256 levels")
    let objects = String(repeating: #"{"a":"#, count: 100_000)
    #expect(throws: JSONParseError.self) { try JSONValue.parse(objects) }
  }

  @Test("The parser is strict: what is not JSON is refused with the protocol's one clause")
  func strict() {
    let bad = [
      "", " ", "{", "[1,2", "{\"a\":1,}", "[1,]", "{\"a\" 1}", "{'a':1}", "tru", "nul", "01", "1.", ".5",
      "-", "+1", "1e", "[1 2]", "{\"a\":1} x", "NaN", "Infinity", "{1:2}", "/* */{}", "\u{FEFF}\u{FEFF}{}",
    ]
    for text in bad {
      let error = #expect(throws: JSONParseError.self, "\(text)") { try JSONValue.parse(text) }
      #expect(error?.reason == "The given data was not valid JSON", "\(text)")
    }
    // Invalid UTF-8 inside a string.
    #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }
    // Scalars at the top, whitespace around, the last of duplicate keys.
    #expect((try? JSONValue.parse(" \t\r\n1e2 ")) == .number(100))
    #expect((try? JSONValue.parse("\"x\"")) == .string("x"))
    #expect((try? JSONValue.parse(#"{"a":1,"a":2}"#)) == ["a": 2])
    #expect((try? JSONValue.parse("-0.5E-1")) == .number(-0.05))
    #expect((try? JSONValue.parse("\u{FEFF}{}")) == [:])  // a byte order mark, as some editors write
    // Types stay apart: a boolean is no number, a number no boolean.
    #expect((try? JSONValue.parse("true"))?.number == nil)
    #expect((try? JSONValue.parse("1"))?.bool == nil)
    // A number beyond a double in an array names its index.
    let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(#"{"a":[0,1e999]}"#) }
    #expect(error?.reason == "the number at 'a.Index 1' is beyond the range of a double")
  }
}
