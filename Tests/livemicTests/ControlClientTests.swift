import Foundation
import LiveMicPresets
import Testing

@testable import livemic

/// `livemic ctl`'s reading of its words, offline.
@Suite struct ControlClientTests {
  /// The one-sentence complaint for `words`, or nil when they make a request.
  static func complaint(_ words: [String]) -> String? {
    do {
      _ = try ControlClient.request(words)
      return nil
    } catch {
      return error.description
    }
  }

  @Test(
    "A known command with the wrong words names its own form; an unknown one says it is unknown",
    arguments: [
      (["set"], "use 'ctl set KEY VALUE'"),
      (["set", "output.volume"], "use 'ctl set KEY VALUE'"),
      (["preset", "load"], "use 'ctl preset load NAME|PATH' or 'ctl preset save NAME|PATH'"),
      (["learn"], "use 'ctl learn KEY'"),
      (["route", "override"], "use 'ctl route"),
      (["mute", "now"], "use 'ctl mute [--mode ramp|input|suspend]'"),
      (["bogus"], "'ctl bogus' is not a ctl command"),
    ])
  func wrongWords(words: [String], message: String) {
    let text = Self.complaint(words)
    #expect(text?.contains(message) == true, "\(text ?? "accepted")")
  }

  @Test("Well-formed words still make their requests")
  func requests() throws {
    #expect(try ControlClient.request(["set", "eq.bass_db", "3"])["value"]?.number == 3)
    #expect(
      try ControlClient.request(["route", "default", "system:playback_"])["action"]?.string == "default")
    #expect(try ControlClient.request(["status"])["cmd"]?.string == "status")
  }
}
