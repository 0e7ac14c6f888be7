import Foundation

/// A parsed JSON value, strict about types (a number is never a boolean, and the reverse), so
/// preset and control messages can report exactly which key is wrong.
///
/// Thread: any (value type).
public enum JSONValue: Sendable, Equatable, Decodable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  public init(from decoder: any Decoder) throws {
    let c = try decoder.singleValueContainer()
    if c.decodeNil() {
      self = .null
    } else if let b = try? c.decode(Bool.self) {
      self = .bool(b)
    } else if let n = try Self.number(in: c) {
      self = .number(n)
    } else if let s = try? c.decode(String.self) {
      self = .string(s)
    } else if let a = try? c.decode([JSONValue].self) {
      self = .array(a)
    } else {
      self = .object(try c.decode([String: JSONValue].self))
    }
  }

  /// The number in `container`; nil when it holds something else (a type mismatch). A number
  /// no `Double` holds (1e400: the decoder's own error, not a `DecodingError`) is an error that
  /// says so, not a "wrong type" one.
  private static func number(in container: any SingleValueDecodingContainer) throws -> Double? {
    do {
      return try container.decode(Double.self)
    } catch is DecodingError {
      return nil
    } catch {
      let path = container.codingPath.map(\.stringValue).joined(separator: ".")
      throw DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: container.codingPath,
          debugDescription: "the number at '\(path)' is beyond the range of a double"))
    }
  }

  /// Parses a document; the error's reason is one clause.
  public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
    do {
      return try JSONDecoder().decode(JSONValue.self, from: data)
    } catch let DecodingError.dataCorrupted(context) {
      let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
      throw JSONParseError(
        reason: (underlying ?? context.debugDescription).trimmingCharacters(
          in: CharacterSet(charactersIn: ". ")))
    } catch {
      throw JSONParseError(reason: "\(error)")
    }
  }

  public var string: String? { if case .string(let s) = self { s } else { nil } }
  public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
  public var number: Double? { if case .number(let n) = self { n } else { nil } }
  /// The value as a whole number an `Int` holds; nil for anything else (a fraction, a number
  /// beyond ±2⁶³, which converting with `Int(_:)` would trap on, or not a number).
  public var integer: Int? { if case .number(let n) = self { Int(exactly: n) } else { nil } }
  public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
  public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
}

/// Why a JSON document did not parse.
public struct JSONParseError: Error, Equatable {
  public let reason: String
}
