import Foundation
import Synchronization
import Testing

/// Takes and retakes: a measurement on a live server is repeated only on evidence that the
/// server spoilt it, evidence other than the measurement's own assertion (a gap in the capture's
/// frame times, the generator's own signal off, an xrun the server counted, a rise in LiveMic's
/// `missed_cycles`). Every retake prints one line and goes into the run's ledger.
///
/// The ledger: with `LIVEMIC_TAKE_LEDGER` set (scripts/test sets it), every take appends one
/// line `take|retake <TAB> TEST <TAB> LABEL <TAB> N <TAB> EVIDENCE` to that file;
/// `scripts/take-summary` counts them at the end of the run and fails it when more than 5% of
/// takes were retaken or one test was retaken more than `maximumRetakes` times in all.
enum Takes {
  /// Retakes allowed for one measurement; when the last take is spoilt too, the test fails (a
  /// server that noisy cannot vouch for the audio).
  static let maximumRetakes = 3

  private static let ledgerPath = ProcessInfo.processInfo.environment["LIVEMIC_TAKE_LEDGER"]
  private static let lock = Mutex<Void>(())

  /// The running test's name, for the ledger and the retake lines.
  static var testName: String {
    guard let test = Test.current else { return "?" }
    let suite = test.id.nameComponents.dropLast().last ?? ""
    return suite.isEmpty ? test.name : "\(suite).\(test.name)"
  }

  /// Notes take `number` (1 for the first) of `label`; `evidence` is why an earlier take was
  /// retaken (nil for a first take).
  static func note(label: String, number: Int, evidence: String?) {
    let test = testName
    if let evidence {
      print("[retake] \(test) \(label): take \(number) (the server spoilt take \(number - 1): \(evidence))")
    }
    guard let ledgerPath else { return }
    let kind = number == 1 ? "take" : "retake"
    let clean = (evidence ?? "-").replacingOccurrences(of: "\t", with: " ")
      .replacingOccurrences(of: "\n", with: " ")
    let line = "\(kind)\t\(test)\t\(label)\t\(number)\t\(clean)\n"
    lock.withLock { _ in
      let fd = open(ledgerPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
      guard fd >= 0 else { return }
      _ = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
      close(fd)
    }
  }
}

/// What one take measured, and the independent evidence that the server spoilt it (nil: clean).
struct Take<T> {
  var value: T
  var spoilt: String?
  init(_ value: T, spoilt: String?) {
    self.value = value
    self.spoilt = spoilt
  }
}

/// Runs `take` until a take is clean by its own evidence, at most `Takes.maximumRetakes` times
/// more; prints and records every retake. Throws when every take was spoilt, saying so: the
/// assertion is never judged on a spoilt take or on part of one.
func retaking<T>(_ label: String, _ take: () throws -> Take<T>) throws -> T {
  var evidence: String?
  for number in 1...(1 + Takes.maximumRetakes) {
    Takes.note(label: label, number: number, evidence: evidence)
    let result = try take()
    guard let spoilt = result.spoilt else { return result.value }
    evidence = spoilt
  }
  throw HarnessError(
    "\(label): all \(1 + Takes.maximumRetakes) takes were spoilt by the server (last: \(evidence ?? "?")); "
      + "a server this noisy cannot vouch for the audio")
}

/// Watches a capture for signs, independent of any test's assertion, that the server spoilt a
/// stretch of it: gaps in its frame times, the generator's own signal (recorded directly on one
/// channel) differing from what the generator writes, a rise in LiveMic's `missed_cycles`, and
/// xruns the server reported (alone, only where LiveMic's cycles are not watched: `verdict`).
struct Witness {
  let capture: TestClient
  /// The channels that record generators directly, and the generators' signals.
  var generators: [(channel: Int, signal: TestSignal)] = []
  /// LiveMic's `missed_cycles` now (from `ctl status`); nil when LiveMic is not asked.
  var missedCycles: (() -> MissedCycles?)?
  /// Whether LiveMic runs on the capture's server, so the frame time of its latest missed cycle
  /// tells whether that cycle fell inside the stretch (false for NetJACK2's slave: any rise
  /// counts).
  var missedCyclesOnCaptureClock = true

  /// Where a watched stretch starts.
  struct Mark {
    let frame: Int
    let xruns: Int
    let missed: MissedCycles?
  }

  /// Marks the start of a stretch (before anything the take depends on, such as a message
  /// that the take then measures).
  /// The counters are read before the frame, so whatever they miss is in the stretch.
  func mark() -> Mark {
    let missed = missedCycles?()
    let xruns = capture.xruns.load(ordering: .relaxed)
    return Mark(frame: capture.frameCount, xruns: xruns, missed: missed)
  }

  /// Marks the end of a stretch: the frame first, then the counters (after a wait, since an
  /// xrun is reported after the cycle it spoilt), so they count everything in the stretch.
  func endMark() -> Mark {
    let frame = capture.frameCount
    usleep(20_000)
    return Mark(frame: frame, xruns: capture.xruns.load(ordering: .relaxed), missed: missedCycles?())
  }

