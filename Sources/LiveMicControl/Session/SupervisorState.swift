/// The user's mute modes (`ctl mute --mode`): each keeps new microphone signal from the main
/// outputs within 50 ms.
///
/// Thread: any (value type).
public enum MuteMode: String, CaseIterable, Sendable {
  /// The output fades to silence in 50 ms; the chain runs on, unmute is instant.
  case ramp
  /// The microphone is muted before the chain; the music bed, the monitor mix and the effect
  /// tails go on.
  case input
  /// Fades out, deactivates the client, remembers the connections.
  case suspend
}

/// The supervisor's one state: whether the server is there, the user's mute mode, and the
/// route's own mute. Every change goes through `applying(_:)` (the transition table); the
/// supervisor makes the audio follow `audio` and nothing else decides what the audio does.
///
/// Thread: any (value type); the live state belongs to the supervisor.
public struct SupervisorState: Equatable, Sendable {
  /// The server link.
  public enum Link: Equatable, Sendable {
    case live
    /// The server went away; `attempt` reopenings so far, since `lostNanoseconds` (uptime).
    case reconnecting(attempt: Int, lostNanoseconds: UInt64)
    /// Stopping for good (a signal): nothing changes after this.
    case stopping
  }

  public var link: Link = .live
  /// The user's mute mode (nil: not muted by the user); held across a reconnection.
  public var muteMode: MuteMode?
  /// The route muted the output (ramp) because its target was lost; held until unmuted (or the
  /// `continue` policy lifts it after the move).
  public var routeMuted = false
  /// Reconnections since the start (`status`'s `reconnections`): each `reconnected` counts one.
  public var reconnections = 0

  public init(link: Link = .live, muteMode: MuteMode? = nil, routeMuted: Bool = false) {
    self.link = link
    self.muteMode = muteMode
    self.routeMuted = routeMuted
  }

  /// `running`, `muted`, `suspended`, `reconnecting` or `stopping` (`status`'s `state`).
  public var name: String {
    switch link {
    case .stopping: return "stopping"
    case .reconnecting: return "reconnecting"
    case .live:
      if muteMode == .suspend { return "suspended" }
      return isMuted ? "muted" : "running"
    }
  }

  /// Muted in any way (the user's mode or the route's).
  public var isMuted: Bool { muteMode != nil || routeMuted }

  /// `status`'s `mute_mode`: the user's mode, `ramp` for the route's mute, or `none`.
  public var muteModeName: String { muteMode?.rawValue ?? (routeMuted ? MuteMode.ramp.rawValue : "none") }

  /// What the audio does in this state.
  public struct Audio: Equatable, Sendable {
    /// The output ramp is at (or fading to) silence.
    public var outputSilent: Bool
    /// The microphone is muted before the chain.
    public var inputMuted: Bool
    /// The client is active (processing, its connections made); false while suspended.
    public var clientActive: Bool
  }

  /// What the audio does: the output silent in the ramp and suspend modes and under the route's
  /// mute, the input muted in the input mode, the client deactivated while suspended.
  public var audio: Audio {
    Audio(
      outputSilent: routeMuted || muteMode == .ramp || muteMode == .suspend,
      inputMuted: muteMode == .input, clientActive: muteMode != .suspend)
  }

  /// What happens to the supervisor.
  public enum Event: Equatable, Sendable {
    /// `ctl mute --mode`, or `--start-muted` (ramp).
    case mute(MuteMode)
    /// `ctl unmute` or SIGUSR1: lifts the user's mode and the route's mute.
    case unmute
    /// The output route's target was lost: the output is muted before the fallback is connected.
    case routeLost
    /// The fallback is connected and the policy is `continue`: the route's own mute is lifted.
    case routeContinued
    case serverLost
    /// Another attempt to reopen the client.
    case attempt
    case reconnected
    case stop
  }

  /// Why `applying` refused an event.
  public enum Refusal: Error, Equatable, Sendable {
    /// Stopping: nothing changes any more.
    case stopping
    /// The event makes no sense in this state (`reconnected` while live, `attempt` while live).
    case notNow(event: String, state: String)

    public var description: String {
      switch self {
      case .stopping: return "LiveMic is stopping"
      case .notNow(let event, let state): return "'\(event)' cannot happen while \(state)"
      }
    }
  }

  /// The transition table: the state after `event`. Mute and unmute are taken in every link
  /// state (while reconnecting they hold for the new client); a route loss only while live (a
  /// suspended client follows no route); `attempt` and `reconnected` only while reconnecting;
  /// `stop` always, and after it nothing.
  ///
  /// - `mute(m)`: the user's mode becomes `m` (another mode is replaced directly, without an
  ///   unmute in between); the route's mute stays.
  /// - `unmute`: no user mode, no route mute.
  /// - `routeLost`: the route's mute on (live, not suspended).
  /// - `routeContinued`: the route's mute off.
  /// - `serverLost`: reconnecting from attempt 0, the mutes held.
  public func applying(_ event: Event, nowNanoseconds: UInt64 = 0) throws(Refusal) -> SupervisorState {
    if link == .stopping { throw .stopping }
    var next = self
    switch event {
    case .mute(let mode): next.muteMode = mode
    case .unmute: (next.muteMode, next.routeMuted) = (nil, false)
    case .routeLost:
      guard link == .live, muteMode != .suspend else { throw .notNow(event: "route lost", state: name) }
      next.routeMuted = true
    case .routeContinued: next.routeMuted = false
    case .serverLost:
      guard link == .live else { throw .notNow(event: "server lost", state: name) }
      next.link = .reconnecting(attempt: 0, lostNanoseconds: nowNanoseconds)
    case .attempt:
      guard case .reconnecting(let attempt, let lost) = link else {
        throw .notNow(event: "attempt", state: name)
      }
      next.link = .reconnecting(attempt: attempt + 1, lostNanoseconds: lost)
    case .reconnected:
      guard case .reconnecting = link else { throw .notNow(event: "reconnected", state: name) }
      next.link = .live
      next.reconnections += 1
    case .stop: next.link = .stopping
    }
    return next
  }
}
