import Foundation

/// A property's value as an atom carries it (`PropertyInfo.range`).
///
/// Thread: any (value type).
public enum PropertyValue: Sendable, Equatable {
  case path(String)
  case string(String)
  case float(Float)
  case double(Double)
  case int(Int32)
  case long(Int64)
  case bool(Bool)

  /// The value as `ctl get` shows it: the text of a path or string, a number's digits.
  public var text: String {
    switch self {
    case .path(let s), .string(let s): return s
    case .float(let x): return PluginError.format(x)
    case .double(let x): return String(x)
    case .int(let x): return String(x)
    case .long(let x): return String(x)
    case .bool(let b): return b ? "true" : "false"
    }
  }

  /// `text` read as a value of the atom type `range` (a path made absolute against `folder`
  /// when relative); nil with the reason when it is not one.
  static func parse(_ text: String, range: String, relativeTo folder: String?) -> Result<
    PropertyValue, Reason
  > {
    switch range {
    case URI.atomPath:
      guard !text.isEmpty else { return .failure(Reason("takes a file path, and the value is empty")) }
      if text.hasPrefix("/") { return .success(.path(text)) }
      guard let folder else { return .failure(Reason("takes an absolute file path here, not '\(text)'")) }
      return .success(.path((folder as NSString).appendingPathComponent(text)))
    case URI.atomString, "": return .success(.string(text))
    case URI.atomFloat:
      return Float(text).map { .success(.float($0)) } ?? .failure(Reason("takes a number, not '\(text)'"))
    case URI.atomDouble:
      return Double(text).map { .success(.double($0)) } ?? .failure(Reason("takes a number, not '\(text)'"))
    case URI.atomInt:
      return Int32(text).map { .success(.int($0)) } ?? .failure(Reason("takes a whole number, not '\(text)'"))
    case URI.atomLong:
      return Int64(text).map { .success(.long($0)) }
        ?? .failure(Reason("takes a whole number, not '\(text)'"))
    case URI.atomBool:
      switch text.lowercased() {
      case "true", "on", "1": return .success(.bool(true))
      case "false", "off", "0": return .success(.bool(false))
      default: return .failure(Reason("takes true or false, not '\(text)'"))
      }
    default: return .failure(Reason("has a value type LiveMic cannot send (\(range))"))
    }
  }

  /// Why a text is not a property's value (one clause, after the property's name).
  struct Reason: Error {
    let text: String
    init(_ text: String) { self.text = text }
  }
}

/// `patch:Set` and `patch:Get` messages as atoms (an `atom:Object` with its properties), made
/// and read off the audio thread; the audio thread only copies their bytes.
enum PatchMessage {
  /// The bytes of a `patch:Set` of `property` to `value`.
  static func set(property: UInt32, value: PropertyValue, urids: URIDMap) -> [UInt8] {
    var body = Forge()
    body.u32(0)  // object id
    body.u32(urids.map(URI.patchSet))
    body.property(key: urids.map(URI.patchProperty), type: urids.map(URI.atomURID)) { $0.u32(property) }
    let (type, write) = value.atom(urids)
    body.property(key: urids.map(URI.patchValue), type: type, write)
    return Forge.atom(type: urids.map(URI.atomObject), body: body.bytes)
  }

  /// The bytes of a `patch:Get` without a property: the plugin answers with every property's
  /// `patch:Set` on its notify output.
  static func get(urids: URIDMap) -> [UInt8] {
    var body = Forge()
    body.u32(0)
    body.u32(urids.map(URI.patchGet))
    return Forge.atom(type: urids.map(URI.atomObject), body: body.bytes)
  }