  /// Why the stretch from `mark` to frame `end` is spoilt, or nil when nothing shows it was.
  func evidence(since mark: Mark, to end: Int) -> String? {
    usleep(20_000)  // an xrun is reported after the cycle it spoilt
    var reasons: [String] = []
    let gaps = capture.frameTimeGaps(from: mark.frame, to: end)
    if gaps > 0 { reasons.append("\(gaps) gaps in the capture's frame times") }
    let xruns = capture.xruns.load(ordering: .relaxed) - mark.xruns
    reasons += generatorEvidence(from: mark.frame, to: end)
    if let before = mark.missed, let after = missedCycles?(),
      let missed = missedCyclesSpoil(before: before, after: after, from: mark.frame, to: end)
    {
      reasons.append(missed)
    }
    return verdict(reasons, xruns: xruns, watchesLiveMic: mark.missed != nil)
  }

  /// Whether LiveMic's missed cycles between two readings spoil the stretch of capture frames
  /// `start..<end`: any rise does, except missed cycles whose gaps in the server's frame times
  /// (`recent_missed_cycles`: each one located) all lie wholly outside the stretch's frame
  /// times (they happened while `ctl status` ran, before or after the stretch). A gap that
  /// cannot be located (more than the history holds) spoils it. Nil when they do not.
  func missedCyclesSpoil(before: MissedCycles, after: MissedCycles, from start: Int, to end: Int) -> String? {
    let risen = after.count - before.count
    guard risen > 0 else { return nil }
    let spoilt = "LiveMic missed \(risen) cycles"
    guard missedCyclesOnCaptureClock else { return spoilt }
    let times = capture.recording(channel: 0, from: start, to: end).times
    guard let first = times.first, let last = times.last else { return spoilt }
    let stretch = last &- first
    for number in (before.count + 1)...after.count {
      guard let gap = after.recent.first(where: { $0.number == number }) else { return spoilt }
      // Frame times relative to the stretch's first (they wrap at 2³²).
      let gapStart = gap.expectedFrameTime &- first
      let gapEnd = gapStart &+ UInt32(gap.missingFrames)
      let wholeBefore = Int32(bitPattern: gapEnd) <= 0
      let wholeAfter = Int32(bitPattern: gapStart) > Int32(bitPattern: stretch)
      if !(wholeBefore || wholeAfter) { return spoilt }
    }
    return nil
  }

  /// Records `frames` more frames and returns exactly that stretch of `channels` with the
  /// evidence over it. `settleMicroseconds` first waits (for a change the take measures to
  /// settle), outside the watched stretch. With `since` (marked just before a message was
  /// sent, which a lost cycle could lose), the first `deliveryMicroseconds` of the wait are
  /// watched too: the message reaches LiveMic within a cycle or two, and a cycle lost after
  /// that only delays the smoothing by one period.
  func take(
    frames: Int, channels: [Int], settleMicroseconds: UInt32 = 0, since: Mark? = nil,
    deliveryMicroseconds: UInt32 = 100_000
  ) throws -> Take<[[Float]]> {
    var delivery: String?
    if let since {
      let began = Date()
      usleep(min(deliveryMicroseconds, settleMicroseconds))
      delivery = evidence(since: since, until: endMark())
      let waited = UInt32(min(Date().timeIntervalSince(began) * 1e6, Double(settleMicroseconds)))
      usleep(settleMicroseconds - waited)
    } else if settleMicroseconds > 0 {
      usleep(settleMicroseconds)
    }
    let mark = self.mark()
    let start = mark.frame
    try capture.record(frames: frames)
    // Exactly `frames` frames (tests choose a whole number of periods of their signals).
    let samples = channels.map { capture.recording(channel: $0, from: start, to: start + frames).samples }
    let spoilt = [delivery, evidence(since: mark, to: start + frames)].compactMap { $0 }
    return Take(samples, spoilt: spoilt.isEmpty ? nil : spoilt.joined(separator: "; "))
  }

  /// Why the stretch between two marks is spoilt, or nil: `evidence(since:to:)` with `end`'s
  /// readings instead of new ones.
  func evidence(since mark: Mark, until end: Mark) -> String? {
    var reasons: [String] = []
    let gaps = capture.frameTimeGaps(from: mark.frame, to: end.frame)
    if gaps > 0 { reasons.append("\(gaps) gaps in the capture's frame times") }
    reasons += generatorEvidence(from: mark.frame, to: end.frame)
    if let before = mark.missed, let after = end.missed,
      let missed = missedCyclesSpoil(before: before, after: after, from: mark.frame, to: end.frame)
    {
      reasons.append(missed)
    }
    return verdict(
      reasons, xruns: end.xruns - mark.xruns, watchesLiveMic: mark.missed != nil && end.missed != nil)
  }

