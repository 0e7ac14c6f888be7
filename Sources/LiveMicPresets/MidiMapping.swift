/// A MIDI control-change mapping: controller `cc` (0–127) on `channel` (1–16, nil: any) sets
/// parameter `key`, scaled to its range.
///
/// Thread: any (value type).
public struct MidiMapping: Sendable, Equatable {
  public var cc: Int
  public var channel: Int?
  public var key: String

  public init(cc: Int, channel: Int?, key: String) {
    self.cc = cc
    self.channel = channel
    self.key = key
  }

  /// Parses `CC[:CHANNEL]=KEY`.
  public init?(parsing text: String) {
    let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2 else { return nil }
    let left = parts[0].split(separator: ":").map(String.init)
    guard let cc = Int(left[0]), (0...127).contains(cc) else { return nil }
    var channel: Int?
    if left.count == 2 {
      guard let ch = Int(left[1]), (1...16).contains(ch) else { return nil }
      channel = ch
    }
    guard left.count <= 2, !parts[1].isEmpty else { return nil }
    self.init(cc: cc, channel: channel, key: parts[1])
  }
}
