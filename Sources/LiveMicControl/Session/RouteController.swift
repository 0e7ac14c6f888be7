import DSP
import Dispatch
import LiveMicEngine

/// What to do when the output's current target is lost (its port vanished).
public enum RouteLossPolicy: String, Sendable {
  /// Ramp the output down, then connect the fallback, and keep it silent until told to unmute
  /// (SIGUSR1): audio jumping to a loudspeaker near the microphone howls.
  case mute
  /// Ramp down, connect the fallback, and ramp up again.
  case `continue`
}

/// A route: where LiveMic's outputs (or inputs) go. The requested route is the temporary
/// override if one is set, else the persistent default: an ordered preference list of port
/// patterns, or, without one, the ports LiveMic connected at start. The effective target is the
/// first of it that exists now (out_1 to the first match, out_2 to the second, or the first
/// again); a more preferred target appearing is taken, a lost one falls back by that priority.
/// Planning a change (`update`) and making it (`commit`) are apart, so the session can mute in
/// between. Reading a route never changes it.
///
/// Thread: the supervisor.
final class RouteController {
  /// The persistent default's preference list (empty: `fixedDefault`).
  private(set) var patterns: [String]
  let policy: RouteLossPolicy
  /// The targets our ports are connected to by this route now (empty: none).
  private(set) var current: [String] = []
  /// The default when no preference list was given: the ports LiveMic connected at start.
  let fixedDefault: [String]
  /// A temporary route set at runtime (`ctl route override`): it takes priority until cleared
  /// or until one of its ports disappears.
  private(set) var override: [String]?
  /// True for the output route (LiveMic's outputs → playback ports); false for the input
  /// route (capture ports → LiveMic's inputs), which never mutes.
  let isOutput: Bool
  /// A lost target being handled, from the output's mute until the route has moved (its
  /// fallback connected, or its targets made again after a server restart) or the target is
  /// back: whether the output was silent before the loss, and whether the ramp was cut because
  /// the audio thread was stalled (the fallback then waits for a silent cycle). The session
  /// ends it (`LiveSession.endRouteLoss`).
  struct Loss {
    let silentBefore: Bool
    /// When the ramp must be silent by (set at the first look): after it, the ramp is cut.
    var fadeDeadline: DispatchTime?
    var cut = false
  }
  var loss: Loss?
  /// The targets from before a server restart that were not there when LiveMic reconnected:
  /// until the route connects something again, a move to any other target is a loss (muted
  /// first, like a target vanishing live), and these coming back is not.
  private var awaited: [String]?

  init(patterns: [String], policy: RouteLossPolicy, fixedDefault: [String] = [], isOutput: Bool = true) {
    self.patterns = patterns
    self.policy = isOutput ? policy : .continue
    self.fixedDefault = fixedDefault
    self.isOutput = isOutput
  }

  /// Why a route changed: a stable code, beside the sentence.
  enum Code: String {
    case lost, appeared, override, cleared, restart
    case defaultChanged = "default-changed"
  }

  /// A planned change of route and why, for the log and the event stream.
  struct Change {
    let from: [String]
    let to: [String]
    let reason: String
    let code: Code
    /// The current target was lost (its port vanished): the output is muted before `to` is
    /// connected.
    var mute: Bool { code == .lost }
  }

  /// Sets the temporary override (one or two ports, all existing); returns the move there.
  func setOverride(_ ports: [String], client: JackClient) throws(RouteError) -> Change? {
    guard !ports.isEmpty && ports.count <= 2 else { throw .badOverride(count: ports.count) }
    if let missing = ports.first(where: { !client.portExists($0) }) { throw .noSuchPort(missing) }
    override = ports.count == 1 ? [ports[0], ports[0]] : ports
    return update(client, code: .override, reason: "route override set")
  }

  /// Clears the override; returns the move back to the default.
  func clearOverride(client: JackClient) -> Change? {
    override = nil
    return update(client, code: .cleared, reason: "route override cleared")
  }

  /// Replaces the persistent default's preference list; returns the move it makes.
  func setDefault(_ list: [String], client: JackClient, reason: String) -> Change? {
    patterns = list
    return update(client, code: .defaultChanged, reason: reason)
  }

  /// The default's ports that exist now, most preferred first.
  func candidates(_ client: JackClient) -> [String] {
    guard !patterns.isEmpty else { return fixedDefault.filter(client.portExists) }
    var seen: [String] = []
    for pattern in patterns {
      for port in client.ports(matching: pattern, playback: isOutput) where !seen.contains(port) {
        seen.append(port)
      }
    }
    return seen
  }

  /// The effective target now, and what selected it (a pattern, "override", or nil).
  func preferred(_ client: JackClient) -> (targets: [String], pattern: String?) {
    if let override, override.allSatisfy(client.portExists) { return (override, "override") }
    for pattern in patterns {
      let ports = client.ports(matching: pattern, playback: isOutput)
      if let first = ports.first {
        return ([first, ports.count > 1 ? ports[1] : first], pattern)
      }
    }
    if !fixedDefault.isEmpty && fixedDefault.allSatisfy(client.portExists) { return (fixedDefault, nil) }
    let existing = fixedDefault.filter(client.portExists)
    if let first = existing.first { return ([first, existing.count > 1 ? existing[1] : first], nil) }
    return ([], nil)
  }

