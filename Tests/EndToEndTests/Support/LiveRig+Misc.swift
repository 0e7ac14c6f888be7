import Foundation
import Testing

/// What a suite needs beside `LiveRig` when its LiveMic cannot be the rig's (one a session
/// manager names, a guide's command line): the rig's readiness, LiveMic answering `status`.
extension LiveRig {
  /// Whether `livemic`, reached as `ctl -n NAME` in `environment`, answers `status` within
  /// `seconds` and still runs then: ready as a rig's LiveMic is (its control socket answers only
  /// after the client runs and its connections are made), with no log line waited for.
  static func answersStatus(
    _ livemic: LiveMicProcess, name: String, environment: [String: String], seconds: Double = 15
  ) -> Bool {
    return waitUntil(seconds: seconds) {
      !livemic.process.isRunning || status(name: name, environment: environment) != nil
    }
      && livemic.process.isRunning
  }
}

extension LiveRig {
  /// The `status` answer of the LiveMic reached as `ctl -n NAME` in `environment`, as an object;
  /// nil when it does not answer.
  static func status(name: String, environment: [String: String]) -> [String: Any]? {
    guard let answer = try? runLiveMic(["ctl", "-n", name, "--json", "status"], environment: environment),
      answer.status == 0
    else { return nil }
    return try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any]
  }

  /// Returns once the LiveMic reached as `ctl -n NAME` in `environment` has processed `seconds`
  /// of audio from now, by the cycles its `status` counts: a ramp it began (the start-quiet ramp,
  /// an unmute's) is over however slowly the machine runs the server, where a wall-clock sleep
  /// could end first. Records an issue (with `log()`) if that takes longer than `timeoutSeconds`.
  static func waitForAudio(
    name: String, environment: [String: String], seconds: Double = 1.3, timeoutSeconds: Double = 30,
    log: () -> String = { "" }, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    func processed() -> (cycles: Int, frames: Int, rate: Int)? {
      guard let status = status(name: name, environment: environment), let cycles = status["cycles"] as? Int,
        let frames = status["buffer_frames"] as? Int, let rate = status["sample_rate"] as? Int
      else { return nil }
      return (cycles, frames, rate)
    }
    guard let start = processed() else {
      Issue.record("LiveMic '\(name)' did not answer status: \(log())", sourceLocation: sourceLocation)
      return
    }
    let needed = Int((seconds * Double(start.rate) / Double(start.frames)).rounded(.up))
    let done = waitUntil(seconds: timeoutSeconds) {
      (processed()?.cycles ?? start.cycles) - start.cycles >= needed
    }
    if !done {
      Issue.record(
        "LiveMic '\(name)' processed fewer than \(needed) cycles in \(timeoutSeconds) s: \(log())",
        sourceLocation: sourceLocation)
    }
  }
}
