import Foundation

/// A JSON value, the one JSON layer of LiveMic: parsed strictly (a number is never a boolean,
/// and the reverse, so preset and control messages can report exactly which key is wrong) and
/// encoded in order (`JSONObject` keeps its keys as they were inserted), compact for the
/// protocol or pretty for files written for people.
///
/// Thread: any (value type).
public enum JSONValue: Sendable, Equatable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object(JSONObject)

  /// A whole number (any integer type).
  public static func int(_ n: some BinaryInteger) -> JSONValue { .number(Double(n)) }

  /// `value` as JSON (`JSONRepresentable`).
  public init(_ value: some JSONRepresentable) { self = value.json }

  public var string: String? { if case .string(let s) = self { s } else { nil } }
  public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
  public var number: Double? { if case .number(let n) = self { n } else { nil } }
  /// The value as a whole number an `Int` holds; nil for anything else (a fraction, a number
  /// beyond ±2⁶³, which converting with `Int(_:)` would trap on, or not a number).
  public var integer: Int? { if case .number(let n) = self { Int(exactly: n) } else { nil } }
  public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
  public var object: JSONObject? { if case .object(let o) = self { o } else { nil } }
  public var isNull: Bool { self == .null }

  /// The value at `key` of an object; nil when absent or when this is not an object.
  public subscript(key: String) -> JSONValue? { object?[key] }
}

/// A JSON object: keys in the order they were inserted (setting a key that is there keeps its
/// place), each once.
///
/// Thread: any (value type).
public struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
  public private(set) var keys: [String] = []
  public private(set) var values: [JSONValue] = []
  private var index: [String: Int] = [:]

  public init() {}

  /// A later duplicate key replaces the earlier one's value, in the earlier one's place.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    for (key, value) in elements { self[key] = value }
  }

  public init(_ pairs: some Sequence<(String, JSONValue)>) {
    for (key, value) in pairs { self[key] = value }
  }

  public var count: Int { keys.count }
  public var isEmpty: Bool { keys.isEmpty }

  /// The value at `key`; setting nil removes the key.
  public subscript(key: String) -> JSONValue? {
    get { index[key].map { values[$0] } }
    set {
      if let at = index[key] {
        if let newValue {
          values[at] = newValue
        } else {
          keys.remove(at: at)
          values.remove(at: at)
          index = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        }
      } else if let newValue {
        index[key] = keys.count
        keys.append(key)
        values.append(newValue)
      }
    }
  }

  /// Adds the keys of `other` this object lacks, after its own (a key both have keeps this
  /// object's value).
  public mutating func merge(_ other: JSONObject) {
    for (key, value) in other where index[key] == nil { self[key] = value }
  }

  /// This object with the keys of `other` it lacks added after its own.
  public func merging(_ other: JSONObject) -> JSONObject {
    var result = self
    result.merge(other)
    return result
  }

  /// The same keys and values, in any order.
  public static func == (a: JSONObject, b: JSONObject) -> Bool {
    a.count == b.count && a.keys.allSatisfy { a[$0] == b[$0] }
  }

  public func makeIterator() -> some IteratorProtocol<(key: String, value: JSONValue)> {
    zip(keys, values).lazy.map { (key: $0, value: $1) }.makeIterator()
  }
}

// MARK: - Literals and conversions

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
  ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
  ExpressibleByDictionaryLiteral
{
  public init(nilLiteral: ()) { self = .null }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
  public init(floatLiteral value: Double) { self = .number(value) }
  public init(stringLiteral value: String) { self = .string(value) }
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

/// A Swift value with one JSON form.
public protocol JSONRepresentable {
  var json: JSONValue { get }
}

extension JSONValue: JSONRepresentable { public var json: JSONValue { self } }
extension JSONObject: JSONRepresentable { public var json: JSONValue { .object(self) } }
extension String: JSONRepresentable { public var json: JSONValue { .string(self) } }
extension Bool: JSONRepresentable { public var json: JSONValue { .bool(self) } }
extension Int: JSONRepresentable { public var json: JSONValue { .number(Double(self)) } }
extension Double: JSONRepresentable { public var json: JSONValue { .number(self) } }
/// A `Float` as it prints (0.1, not 0.10000000149011612: the double nearest its shortest text).
extension Float: JSONRepresentable {
  public var json: JSONValue { .number(Double(description) ?? Double(self)) }
}
extension Array: JSONRepresentable where Element: JSONRepresentable {
  public var json: JSONValue { .array(map(\.json)) }
}
extension Optional: JSONRepresentable where Wrapped: JSONRepresentable {
  public var json: JSONValue { self?.json ?? .null }
}
/// A dictionary's keys are sorted: its own order is not stable from run to run.
extension Dictionary: JSONRepresentable where Key == String, Value: JSONRepresentable {
  public var json: JSONValue {
    .object(JSONObject(sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }))
  }
}

// MARK: - Parsing

extension JSONValue {
  /// How deep arrays and objects may nest in a parsed document.
  public static let depthLimit = 256

