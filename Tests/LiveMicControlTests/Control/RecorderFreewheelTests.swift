import DSP
import Foundation
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The recorder's account of a freewheel, driven by hand without a session or a server: the
/// notifications and the consumers' drop counts are set in the order a slow supervisor sees
/// them.
@Suite struct RecorderFreewheelTests {
  /// A recorder with a loudness meter and a listener that keeps the events.
  static func recorder() throws -> (Recorder, LoudnessMeter, Locked<[String]>) {
    let lines = Locked<[String]>([])
    let stream = try EventStream(destination: nil)
    stream.listener = { _, line in lines.withLock { $0.append(line) } }
    let recorder = Recorder(options: RunOptions(), stream: stream, wake: DispatchSemaphore(value: 0))
    let meter = try LoudnessMeter(sampleRate: 48000, pace: recorder.writerPace)
    recorder.loudness = meter
    return (recorder, meter, lines)
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
    let (recorder, meter, lines) = try Self.recorder()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = Recorder.FreewheelWatch()
    meter.consumer.droppedFrames.add(100, ordering: .relaxed)  // before: not the freewheel's
    recorder.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    meter.consumer.droppedFrames.add(55040, ordering: .relaxed)  // before the supervisor woke
    recorder.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(1000, ordering: .relaxed)  // after it saw the start
    events.noteFreewheel(false)
    recorder.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"] as? Int == 56040, "\(changes)")
    #expect(changes.last?["dropped_frames"] as? Int == 0, "\(changes)")
  }

  /// A start and a stop both between two wakes: the drops meanwhile are the freewheel's.
  @Test func aWholeFreewheelBetweenTwoWakesKeepsItsDrops() throws {
    let (recorder, meter, lines) = try Self.recorder()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = Recorder.FreewheelWatch()
    recorder.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    meter.consumer.droppedFrames.add(4096, ordering: .relaxed)
    events.noteFreewheel(false)
    recorder.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"] as? Int == 4096, "\(changes)")
  }

  /// A stop and the next start between two wakes: the first freewheel's drops are reported with
  /// its stop, and the second counts only its own.
  @Test func aStopAndAStartBetweenTwoWakesSplitTheDrops() throws {
    let (recorder, meter, lines) = try Self.recorder()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = Recorder.FreewheelWatch()
    recorder.followFreewheel(&watch, events)
    events.noteFreewheel(true)
    recorder.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(300, ordering: .relaxed)
    events.noteFreewheel(false)
    events.noteFreewheel(true)
    recorder.followFreewheel(&watch, events)
    meter.consumer.droppedFrames.add(20, ordering: .relaxed)
    events.noteFreewheel(false)
    recorder.followFreewheel(&watch, events)
    let changes = Self.freewheelEvents(lines)
    #expect(changes.map { $0["on"] as? Bool } == [true, false, true, false], "\(changes)")
    #expect(changes.compactMap { $0["loudness_dropped_frames"] as? Int } == [300, 20], "\(changes)")
  }
}
