import CLo
import Foundation
import LiveMicPresets

/// Reading OSC datagrams with liblo, for the OSC door and the NSM client. Never real-time.
enum OscCodec {
  /// The path and arguments of an OSC message (strings, and int32/float/double as numbers;
  /// nil for other types); nil when the datagram is not OSC.
  static func decode(_ buffer: inout [UInt8], _ size: Int) -> (path: String, args: [JSONValue?])? {
    var result: Int32 = 0
    guard
      let path = buffer.withUnsafeMutableBytes({ lo_get_path($0.baseAddress, size) }).map({
        String(cString: $0)
      }),
      let message = buffer.withUnsafeMutableBytes({ lo_message_deserialise($0.baseAddress, size, &result) })
    else { return nil }
    defer { lo_message_free(message) }
    let types = Array(lo_message_get_types(message).map { String(cString: $0) } ?? "")
    guard let argv = lo_message_get_argv(message) else { return (path, []) }
    let args: [JSONValue?] = types.enumerated().map { i, type in
      guard let a = argv[i] else { return nil }
      switch type {
      case "f": return .number(Double(a.pointee.f))
      case "d": return .number(a.pointee.d)
      case "i": return .number(Double(a.pointee.i))
      case "s", "S": return .string(String(cString: UnsafeRawPointer(a).assumingMemoryBound(to: CChar.self)))
      default: return nil
      }
    }
    return (path, args)
  }
}
