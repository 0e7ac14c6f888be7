import DSP
import LiveMicPresets

/// A control request that cannot be done; the message is one sentence, the code names the
/// reason (`control.refused` unless the request's own error had one).
struct ControlError: CodedError {
  let message: String
  let code: String
  init(_ message: String, code: String = "control.refused") { (self.message, self.code) = (message, code) }
  /// The control answer for a subsystem's error: its message and its code.
  init(_ error: some CodedError) { (message, code) = (error.description, error.code) }
  var description: String { message }
}

extension JSONObject {
  /// A request's optional true/false field: false when absent or null, and an error when it
  /// holds something else.
  func flag(_ key: String) throws(ControlError) -> Bool {
    switch self[key] {
    case nil, .null?: return false
    case .bool(let b)?: return b
    default: throw ControlError("\"\(key)\" must be true or false")
    }
  }

  /// A request's optional string field: its text, `fallback` when the field is absent or null,
  /// and an error when it holds something else (a number given as an action was once taken as
  /// the action's default).
  func text(_ key: String, or fallback: String) throws(ControlError) -> String {
    switch self[key] {
    case nil, .null?: return fallback
    case .string(let s)?: return s
    default: throw ControlError("\"\(key)\" must be a string")
    }
  }
}
