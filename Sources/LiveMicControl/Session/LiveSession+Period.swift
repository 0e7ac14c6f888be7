import DSP
import LiveMicEngine
import LiveMicPresets

/// A new JACK period while running. Thread: the supervisor.
extension LiveSession {
  /// After a buffer-size change: a chain with units that hand 10 ms frames to a helper thread
  /// (WebRTC's) declared latency for the old period, and at a longer one its helper would be
  /// handed frames too late and play them dry. Such a chain is built again for the new period
  /// (every value carried over), warmed here and crossfaded in like a preset load; the
  /// supervisor then reports the new latency to JACK. Other chains, and changes between periods
  /// up to 10 ms (the same latency), run on unchanged.
  func followPeriod(_ client: JackClient, _ state: ProcessState) {
    let frames = Int(client.events.bufferFrames.load(ordering: .relaxed))
    guard running.dependsOnPeriod,
      running.chain.context.helperLatencyChanges(toPeriod: frames, sampleRate: client.sampleRate)
    else { return }
    let before = running.chain.latencyFrames
    do {
      report(skipped: try running.reprepare(settings: settings(for: client)))
    } catch {
      Log.error("cannot build the chain again for the new period: \(error.description)")
      return
    }
    running.swapUnderway = !state.slot.crossfade(
      to: running.chain, running: !suspended, timeoutMilliseconds: 0, curve: .equalPower)
    bindMidi(state)
    Log.info(
      "the chain was built again for \(running.chain.context.hostPeriodFrames) frames per period "
        + "(latency \(before) → \(running.chain.latencyFrames) frames)")
  }
}