  /// Parses a document (RFC 8259, nothing more: no trailing commas, no comments; a leading
  /// UTF-8 byte order mark is skipped); the error's reason is one clause. A later duplicate key
  /// replaces an earlier one.
  public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
    var parser = JSONParser(bytes: [UInt8](data))
    return try parser.document()
  }

  /// Parses a document given as text.
  public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
    var parser = JSONParser(bytes: Array(text.utf8))
    return try parser.document()
  }
}

/// Why a JSON document did not parse.
public struct JSONParseError: Error, Equatable {
  public let reason: String
  /// The reason for any syntax error (the wording the protocol's answers have always had).
  static let invalid = JSONParseError(reason: "The given data was not valid JSON")
}

/// A recursive-descent parser over UTF-8 bytes.
private struct JSONParser {
  let bytes: [UInt8]
  var at = 0
  /// The keys and indices down to the value being parsed, for the errors that name a place.
  var path: [String] = []

  init(bytes: [UInt8]) { self.bytes = bytes }

  mutating func document() throws(JSONParseError) -> JSONValue {
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }  // a UTF-8 byte order mark, as some editors write
    let value = try self.value(depth: 0)
    skipSpace()
    guard at == bytes.count else { throw .invalid }
    return value
  }

  mutating func skipSpace() {
    while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
  }

  private mutating func literal(_ word: String, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
    let w = Array(word.utf8)
    guard at + w.count <= bytes.count, Array(bytes[at..<at + w.count]) == w else { throw .invalid }
    at += w.count
    return value
  }

  mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
    skipSpace()
    guard at < bytes.count else { throw .invalid }
    switch bytes[at] {
    case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
    case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
    case UInt8(ascii: "\""): return .string(try string())
    case UInt8(ascii: "t"): return try literal("true", .bool(true))
    case UInt8(ascii: "f"): return try literal("false", .bool(false))
    case UInt8(ascii: "n"): return try literal("null", .null)
    default: return .number(try number())
    }
  }

  private func checkDepth(_ depth: Int) throws(JSONParseError) {
    guard depth <= JSONValue.depthLimit else {
      throw JSONParseError(reason: "the document nests deeper than \(JSONValue.depthLimit) levels")
    }
  }

  /// The elements of an array or object: `element` reads each, the separators and the closing
  /// byte are read here (no trailing comma).
  private mutating func elements(
    closing close: UInt8, depth: Int, _ element: (inout JSONParser) throws(JSONParseError) -> Void
  ) throws(JSONParseError) {
    try checkDepth(depth)
    at += 1  // the opening byte
    skipSpace()
    if at < bytes.count, bytes[at] == close {
      at += 1
      return
    }
    while true {
      try element(&self)
      skipSpace()
      guard at < bytes.count else { throw .invalid }
      at += 1
      if bytes[at - 1] == close { return }
      guard bytes[at - 1] == UInt8(ascii: ",") else { throw .invalid }
    }
  }

  private mutating func object(depth: Int) throws(JSONParseError) -> JSONObject {
    var result = JSONObject()
    try elements(closing: UInt8(ascii: "}"), depth: depth) { (p: inout JSONParser) throws(JSONParseError) in
      p.skipSpace()
      guard p.at < p.bytes.count, p.bytes[p.at] == UInt8(ascii: "\"") else { throw .invalid }
      let key = try p.string()
      p.skipSpace()
      guard p.at < p.bytes.count, p.bytes[p.at] == UInt8(ascii: ":") else { throw .invalid }
      p.at += 1
      p.path.append(key)
      result[key] = try p.value(depth: depth)
      p.path.removeLast()
    }
    return result
  }

  private mutating func array(depth: Int) throws(JSONParseError) -> [JSONValue] {
    var result: [JSONValue] = []
    try elements(closing: UInt8(ascii: "]"), depth: depth) { (p: inout JSONParser) throws(JSONParseError) in
      p.path.append("Index \(result.count)")
      result.append(try p.value(depth: depth))
      p.path.removeLast()
    }
    return result
  }

  private mutating func number() throws(JSONParseError) -> Double {
    let start = at
    func digits(_ p: inout JSONParser) -> Int {
      let s = p.at
      while p.at < p.bytes.count, (0x30...0x39).contains(p.bytes[p.at]) { p.at += 1 }
      return p.at - s
    }
    if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
    guard at < bytes.count, (0x30...0x39).contains(bytes[at]) else { throw .invalid }
    if bytes[at] == UInt8(ascii: "0") {
      at += 1
      if at < bytes.count, (0x30...0x39).contains(bytes[at]) { throw .invalid }  // no leading zeros
    } else {
      _ = digits(&self)
    }
    if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
      at += 1
      guard digits(&self) > 0 else { throw .invalid }
    }
    if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
      at += 1
      if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
      guard digits(&self) > 0 else { throw .invalid }
    }
    let text = String(decoding: bytes[start..<at], as: UTF8.self)
    guard let n = Double(text), n.isFinite else {
      throw JSONParseError(
        reason: "the number at '\(path.joined(separator: "."))' is beyond the range of a double")
    }
    return n
  }

  private mutating func hex4() throws(JSONParseError) -> UInt32 {
    guard at + 4 <= bytes.count else { throw .invalid }
    var v: UInt32 = 0
    for b in bytes[at..<at + 4] {
      let d: UInt8
      switch b {
      case 0x30...0x39: d = b - 0x30
      case 0x41...0x46: d = b - 0x41 + 10
      case 0x61...0x66: d = b - 0x61 + 10
      default: throw .invalid
      }
      v = v << 4 | UInt32(d)
    }
    at += 4
    return v
  }

  mutating func string() throws(JSONParseError) -> String {
    at += 1  // the opening quote
    var out: [UInt8] = []
    while true {
      guard at < bytes.count else { throw .invalid }
      let b = bytes[at]
      at += 1
      switch b {
      case UInt8(ascii: "\""):
        guard let s = String(validating: out, as: UTF8.self) else { throw .invalid }
        return s
      case UInt8(ascii: "\\"):
        guard at < bytes.count else { throw .invalid }
        let e = bytes[at]
        at += 1
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var code = try hex4()
          if (0xD800..<0xDC00).contains(code) {
            guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u")
            else { throw .invalid }
            at += 2
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else { throw .invalid }
            code = 0x10000 + (code - 0xD800) << 10 + (low - 0xDC00)
          }
          guard let scalar = Unicode.Scalar(code) else { throw .invalid }  // a lone low surrogate
          out.append(contentsOf: Array(String(Character(scalar)).utf8))
        default: throw .invalid
        }
      case 0..<0x20: throw .invalid  // control characters must be escaped
      default: out.append(b)
      }
    }
  }
}

