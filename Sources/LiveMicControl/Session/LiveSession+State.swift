import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// The supervisor's state changes, all in one place: `transition` applies an event to the
/// state (`SupervisorState.applying`), makes the audio follow, logs the change in one line and
/// emits it as `state-changed`. Thread: the supervisor.
extension LiveSession {
  /// True while the `suspend` mute mode holds the client deactivated (not while its fade-out
  /// still runs: the audio and the connections are live until `finishSuspend`).
  var suspended: Bool {
    supervisorState.link == .live && !supervisorState.audio.clientActive && suspendFadeDeadline == nil
  }

  /// Applies `event`; with a live `client` and `state`, makes the audio follow the new state
  /// (the output ramp, the input mute, deactivation with the connections remembered, or
  /// reactivation with them restored). Without them (starting, reconnecting) only the state
  /// changes: the next client starts as it says (`start`). Returns false when the table
  /// refused the event (stopping, or an event that cannot happen now), changing nothing.
  @discardableResult
  func transition(
    _ event: SupervisorState.Event, reason: String, client: JackClient? = nil, state: ProcessState? = nil
  ) -> Bool {
    let old = supervisorState
    let new: SupervisorState
    do { new = try old.applying(event, nowNanoseconds: DispatchTime.now().uptimeNanoseconds) } catch {
      return false
    }
    supervisorState = new
    if let client, let state, new.link == .live, old.link == .live {
      follow(old.audio, new.audio, client, state)
    }
    guard old.name != new.name || old.muteModeName != new.muteModeName else { return true }
    let mode = new.muteModeName == "none" ? "" : ", mode \(new.muteModeName)"
    Log.info("state: \(old.name) → \(new.name)\(mode) (\(reason))")
    stream.emit(
      "state-changed",
      [
        "from": .string(old.name), "to": .string(new.name), "mute_mode": .string(new.muteModeName),
        "reason": .string(reason),
      ])
    return true
  }

  /// Makes a live client's audio go from `old` to `new`.
  private func follow(
    _ old: SupervisorState.Audio, _ new: SupervisorState.Audio, _ client: JackClient, _ state: ProcessState
  ) {
    if new.inputMuted != old.inputMuted && new.clientActive {
      state.inputMuted.store(new.inputMuted ? 1 : 0, ordering: .relaxed)
    }
    if !new.clientActive && old.clientActive {
      // Suspend: silent first, then the connections are remembered and the client deactivated.
      // The fade runs on: the supervisor's loop deactivates once it is silent (`finishSuspend`),
      // so the door asking (and every other) is answered at once.
      state.ramp.fadeOut()
      suspendFadeDeadline = .now() + .milliseconds(Self.fadeLimitMilliseconds)
      finishSuspend(client, state)
      return
    }
    if new.clientActive && !old.clientActive {
      if suspendFadeDeadline != nil {
        // Unmuted while the suspend still faded out: the client never went off, its connections
        // are as they were; only the output comes back (over 1 s, from where the fade was).
        suspendFadeDeadline = nil
        if !new.outputSilent { state.ramp.fadeIn() }
        return
      }
      // Back from suspend: the start-quiet ramp, then the connections and routes again.
      state.ramp.rewind()
      if !new.outputSilent { state.ramp.fadeIn() }
      do { try client.reactivate() } catch { Log.error(error.description) }
      book.restore(client)
      route?.apply(client, book: book)
      inputRoute?.apply(client, book: book)
      return
    }
    if new.outputSilent != old.outputSilent {
      if new.outputSilent { state.ramp.fadeOut() } else { state.ramp.fadeIn() }
    }
  }

  /// Ends a `suspend` mute's fade once the output is silent (or `fadeLimitMilliseconds` have passed): the
  /// connections are remembered and the client deactivated. Called when the suspend begins and
  /// at every wake of the supervisor's loop (every 5 ms while the fade runs).
  func finishSuspend(_ client: JackClient, _ state: ProcessState) {
    guard let deadline = suspendFadeDeadline, state.ramp.isSilent || DispatchTime.now() >= deadline else {
      return
    }
    suspendFadeDeadline = nil
    book.record(client)
    client.deactivate()
    state.inputMuted.store(supervisorState.audio.inputMuted ? 1 : 0, ordering: .relaxed)
  }

  /// `ctl mute`: the user's mute `mode` (replacing another mode directly).
  func mute(_ mode: MuteMode, _ client: JackClient?, _ state: ProcessState?) -> JSONObject {
    if supervisorState.muteMode != mode {
      let away = supervisorState.link != .live
      transition(.mute(mode), reason: "control", client: client, state: state)
      Log.info("output muted (control, mode \(mode.rawValue)\(away ? ", while the server is away" : ""))")
      stream.emit("muted", ["reason": .string("control"), "mode": .string(mode.rawValue)])
    }
    return ["muted": true, "mode": .string(mode.rawValue)]
  }

  /// `ctl unmute` or SIGUSR1: lifts the user's mode and the route's mute.
  func unmute(_ client: JackClient?, _ state: ProcessState?) -> JSONObject {
    let wasMuted = supervisorState.isMuted
    transition(.unmute, reason: "control", client: client, state: state)
    if wasMuted {
      Log.info("output unmuted (control; ramping up over 1 s)")
      stream.emit("unmuted", ["reason": .string("control")])
    }
    return ["muted": false]
  }

  /// The state's fields of `status`: `state`, `muted`, `mute_mode`, and while reconnecting
  /// `attempt` and `lost_seconds`.
  var stateStatus: JSONObject {
    var fields: JSONObject = [
      "state": .string(supervisorState.name), "muted": .bool(supervisorState.isMuted),
      "mute_mode": .string(supervisorState.muteModeName),
      "reconnections": .int(supervisorState.reconnections),
    ]
    if case .reconnecting(let attempt, let lost) = supervisorState.link {
      let seconds = Double(DispatchTime.now().uptimeNanoseconds &- lost) / 1e9
      fields["attempt"] = .int(attempt)
      fields["lost_seconds"] = .number((seconds * 10).rounded() / 10)
    }
    return fields
  }
}
