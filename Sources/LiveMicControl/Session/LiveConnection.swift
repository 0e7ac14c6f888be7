import Dispatch
import Foundation
import LiveMicEngine

#if canImport(Glibc)
  import Glibc
#endif

/// One JACK client LiveMic runs on, from its start (or its reconnection) to its loss or
/// LiveMic's stop: the client, its process state, and what the supervisor remembers about it
/// from one wake to the next (`watch`). A server restart makes a new one. Thread: the
/// supervisor.
final class LiveConnection {
  /// What the supervisor remembers from one wake to the next about one client.
  struct Watch {
    var reportedXruns: UInt64 = 0
    var lastXrunReport = DispatchTime(uptimeNanoseconds: 0)
    var bufferFrames: UInt32
    var sampleRate: UInt32
    var freewheel: Recorder.FreewheelWatch
    var nextLivenessProbe = DispatchTime.now()
    /// Xrun totals seen, for "xruns in the last minute" (a new client counts from zero).
    var xrunHistory = XrunHistory()
    /// When the last `health` event went out.
    var lastHealth = DispatchTime.now()
  }

  let client: JackClient
  let state: ProcessState
  var watch: Watch

  /// `freewheel`: the freewheel follower, counting from the consumers' drops now.
  init(client: JackClient, state: ProcessState, freewheel: Recorder.FreewheelWatch) {
    (self.client, self.state) = (client, state)
    watch = Watch(
      bufferFrames: client.events.bufferFrames.load(ordering: .relaxed),
      sampleRate: client.events.sampleRate.load(ordering: .relaxed), freewheel: freewheel)
  }

  /// Whether a shutdown callback was an error, not a loss: PipeWire 0.3.65's libjack calls it
  /// for any error the daemon reports against its core object (an "unknown resource" when a
  /// port it was binding vanished, seen under load as another client closed), and the client
  /// goes on working. True only when the daemon LiveMic opened still holds its connection and
  /// the process callback still runs (two cycles within 500 ms): a daemon that died, or that
  /// destroyed LiveMic's client, fails one of them and LiveMic reconnects (a daemon that hangs up
  /// during the wait, at once).
  func shutdownWasAnError() -> Bool {
    guard client.daemonStillThere else { return false }
    let cycles = state.cycles.load(ordering: .relaxed)
    let deadline = DispatchTime.now() + .milliseconds(500)
    while state.cycles.load(ordering: .relaxed) < cycles + 2 {
      // A daemon that is stopping reports the shutdown before it exits: its hang-up ends the
      // wait at once (before, the loss waited the whole 500 ms: the page said 'reconnecting'
      // 515 ms after the daemon was stopped).
      guard DispatchTime.now() < deadline, client.daemonStillThere else { return false }
      usleep(5000)
    }
    return client.daemonStillThere
  }

  /// Logs a new buffer size or sample rate; true when the buffer size changed.
  func reportFormatChanges() -> Bool {
    let events = client.events
    let frames = events.bufferFrames.load(ordering: .relaxed)
    let periodChanged = frames != watch.bufferFrames
    if periodChanged {
      watch.bufferFrames = frames
      Log.info("buffer size is now \(frames) frames")
    }
    let rate = events.sampleRate.load(ordering: .relaxed)
    if rate != watch.sampleRate {
      watch.sampleRate = rate
      Log.info("sample rate is now \(rate) Hz")
    }
    return periodChanged
  }
}
