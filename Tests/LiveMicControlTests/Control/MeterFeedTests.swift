import Dispatch
import Foundation
import LiveMicEngine
import LiveMicOffline
import Testing

@testable import LiveMicControl

/// The meter feed on its own: the audio thread's `Meters` without a server, the cycle counter
/// played by the test.
@Suite struct MeterFeedTests {
  static func none() -> (gainReductions: [(id: String, decibels: Double)], loudness: LoudnessReading?) {
    ([("limiter", 3.04)], nil)
  }

  @Test("A one-shot request turns metering on (waiting for two cycles) and its lease keeps it on")
  func lease() {
    let feed = MeterFeed()
    let meters = Meters()
    feed.keepMetering(meters, followed: false)
    #expect(!meters.isWanted)
    var cycles: UInt64 = 0
    let reading = feed.current(
      meters,
      cycles: {
        cycles += 1; return cycles
      }, followed: false, Self.none)
    #expect(meters.isWanted && cycles >= 3, "cycles \(cycles)")
    #expect(reading.channels.count == Meters.channelCount && reading.gainReductions.first?.id == "limiter")
    #expect(reading.fields["gain_reduction_db"] == ["limiter": 3])
    // Within the lease, a wake without subscribers keeps the metering on; nothing is streamed.
    feed.keepMetering(meters, followed: false)
    #expect(meters.isWanted)
    #expect(feed.due(meters, followed: false, Self.none) == nil)
  }

  @Test("Followed, a reading is due every 50 ms; a request meanwhile gets the streamed one")
  func followed() throws {
    let feed = MeterFeed()
    let meters = Meters()
    #expect(feed.nextWake(followed: false) > .now() + .milliseconds(900))
    feed.keepMetering(meters, followed: true)
    #expect(meters.isWanted)
    // Just turned on: the first reading is due a period later.
    #expect(feed.due(meters, followed: true, Self.none) == nil)
    #expect(feed.nextWake(followed: true) <= .now() + .milliseconds(50))
    usleep(50_000)
    let streamed = try #require(feed.due(meters, followed: true, Self.none))
    var reads = 0
    let again = feed.current(meters, cycles: { 0 }, followed: true) {
      reads += 1
      return ([], nil)
    }
    #expect(reads == 0 && again.gainReductions.count == streamed.gainReductions.count)
    // Nobody follows and no lease: metering goes off.
    let quiet = MeterFeed()
    quiet.keepMetering(meters, followed: false)
    #expect(!meters.isWanted)
  }
}