// MARK: - Encoding

extension JSONValue {
  /// How a value is written: `compact`, one line (the protocol's lines); `pretty`, indented
  /// by two spaces with one key or element per line (files written for people).
  public enum Style: Sendable {
    case compact
    case pretty
  }

  /// The value as JSON text. Keys in their order, or sorted at every level (`sortedKeys`);
  /// a number that is whole prints without a fraction (1, not 1.0), a non-finite one as null;
  /// strings escaped as JSON requires (quotes, backslashes, control characters), the rest of
  /// Unicode kept as it is.
  public func encoded(_ style: Style = .compact, sortedKeys: Bool = false) -> String {
    var out = ""
    write(into: &out, style: style, sortedKeys: sortedKeys, indent: 0)
    return out
  }

  /// A number as JSON writes it.
  public static func text(of n: Double) -> String {
    guard n.isFinite else { return "null" }
    if n == n.rounded(.towardZero), let whole = Int64(exactly: n) { return String(whole) }
    return "\(n)"
  }

  /// A string quoted and escaped for JSON.
  public static func quoted(_ s: String) -> String {
    var out = ""
    quote(s, into: &out)
    return out
  }

  private static func quote(_ s: String, into out: inout String) {
    out.append("\"")
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out.append("\\\"")
      case "\\": out.append("\\\\")
      case "\n": out.append("\\n")
      case "\r": out.append("\\r")
      case "\t": out.append("\\t")
      case "\u{08}": out.append("\\b")
      case "\u{0C}": out.append("\\f")
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
      default: out.unicodeScalars.append(scalar)
      }
    }
    out.append("\"")
  }

  private func write(into out: inout String, style: Style, sortedKeys: Bool, indent: Int) {
    let pretty = style == .pretty
    func newline(_ level: Int) {
      if pretty { out.append("\n" + String(repeating: "  ", count: level)) }
    }
    switch self {
    case .null: out.append("null")
    case .bool(let b): out.append(b ? "true" : "false")
    case .number(let n): out.append(Self.text(of: n))
    case .string(let s): Self.quote(s, into: &out)
    case .array(let items):
      out.append("[")
      for (i, item) in items.enumerated() {
        if i > 0 { out.append(",") }
        newline(indent + 1)
        item.write(into: &out, style: style, sortedKeys: sortedKeys, indent: indent + 1)
      }
      if !items.isEmpty { newline(indent) }
      out.append("]")
    case .object(let object):
      out.append("{")
      let keys = sortedKeys ? object.keys.sorted() : object.keys
      for (i, key) in keys.enumerated() {
        if i > 0 { out.append(",") }
        newline(indent + 1)
        Self.quote(key, into: &out)
        out.append(pretty ? ": " : ":")
        object[key]?.write(into: &out, style: style, sortedKeys: sortedKeys, indent: indent + 1)
      }
      if !keys.isEmpty { newline(indent) }
      out.append("}")
    }
  }
}

extension JSONObject {
  /// The object as JSON text (`JSONValue.encoded`).
  public func encoded(_ style: JSONValue.Style = .compact, sortedKeys: Bool = false) -> String {
    JSONValue.object(self).encoded(style, sortedKeys: sortedKeys)
  }
}
