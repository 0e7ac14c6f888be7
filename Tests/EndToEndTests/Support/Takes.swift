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
/// stretch of it: gaps in its frame times, xruns the server reported, the generator's own
/// signal (recorded directly on one channel) differing from what the generator writes, and a
/// rise in LiveMic's `missed_cycles`.
struct Witness {
  let capture: TestClient
  /// The channels that record generators directly, and the generators' signals.
  var generators: [(channel: Int, signal: TestSignal)] = []
  /// LiveMic's `missed_cycles` now (from `ctl status`); nil when LiveMic is not asked.
  var missedCycles: (() -> Int?)?

  /// Where a watched stretch starts.
  struct Mark {
    let frame: Int
    let xruns: Int
    let missed: Int?
  }

  /// Marks the start of a stretch (before anything the take depends on, such as a message
  /// that the take then measures).
  func mark() -> Mark {
    Mark(frame: capture.frameCount, xruns: capture.xruns.load(ordering: .relaxed), missed: missedCycles?())
  }

  /// Why the stretch from `mark` to frame `end` is spoilt, or nil when nothing shows it was.
  func evidence(since mark: Mark, to end: Int) -> String? {
    usleep(20_000)  // an xrun is reported after the cycle it spoilt
    var reasons: [String] = []
    let gaps = capture.frameTimeGaps(from: mark.frame, to: end)
    if gaps > 0 { reasons.append("\(gaps) gaps in the capture's frame times") }
    let xruns = capture.xruns.load(ordering: .relaxed) - mark.xruns
    if xruns > 0 { reasons.append("\(xruns) xruns counted by the server") }
    for (channel, signal) in generators {
      let direct = capture.recording(channel: channel, from: mark.frame, to: end)
      var off = 0
      for i in 0..<direct.samples.count
      where direct.samples[i].bitPattern
        != signal.value(atFrame: direct.times[i], sampleRate: capture.sampleRate).bitPattern
      {
        off += 1
      }
      if off > 0 { reasons.append("the generator's own signal off at \(off) frames (channel \(channel))") }
    }
    if let before = mark.missed, let after = missedCycles?(), after > before {
      reasons.append("LiveMic missed \(after - before) cycles")
    }
    return reasons.isEmpty ? nil : reasons.joined(separator: ", ")
  }

  /// Records `frames` more frames and returns exactly that stretch of `channels` with the
  /// evidence over it. `settleMicroseconds` first waits (for a change the take
  /// measures to settle): outside the watched stretch, unless `since` marks an earlier start
  /// (a message sent before the wait, which a lost cycle could have lost).
  func take(frames: Int, channels: [Int], settleMicroseconds: UInt32 = 0, since: Mark? = nil) throws
    -> Take<[[Float]]>
  {
    if since == nil && settleMicroseconds > 0 { usleep(settleMicroseconds) }
    let mark = since ?? self.mark()
    if since != nil && settleMicroseconds > 0 { usleep(settleMicroseconds) }
    let start = capture.frameCount
    try capture.record(frames: frames)
    // Exactly `frames` frames (tests choose a whole number of periods of their signals).
    let samples = channels.map { capture.recording(channel: $0, from: start, to: start + frames).samples }
    return Take(samples, spoilt: evidence(since: mark, to: start + frames))
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

  /// `missed_cycles` of the running LiveMic `client` (nil when it does not answer).
  static func missedCycles(client: String, environment: [String: String]) -> Int? {
    guard
      let answer = try? runLiveMic(["ctl", "-n", client, "--json", "status"], environment: environment),
      answer.status == 0,
      let object = try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any]
    else { return nil }
    return (object["missed_cycles"] as? NSNumber)?.intValue
  }
}
