/// An error with a stable code beside its one-sentence message: people read the message,
/// scripts and the control API's clients match the code. A code is `subsystem.reason`, lower
/// case with hyphens (`preset.not-found`, `plugin.unknown-uri`), and never changes meaning once
/// released; an error that wraps another has the inner one's code.
///
/// Thread: any (value types).
public protocol CodedError: Error, CustomStringConvertible {
  /// `subsystem.reason`.
  var code: String { get }
}
