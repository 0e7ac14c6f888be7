import DSP
import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// NSM session support in the supervisor: joining a session at start and saving into it (what
/// is saved: `NsmSession`). Thread: the supervisor.
extension LiveSession {
  /// Announces LiveMic to the session manager at `url` and waits (up to 30 s) for `open`:
  /// the client id becomes the JACK client name, and a saved state in the session directory
  /// replaces the preset and connections given on the command line.
  func joinSession(url: String) {
    let client: NsmClient
    do { client = try NsmClient(url: url, wake: wake) } catch {
      Log.error(error.message + "; running without a session manager")
      return
    }
    let session = NsmSession(client: client)
    nsm = session
    client.announce()
    Log.info("announced to the session manager at \(url); waiting for it to open a session")
    guard
      let open = client.waitForOpen(
        until: .now() + .seconds(30),
        stop: { [signals] in signals.stopRequested })
    else {
      Log.error("the session manager at \(url) sent no open within 30 s; running outside the session")
      return
    }
    session.opened(open)
    options.clientName = open.clientId
    if session.hasSavedPreset, let preset = session.presetPath {
      options.preset = preset
      options.overrides = []  // the saved values win over the command line's
    }
    if session.savedConnections != nil {
      options.noConnect = true  // exactly the saved connections
    }
    Log.info("session '\(open.displayName)': client id '\(open.clientId)', state in '\(open.path)'")
  }

  /// Tells the session manager the session opened (after the chain runs), with a note when the
  /// saved state could not be used.
  func confirmSessionOpen(note: String?) {
    guard let nsm, nsm.open != nil else { return }
    nsm.client.reply("/nsm/client/open", note ?? "LiveMic is running")
  }

  /// Makes the saved connections of the session (LiveMic's short port name → other ports).
  func restoreSessionConnections(_ client: JackClient) {
    for (ours, others) in nsm?.savedConnections ?? [:] {
      let output = ours.hasPrefix("out_") || ours.hasPrefix("monitor_")
      for other in others { book.want(ours, other, output: output, client: client) }
    }
  }

  /// Answers the session manager's `save` requests since the last call.
  func answerSessionSaves(_ client: JackClient) {
    guard let nsm, nsm.client.takeSaves() > 0 else { return }
    do throws(ControlError) {
      let path = try saveSession(client)
      nsm.client.reply("/nsm/client/save", "saved to \(path)")
      stream.emit("session-saved", ["path": .string(path)])
    } catch {
      Log.error("session not saved: \(error.message)")
      nsm.client.error("/nsm/client/save", error.message)
    }
  }

  /// Writes the state into the session directory; returns the preset's path.
  func saveSession(_ client: JackClient) throws(ControlError) -> String {
    guard let nsm, let open = nsm.open, let presetPath = nsm.presetPath else {
      throw ControlError("LiveMic is not in an NSM session")
    }
    let path: String
    do {
      path = try PresetWriter.save(
        presetPath, entries: running.entries, chain: running.chain,
        plugins: running.plugins, route: route?.patterns ?? [], inputRoute: inputRoute?.patterns ?? [],
        midi: running.midiMappings, modes: running.modes)
    } catch { throw ControlError(error) }
    // The book holds every port group's connections (in, out, music, monitor, midi_in), also
    // those waiting for their ports and, while suspended, those JACK dropped.
    if !suspended { book.record(client) }
    var connections = book.wanted
    for (port, _) in client.allPortNames {
      connections[String(port.split(separator: ":", maxSplits: 1).last ?? ""), default: []] += []
    }
    try nsm.writeConnections(connections)
    Log.info("session state saved to '\(open.path)'")
    return path
  }
}
