/// How a parameter's value moves when it is changed.
public enum ParameterKind: Sendable, Equatable {
  /// A continuous value, smoothed towards its target once per sub-block.
  case continuous
  /// An on/off switch (0 or 1); applied at the next sub-block, crossfaded where it bypasses.
  case toggle
  /// One of a fixed list of values; applied at the next sub-block.
  case choice([Float])
  /// A whole number in the range; applied at the next sub-block.
  case integer
  /// A value the stage reports (a plugin's control output): read-only, written by the audio
  /// thread.
  case output
}

/// The documented description of one parameter of a unit.
///
/// Thread: any (immutable value).
public struct ParameterSpec: Sendable, Equatable {
  /// The parameter's name within its unit, with its unit in the name (`gain_db`).
  public let name: String
  /// The unit of measure shown in docs ("dB", "Hz", "ms", "ratio", "" for none).
  public let unit: String
  public let minimum: Float
  public let maximum: Float
  public let defaultValue: Float
  public let kind: ParameterKind
  /// One sentence for the parameter reference.
  public let summary: String

  public init(
    _ name: String, unit: String, range: ClosedRange<Float>, default defaultValue: Float,
    kind: ParameterKind = .continuous, _ summary: String
  ) {
    self.name = name
    self.unit = unit
    self.minimum = range.lowerBound
    self.maximum = range.upperBound
    self.defaultValue = defaultValue
    self.kind = kind
    self.summary = summary
  }

  /// A toggle parameter (0 = off, 1 = on).
  public static func toggle(_ name: String, default on: Bool, _ summary: String) -> ParameterSpec {
    ParameterSpec(name, unit: "", range: 0...1, default: on ? 1 : 0, kind: .toggle, summary)
  }

  /// The value the unit will actually use for `value`: clamped to the range, rounded for toggles
  /// and snapped to the nearest choice. NaN becomes the default.
  /// - Realtime: safe
  public func sanitize(_ value: Float) -> Float {
    if value.isNaN { return defaultValue }
    switch kind {
    case .continuous, .output:
      return min(max(value, minimum), maximum)
    case .integer:
      return min(max(value.rounded(), minimum), maximum)
    case .toggle:
      return value >= 0.5 ? 1 : 0
    case .choice(let options):
      var best = options[0]
      for i in 1..<options.count where abs(options[i] - value) < abs(best - value) {
        best = options[i]
      }
      return best
    }
  }
}