  /// The property and value of a `patch:Set` object atom (`bytes` from its header on), nil for
  /// any other message or a value type LiveMic does not read.
  static func parseSet(_ bytes: UnsafeRawBufferPointer, urids: URIDMap) -> (
    property: UInt32, value: PropertyValue
  )? {
    guard bytes.count >= 16 else { return nil }
    let size = Int(bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
    let type = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
    guard type == urids.map(URI.atomObject) || type == urids.map(URI.atomBlank), 8 + size <= bytes.count,
      bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self) == urids.map(URI.patchSet)
    else { return nil }
    var (property, value): (UInt32?, PropertyValue?) = (nil, nil)
    var offset = 16
    while offset + 16 <= 8 + size {
      let key = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
      let valueSize = Int(bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
      let valueType = bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)
      let start = offset + 16
      guard start + valueSize <= bytes.count else { return nil }
      let data = UnsafeRawBufferPointer(rebasing: bytes[start..<start + valueSize])
      if key == urids.map(URI.patchProperty), valueType == urids.map(URI.atomURID), valueSize >= 4 {
        property = data.loadUnaligned(as: UInt32.self)
      } else if key == urids.map(URI.patchValue) {
        value = PropertyValue(atomType: valueType, data, urids: urids)
      }
      offset = start + ((valueSize + 7) & ~7)
    }
    guard let property, let value else { return nil }
    return (property, value)
  }
}

extension PropertyValue {
  /// The atom type and body writer for this value.
  fileprivate func atom(_ urids: URIDMap) -> (UInt32, (inout Forge) -> Void) {
    switch self {
    case .path(let s): return (urids.map(URI.atomPath), { $0.cString(s) })
    case .string(let s): return (urids.map(URI.atomString), { $0.cString(s) })
    case .float(let x): return (urids.map(URI.atomFloat), { $0.u32(x.bitPattern) })
    case .double(let x): return (urids.map(URI.atomDouble), { $0.u64(x.bitPattern) })
    case .int(let x): return (urids.map(URI.atomInt), { $0.u32(UInt32(bitPattern: x)) })
    case .long(let x): return (urids.map(URI.atomLong), { $0.u64(UInt64(bitPattern: x)) })
    case .bool(let b): return (urids.map(URI.atomBool), { $0.u32(b ? 1 : 0) })
    }
  }

  /// A value read from an atom's body, for the types LiveMic shows.
  fileprivate init?(atomType type: UInt32, _ data: UnsafeRawBufferPointer, urids: URIDMap) {
    func text() -> String {
      let bytes = data.prefix { $0 != 0 }
      return String(decoding: bytes, as: UTF8.self)
    }
    switch type {
    case urids.map(URI.atomPath): self = .path(text())
    case urids.map(URI.atomString): self = .string(text())
    case urids.map(URI.atomFloat) where data.count >= 4: self = .float(data.loadUnaligned(as: Float.self))
    case urids.map(URI.atomDouble) where data.count >= 8: self = .double(data.loadUnaligned(as: Double.self))
    case urids.map(URI.atomInt) where data.count >= 4: self = .int(data.loadUnaligned(as: Int32.self))
    case urids.map(URI.atomLong) where data.count >= 8: self = .long(data.loadUnaligned(as: Int64.self))
    case urids.map(URI.atomBool) where data.count >= 4: self = .bool(data.loadUnaligned(as: Int32.self) != 0)
    default: return nil
    }
  }
}

/// Builds atom bytes (native-endian, each property's value padded to 8 bytes).
private struct Forge {
  var bytes: [UInt8] = []

  mutating func u32(_ x: UInt32) { withUnsafeBytes(of: x) { bytes += $0 } }
  mutating func u64(_ x: UInt64) { withUnsafeBytes(of: x) { bytes += $0 } }
  mutating func cString(_ s: String) { bytes += Array(s.utf8) + [0] }
  mutating func pad() { while bytes.count % 8 != 0 { bytes.append(0) } }

  /// A property body: key, context 0, then the value atom (its size and type, its body), padded.
  mutating func property(key: UInt32, type: UInt32, _ write: (inout Forge) -> Void) {
    u32(key)
    u32(0)
    var value = Forge()
    write(&value)
    u32(UInt32(value.bytes.count))
    u32(type)
    bytes += value.bytes
    pad()
  }

  /// An atom: its size (of `body`) and type, then `body`.
  static func atom(type: UInt32, body: [UInt8]) -> [UInt8] {
    var f = Forge()
    f.u32(UInt32(body.count))
    f.u32(type)
    f.bytes += body
    return f.bytes
  }
}
