import DSP
import Foundation
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The supervisor's account of a freewheel, driven by hand: the notifications and the
/// consumers' drop counts are set in the order a slow supervisor sees them.
@Suite struct FreewheelWatchTests {
  /// A session with a loudness meter and a listener that keeps the events.
  static func session() throws -> (LiveSession, LoudnessMeter, Locked<[String]>) {
    let session = LiveSession(options: RunOptions())
    let lines = Locked<[String]>([])
    session.stream = try EventStream(destination: nil)
    session.stream.listener = { _, line in lines.withLock { $0.append(line) } }
    let meter = try LoudnessMeter(sampleRate: 48000, pace: session.writerPace)
    session.loudness = meter
    return (session, meter, lines)
  }

  static func freewheelEvents(_ lines: Locked<[String]>) -> [[String: Any]] {
    lines.withLock { $0 }.compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }.filter { $0["event"] as? String == "freewheel" }
  }

  /// The graph runs hundreds of times real time: the meter's ring can overflow before the
  /// supervisor, busy with a request, wakes to the start. Those drops happened freewheeling and
  /// are reported with the stop, like the ones after the supervisor saw the start.
  @Test func dropsBeforeTheSupervisorSawTheStartAreReported() throws {
    let (session, meter, lines) = try Self.session()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = LiveSession.FreewheelWatch()
    meter.consumer.droppedFrames.add(100, ordering: .relaxed)  // before: not the freewheel's
    session.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    meter.consumer.droppedFrames.add(55040, ordering: .relaxed)  // before the supervisor woke
    session.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(1000, ordering: .relaxed)  // after it saw the start
    events.noteFreewheel(false)
    session.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"] as? Int == 56040, "\(changes)")
    #expect(changes.last?["dropped_frames"] as? Int == 0, "\(changes)")
  }

  /// A start and a stop both between two wakes: the drops meanwhile are the freewheel's.
  @Test func aWholeFreewheelBetweenTwoWakesKeepsItsDrops() throws {
    let (session, meter, lines) = try Self.session()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = LiveSession.FreewheelWatch()
    session.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    meter.consumer.droppedFrames.add(4096, ordering: .relaxed)
    events.noteFreewheel(false)
    session.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"] as? Int == 4096, "\(changes)")
  }

  /// A stop and the next start between two wakes: the first freewheel's drops are reported with
  /// its stop, and the second counts only its own.
  @Test func aStopAndAStartBetweenTwoWakesSplitTheDrops() throws {
    let (session, meter, lines) = try Self.session()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = LiveSession.FreewheelWatch()
    session.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    session.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(300, ordering: .relaxed)
    events.noteFreewheel(false)
    events.noteFreewheel(true)
    session.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(20, ordering: .relaxed)
    events.noteFreewheel(false)
    session.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false, true, false], "\(changes)")
    #expect(changes.compactMap { $0["loudness_dropped_frames"] as? Int } == [300, 20], "\(changes)")
  }
}
