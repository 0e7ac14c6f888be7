import DSP
import Foundation
import LiveMicPresets
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The recorder's account of a freewheel, driven by hand without a session or a server: the
/// notifications and the consumers' drop counts are set in the order a slow supervisor sees
/// them.
@Suite struct RecorderFreewheelTests {
  /// A recorder with a loudness meter and a listener that keeps the events.
  static func recorder() throws -> (Recorder, LoudnessMeter, Locked<[JSONObject]>) {
    let lines = Locked<[JSONObject]>([])
    let stream = try EventStream(destination: nil)
    stream.listener = { _, line in lines.withLock { $0.append(line) } }
    let recorder = Recorder(options: RunOptions(), stream: stream, wake: DispatchSemaphore(value: 0))
    let meter = try LoudnessMeter(sampleRate: 48000, pace: recorder.writerPace)
    recorder.loudness = meter
    return (recorder, meter, lines)
  }

  /// What happens between and at the supervisor's wakes, in order.
  enum Step {
    /// The loudness meter's ring drops this many frames.
    case drop(Int)
    /// The server turns freewheeling on or off (the engine's notification).
    case freewheel(Bool)
    /// The supervisor wakes and follows the freewheel.
    case wake
  }

  /// Runs `steps` on a recorder with a loudness meter and returns its `freewheel` events.
  static func freewheelEvents(_ steps: [Step]) throws -> [JSONObject] {
    let (recorder, meter, lines) = try recorder()
    defer { meter.finish() }
    let events = EngineEvents()
    var watch = Recorder.FreewheelWatch()
    for step in steps {
      switch step {
      case .drop(let frames): meter.consumer.droppedFrames.add(UInt64(frames), ordering: .relaxed)
      case .freewheel(let on): events.noteFreewheel(on)
      case .wake: recorder.followFreewheel(&watch, events)
      }
    }
    return lines.withLock { $0 }.filter { $0["event"]?.string == "freewheel" }
  }

  /// The graph runs hundreds of times real time: the meter's ring can overflow before the
  /// supervisor, busy with a request, wakes to the start. Those drops happened freewheeling and
  /// are reported with the stop, like the ones after the supervisor saw the start.
  @Test func dropsBeforeTheSupervisorSawTheStartAreReported() throws {
    let changes = try Self.freewheelEvents([
      .drop(100),  // before: not the freewheel's
      .wake, .freewheel(true),
      .drop(55040),  // before the supervisor woke
      .wake,
      .drop(1000),  // after it saw the start
      .freewheel(false), .wake,
    ])
    #expect(changes.map { $0["on"]?.bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"]?.integer == 56040, "\(changes)")
    #expect(changes.last?["dropped_frames"]?.integer == 0, "\(changes)")
  }

  /// A start and a stop both between two wakes: the drops meanwhile are the freewheel's.
  @Test func aWholeFreewheelBetweenTwoWakesKeepsItsDrops() throws {
    let changes = try Self.freewheelEvents([.wake, .freewheel(true), .drop(4096), .freewheel(false), .wake])
    #expect(changes.map { $0["on"]?.bool } == [true, false], "\(changes)")
    #expect(changes.last?["loudness_dropped_frames"]?.integer == 4096, "\(changes)")
  }

  /// A stop and the next start between two wakes: the first freewheel's drops are reported with
  /// its stop, and the second counts only its own.
  @Test func aStopAndAStartBetweenTwoWakesSplitTheDrops() throws {
    let changes = try Self.freewheelEvents([
      .wake, .freewheel(true), .wake, .drop(300), .freewheel(false), .freewheel(true), .wake, .drop(20),
      .freewheel(false), .wake,
    ])
    #expect(changes.map { $0["on"]?.bool } == [true, false, true, false], "\(changes)")
    #expect(changes.compactMap { $0["loudness_dropped_frames"]?.integer } == [300, 20], "\(changes)")
  }
}