  /// The evidence as one line, or nil when it shows nothing spoilt. An xrun the server counted
  /// is named beside other evidence, but alone it spoils a take only when LiveMic's own cycles
  /// are not watched: when every client of the stretch ran every cycle in order (no gap in the
  /// capture's frame times, none in LiveMic's, the generator's signal exact), a late wake-up
  /// the server counted changed no sample of it.
  func verdict(_ reasons: [String], xruns: Int, watchesLiveMic: Bool) -> String? {
    guard xruns > 0 else { return reasons.isEmpty ? nil : reasons.joined(separator: ", ") }
    guard !reasons.isEmpty || !watchesLiveMic else { return nil }
    return (reasons + ["\(xruns) xruns counted by the server"]).joined(separator: ", ")
  }

  /// The generators' own signals over frames `start..<end`, where they differ from what the
  /// generators write.
  func generatorEvidence(from start: Int, to end: Int) -> [String] {
    var reasons: [String] = []
    for (channel, signal) in generators {
      let direct = capture.recording(channel: channel, from: start, to: end)
      var off = 0
      for i in 0..<direct.samples.count
      where direct.samples[i].bitPattern
        != signal.value(atFrame: direct.times[i], sampleRate: capture.sampleRate).bitPattern
      {
        off += 1
      }
      if off > 0 { reasons.append("the generator's own signal off at \(off) frames (channel \(channel))") }
    }
    return reasons
  }
}

extension Witness {
  /// The usual rig's witness (`LiveAudioTests.rig` and its kind): the generator on channel 0,
  /// LiveMic `client`'s missed cycles read over its control socket.
  static func rig(
    _ capture: TestClient, signal: TestSignal, client: String, environment: [String: String] = [:]
  ) -> Witness {
    Witness(
      capture: capture, generators: [(0, signal)],
      missedCycles: { missedCycles(client: client, environment: environment) })
  }

  /// `missed_cycles` and `last_missed_cycle` of the running LiveMic `client` (nil when it does
  /// not answer).
  static func missedCycles(client: String, environment: [String: String]) -> MissedCycles? {
    guard let object = LiveRig.status(name: client, environment: environment),
      let count = (object["missed_cycles"] as? NSNumber)?.intValue
    else { return nil }
    let gap = { (fields: [String: Any]) -> MissedCycles.Gap? in
      guard let time = (fields["expected_frame_time"] as? NSNumber)?.uint32Value,
        let missing = (fields["missing_frames"] as? NSNumber)?.intValue,
        let number = (fields["number"] as? NSNumber)?.intValue
      else { return nil }
      return .init(expectedFrameTime: time, missingFrames: missing, number: number)
    }
    let recent = (object["recent_missed_cycles"] as? [[String: Any]] ?? []).compactMap(gap)
    return MissedCycles(count: count, recent: recent)
  }
}

/// LiveMic's `missed_cycles` as `ctl status` reports it, with its latest gap.
struct MissedCycles {
  /// A missed cycle: the server frame time it should have started at, the frames missing, and
  /// its number in the count.
  struct Gap {
    var expectedFrameTime: UInt32
    var missingFrames: Int
    var number: Int
  }
  var count: Int
  /// The last few missed cycles (`recent_missed_cycles`), each located.
  var recent: [Gap]
}

/// A thread of the test process that does nothing but sleep 2 ms at a time, noting each wake-up
/// that came late by `thresholdSeconds` or more: the machine holding the test process off its
/// cores. Evidence, independent of any test's assertion, that a latency measured in that stretch
/// measured the machine rather than LiveMic (the CI machine's host preempts its two vCPUs for
/// tens of milliseconds at a time; docs/testing.md, "Takes and retakes").
final class StallProbe: @unchecked Sendable {
  /// What the probe's thread shares with it: the thread holds this, not the probe, so the
  /// probe's deinit (which stops the thread) runs once the test lets it go.
  private final class Shared: @unchecked Sendable {
    let stalls = Mutex<[(at: Date, seconds: Double)]>([])
    let running = Atomic<Bool>(true)
  }
  private let shared = Shared()
  let thresholdSeconds: Double

  init(thresholdSeconds: Double = 0.03) {
    self.thresholdSeconds = thresholdSeconds
    let (shared, threshold) = (shared, thresholdSeconds)
    let thread = Thread {
      while shared.running.load(ordering: .relaxed) {
        let before = Date()
        usleep(2000)
        let late = Date().timeIntervalSince(before) - 0.002
        if late >= threshold { shared.stalls.withLock { $0.append((before, late)) } }
      }
    }
    thread.qualityOfService = .userInteractive
    thread.start()
  }

  deinit { shared.running.store(false, ordering: .relaxed) }

  /// Stops the probe's thread.
  func stop() { shared.running.store(false, ordering: .relaxed) }

  /// Why a stretch from `start` until now was spoilt, or nil: the stalls noted in it.
  func evidence(since start: Date) -> String? {
    let seen = shared.stalls.withLock { $0.filter { $0.at >= start } }
    guard let worst = seen.map(\.seconds).max() else { return nil }
    return "the test process was held off the CPU \(seen.count) times for \(Int(thresholdSeconds * 1000)) ms "
      + "or more (worst \(Int(worst * 1000)) ms)"
  }
}
