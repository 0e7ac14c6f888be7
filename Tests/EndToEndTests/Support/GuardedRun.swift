import Foundation
import Testing

/// The guard tests' common run: LiveMic under the real-time guard (`LiveAudioTests.rig` made
/// `guarded`) for 2,000 cycles, then a live buffer-size change to 128 frames, a recording after
/// it and more cycles; and the common ending: the guard counted nothing, ever.
struct GuardedRun {
  let rig: LiveRig

  /// The guard's counters (the rig is made `guarded`).
  var counters: URL {
    guard let counters = rig.counters else { preconditionFailure("the rig runs without the real-time guard") }
    return counters
  }

  var cycles: Int { Int(RealtimeGuard.counters(counters)["cycles"] ?? "0") ?? 0 }

  /// Waits for 2,000 cycles (and checks the guard counted nothing in them), changes the buffer
  /// size to 128 frames, records `frames` after the change and waits for `cyclesAfter` cycles
  /// after it; returns the recording of output channel 1.
  func acrossBufferSizeChange(recording frames: Int, cyclesAfter: Int) throws -> [Float] {
    let (capture, livemic) = (rig.client("lmcap"), rig.livemic)
    #expect(waitUntil(seconds: 20) { cycles >= 2000 }, "only \(cycles) cycles")
    rig.expectNothingCounted()
    #expect(capture.setBufferSize(128) == 0)
    #expect(livemic.waitForLog("buffer size is now 128 frames"), "\(livemic.log)")
    let atChange = cycles
    let start = capture.frameCount
    try capture.record(frames: frames)
    #expect(waitUntil(seconds: 20) { cycles >= atChange + cyclesAfter })
    return capture.recording(channel: 1, from: start).samples
  }

  /// Stops the rig (LiveMic first, its clean exit expected), checks the guard counted nothing
  /// over the whole run; returns the counters.
  @discardableResult
  func finish() -> [String: String] {
    rig.stop()
    let result = RealtimeGuard.counters(counters)
    rig.expectNothingCounted()
    #expect(result["first"] == "none")
    return result
  }
}
