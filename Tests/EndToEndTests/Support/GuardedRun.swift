import Foundation
import Testing

/// The guard tests' common run: LiveMic under the real-time guard (`LiveAudioTests.rig` with
/// `guardOutput`) for 2,000 cycles, then a live buffer-size change to 128 frames, a recording
/// after it and more cycles; and the common ending: the guard counted nothing, ever.
struct GuardedRun {
  let counters: URL
  let rig: (JackServer, TestClient, TestClient, LiveMicProcess)

  var cycles: Int { Int(RealtimeGuard.counters(counters)["cycles"] ?? "0") ?? 0 }

  /// Waits for 2,000 cycles (and checks the guard counted nothing in them), changes the buffer
  /// size to 128 frames, records `frames` after the change and waits for `cyclesAfter` cycles
  /// after it; returns the recording of output channel 1.
  func acrossBufferSizeChange(recording frames: Int, cyclesAfter: Int) throws -> [Float] {
    let (_, _, capture, livemic) = rig
    #expect(waitUntil(seconds: 20) { cycles >= 2000 }, "only \(cycles) cycles")
    RealtimeGuard.expectNothingCounted(counters)
    #expect(capture.setBufferSize(128) == 0)
    #expect(livemic.waitForLog("buffer size is now 128 frames"), "\(livemic.log)")
    let atChange = cycles
    let start = capture.frameCount
    try capture.record(frames: frames)
    #expect(waitUntil(seconds: 20) { cycles >= atChange + cyclesAfter })
    return capture.recording(channel: 1, from: start).samples
  }

  /// Stops LiveMic, checks the guard counted nothing over the whole run, closes the rig; returns
  /// the counters.
  @discardableResult
  func finish() -> [String: String] {
    let (server, generator, capture, livemic) = rig
    #expect(livemic.interrupt() == 0)
    let result = RealtimeGuard.counters(counters)
    RealtimeGuard.expectNothingCounted(counters)
    #expect(result["first"] == "none")
    generator.close()
    capture.close()
    server.stop()
    return result
  }
}
