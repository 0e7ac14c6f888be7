import Dispatch
import Foundation
import LiveMicEngine

/// JACK's freewheel mode: an export (Ardour's, `jack_freewheel y`) makes the server run the
/// graph as fast as it can, with no deadline. LiveMic's chain runs the same; the supervisor
/// reports each start and stop (log, `freewheel` event, `status`) and paces the tap consumers:
/// meanwhile their threads rest 1 ms instead of 20 ms (`WriterPace`) and their rings hold 30 s
/// instead of 3 (swapped in while running, `TapConsumer.resize`), so the recordings keep every
/// frame. The audio thread still never waits for them: a consumer that falls behind drops whole
/// cycles, counted and reported in one sentence when the freewheel ends. Thread: the
/// supervisor.
extension Recorder {
  /// What the supervisor saw of one client's freewheeling.
  struct FreewheelWatch {
    /// The client's freewheel notifications handled so far.
    var changesSeen: UInt64 = 0
    var on = false
    /// When the current freewheel was seen to start.
    var since = DispatchTime.now()
    /// Each tap consumer's dropped frames at the last wake that saw no freewheel: the graph
    /// runs hundreds of times real time, so a ring can overflow between the start and the wake
    /// that sees it, and those drops are the freewheel's too.
    var droppedAtStart: [ObjectIdentifier: UInt64] = [:]
  }

  /// Reports the starts and stops noted since the last call, in turn (when more came in
  /// between, the last start and stop), and sets the writers' pace.
  func followFreewheel(_ watch: inout FreewheelWatch, _ events: EngineEvents) {
    // Counted before the notifications are read: a start after this count is seen at the next
    // wake, with this count as its baseline.
    let baseline = watch.on ? nil : dropCounts
    if !watch.on { freeLeftRings() }
    let changes = events.freewheelChanges.load(ordering: .acquiring)
    guard changes != watch.changesSeen else {
      if let baseline { watch.droppedAtStart = baseline }
      return
    }
    let steps = (changes &- watch.changesSeen) % 2 == 1 ? 1 : 2
    watch.changesSeen = changes
    for _ in 0..<steps { report(freewheel: &watch, on: !watch.on, events) }
    // The latest notification decides.
    let now = events.freewheeling.load(ordering: .relaxed)
    if watch.on != now { report(freewheel: &watch, on: now, events) }
  }

  /// The ring every tap consumer has while JACK freewheels, at least (43.7 s at 48 kHz after
  /// libjack's rounding up to a power of two: 16 MiB): at the 150 to 250 times real time
  /// measured, about 200 ms of the writer's time instead of 25 ms.
  static let freewheelRingSeconds = 30.0

  /// The tap consumers running and what to call them.
  private var consumers: [(consumer: TapConsumer, label: String)] {
    var all = recordings.map { ($0.consumer, "recording \($0.id)") }
    if let s = streamOut { all.append((s.consumer, "the stream")) }
    if let meter = loudness { all.append((meter.consumer, Self.loudnessLabel)) }
    return all
  }

  /// The tap consumers running, what to call them, and the frames each has dropped.
  private var consumerDrops: [(id: ObjectIdentifier, label: String, dropped: UInt64)] {
    consumers.map {
      (ObjectIdentifier($0.consumer), $0.label, $0.consumer.droppedFrames.load(ordering: .relaxed))
    }
  }

  /// Each tap consumer's dropped frames now (the baseline of a `FreewheelWatch`).
  var dropCounts: [ObjectIdentifier: UInt64] {
    Dictionary(consumerDrops.map { ($0.id, $0.dropped) }) { a, _ in a }
  }

  /// Gives `consumer` the freewheel ring (`on`) or its own size back; the rings it leaves are
  /// freed once the writer has read them out (`freeLeftRings`, every wake).
  func sizeRing(_ consumer: TapConsumer, freewheeling on: Bool) {
    consumer.resize(seconds: on ? max(consumer.seconds, Self.freewheelRingSeconds) : consumer.seconds)
  }

  /// Sets the writers' pace and the consumers' rings for freewheeling (`on`) or real time.
  func paceWriters(freewheeling on: Bool) {
    writerPace.setFreewheeling(on)
    for (consumer, _) in consumers { sizeRing(consumer, freewheeling: on) }
  }

  /// Frees the rings the consumers have left after a resize (a freewheel's, once read out).
  func freeLeftRings() {
    for (consumer, _) in consumers { consumer.freeLeftRings() }
  }

  private static let loudnessLabel = "the loudness meter"

  private func report(freewheel watch: inout FreewheelWatch, on: Bool, _ events: EngineEvents) {
    watch.on = on
    paceWriters(freewheeling: on)
    if on {
      watch.since = .now()
      Log.info("JACK is freewheeling (running the graph as fast as it can); the writers keep up every 1 ms")
      stream.emit("freewheel", ["on": .bool(true)])
      return
    }
    let cycles =
      events.freewheelStopCycles.load(ordering: .relaxed)
      &- events.freewheelStartCycles.load(ordering: .relaxed)
    let frames =
      events.freewheelStopFrames.load(ordering: .relaxed)
      &- events.freewheelStartFrames.load(ordering: .relaxed)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - watch.since.uptimeNanoseconds) / 1e9
    let rate = Double(events.sampleRate.load(ordering: .relaxed))
    var dropped: UInt64 = 0
    var loudnessDropped: UInt64 = 0
    for consumer in consumerDrops {
      let lost = consumer.dropped &- (watch.droppedAtStart[consumer.id] ?? 0)
      guard lost > 0 else { continue }
      if consumer.label == Self.loudnessLabel { loudnessDropped = lost } else { dropped += lost }
      // The duration only where the rate is known (a session always has one; a bare test may not).
      let duration = rate > 0 ? " (" + String(format: "%.1f", Double(lost) / rate) + " s)" : ""
      Log.error(
        "\(consumer.label) dropped \(lost) frames\(duration) while JACK was freewheeling: its thread fell behind the graph"
      )
    }
    Log.info(
      "JACK stopped freewheeling after \(cycles) cycles (\(frames) frames, "
        + String(format: "%.1f s of audio in %.1f s", Double(frames) / max(rate, 1), seconds) + ")")
    stream.emit(
      "freewheel",
      [
        "on": .bool(false), "cycles": .int(Int(cycles)), "frames": .int(Int(frames)),
        "seconds": .number(seconds),
        "dropped_frames": .int(Int(dropped)), "loudness_dropped_frames": .int(Int(loudnessDropped)),
      ])
    // A start reported in the same wake counts from here.
    watch.droppedAtStart = dropCounts
  }
}