  /// Connects to the effective target at once (after a reconnection or a resume, where the
  /// output starts quiet): the change made, with the code `restart`, if any. After a server
  /// loss (`afterServerLoss`), targets from before that are not back make a move to another
  /// target a loss: that change is returned unmade, for the session to mute first
  /// (`LiveSession.follow`). The targets from
  /// before that the route does not choose now (an override cleared because its ports are gone
  /// after a server restart, or a target not back yet) are forgotten by the book: the route,
  /// not the book, connects these ports, and it connects a target again when it appears.
  /// Without this the book made a cleared override's connections again beside the default when
  /// their ports came back.
  @discardableResult
  func apply(_ client: JackClient, book: ConnectionBook, afterServerLoss: Bool = false) -> Change? {
    let before = current
    current = []  // a new or reactivated client has no connections
    if afterServerLoss && isOutput && awaited == nil && before.contains(where: { !client.portExists($0) }) {
      awaited = before
    }
    let change = update(client, code: .restart, reason: "connected again after a restart or resume")
    let ours = isOutput ? client.outputPortNames : client.inputPortNames
    let now = change?.to ?? []
    for (i, old) in before.enumerated() where i < ours.count && !(i < now.count && now[i] == old) {
      book.forget(String(ours[i].split(separator: ":", maxSplits: 1).last ?? ""), old)
    }
    guard let change else { return nil }
    if !change.mute { commit(change, client: client, book: book) }
    return change
  }

  /// Plans the move to the effective target after the graph changed (nil: none needed). An
  /// override one of whose ports disappeared is cleared first.
  func update(_ client: JackClient, code explicit: Code? = nil, reason explicitReason: String? = nil)
    -> Change?
  {
    var overrideLost = false
    if let override, !override.allSatisfy(client.portExists) {
      self.override = nil
      overrideLost = true
    }
    let (all, pattern) = preferred(client)
    let ours = isOutput ? client.outputPortNames.count : client.inputPortNames.count
    let targets = Array(all.prefix(fixedDefault.count == 1 && pattern == nil ? 1 : ours))
    guard targets != current else { return nil }
    let from = current
    let lost = !from.isEmpty && from.contains { !client.portExists($0) } && explicit != .restart
    // Targets from before a server restart still missing, and others chosen instead (none of
    // them: a client registering its ports one by one is coming back, not lost).
    let notBack =
      from.isEmpty && !targets.isEmpty
      && awaited.map { old in
        !targets.contains(where: old.contains) && old.contains { !client.portExists($0) }
      } ?? false
    let what = isOutput ? "output" : "input"
    let to = pattern.map { $0 == "override" ? "the override" : "'\($0)'" } ?? "the start connections"
    let code: Code
    let reason: String
    if lost {
      code = .lost
      reason =
        (overrideLost
          ? "the override's target disappeared (override cleared)" : "the \(what) target disappeared")
        + (targets.isEmpty ? " and nothing else of the route exists" : "; fell back to \(to)")
    } else if notBack {
      code = .lost
      reason = "the \(what) target did not come back after the server restart; fell back to \(to)"
    } else if let explicit {
      (code, reason) = (explicit, explicitReason ?? explicit.rawValue)
    } else {
      code = .appeared
      reason = from.isEmpty ? "a target of \(to) appeared" : "a more preferred target of \(to) appeared"
    }
    return Change(from: from, to: targets, reason: reason, code: code)
  }

  /// Makes a planned change: disconnects the old targets and has the book connect the new ones
  /// (one JACK refuses is pending there and retried, like every connection).
  func commit(_ change: Change, client: JackClient, book: ConnectionBook) {
    let ours = isOutput ? client.outputPortNames : client.inputPortNames
    let output = isOutput
    // (source, destination) of a connection between our i-th port and a target.
    let pair = { (i: Int, target: String) in output ? (ours[i], target) : (target, ours[i]) }
    for (i, old) in current.enumerated() where i < ours.count && !(i < change.to.count && change.to[i] == old)
    {
      let (a, b) = pair(i, old)
      client.disconnect(a, b)
    }
    for (i, target) in change.to.enumerated() where i < ours.count {
      book.want(
        String(ours[i].split(separator: ":", maxSplits: 1).last ?? ""), target, output: output, client: client
      )
    }
    current = Array(change.to.prefix(ours.count))
    if !current.isEmpty { awaited = nil }
  }

  /// The requested route in words: the override (and the default) or the default.
  var requested: String {
    var text = patterns.map { "'\($0)'" }.joined(separator: " then ")
    if patterns.isEmpty { text = fixedDefault.isEmpty ? "nothing" : fixedDefault.joined(separator: ", ") }
    if let override { text = "override \(override.joined(separator: ", ")) (default: \(text))" }
    return text
  }

  /// "requested … ; connected …", for the log.
  func describe(_ client: JackClient) -> String {
    let actual = (isOutput ? client.outputPortNames : client.inputPortNames).map { port in
      "\(port) → " + (client.connections(of: port).joined(separator: ", ").nilIfEmpty ?? "nothing")
    }.joined(separator: "; ")
    return "\(isOutput ? "output" : "input") route: requested \(requested); connected \(actual)"
  }
}

extension String {
  var nilIfEmpty: String? { isEmpty ? nil : self }
}

/// Why a route request was refused. One sentence.
enum RouteError: CodedError {
  case badOverride(count: Int)
  case noSuchPort(String)

  var description: String {
    switch self {
    case .badOverride(let count): return "a route override takes one or two playback ports, not \(count)"
    case .noSuchPort(let port): return "there is no JACK port named '\(port)'"
    }
  }

  var code: String {
    switch self {
    case .badOverride: return "route.bad-override"
    case .noSuchPort: return "route.no-such-port"
    }
  }
}
