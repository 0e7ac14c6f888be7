import LiveMicEngine

/// What to do when the output's target is lost or changes device.
public enum RouteLossPolicy: String, Sendable {
  /// Ramp the output down and keep it silent until told to unmute (SIGUSR1): audio jumping to
  /// a loudspeaker near the microphone howls.
  case mute
  /// Keep playing on the new target.
  case `continue`
}

/// The output routing policy: an ordered preference list of playback-port patterns. LiveMic's
/// outputs go to the first pattern that matches ports now (out_1 to the first match, out_2 to
/// the second, or the first again); when a more preferred target appears it moves there, when
/// the current one disappears it falls back to the next available one.
///
/// Thread: the supervisor.
final class RouteController {
  let patterns: [String]
  let policy: RouteLossPolicy
  /// The targets out_1 and out_2 are connected to by this policy now (empty: none).
  private(set) var current: [String] = []

  /// Targets used when no pattern matches (the plain connections when no policy was given).
  let fixedDefault: [String]
  /// A temporary route set at runtime (`ctl route override`): it takes priority until cleared.
  private(set) var override: [String]?

  /// True for the output route (LiveMic's outputs → playback ports); false for the input
  /// route (capture ports → LiveMic's inputs), which never mutes.
  let isOutput: Bool

  init(patterns: [String], policy: RouteLossPolicy, fixedDefault: [String] = [], isOutput: Bool = true) {
    self.patterns = patterns
    self.policy = isOutput ? policy : .continue
    self.fixedDefault = fixedDefault
    self.isOutput = isOutput
  }

  /// Sets the temporary override (one or two playback ports, all existing) and moves there.
  func setOverride(_ ports: [String], client: JackClient) throws(RouteError) -> Change? {
    guard !ports.isEmpty && ports.count <= 2 else { throw .badOverride("give one or two playback ports") }
    if let missing = ports.first(where: { !client.portExists($0) }) { throw .noSuchPort(missing) }
    override = ports.count == 1 ? [ports[0], ports[0]] : ports
    return update(client, reason: "route override set")
  }

  /// Clears the override: back to the default preference list.
  func clearOverride(client: JackClient) -> Change? {
    override = nil
    return update(client, reason: "route override cleared")
  }

  /// A change of route and why, for the log and the event stream.
  struct Change {
    let from: [String]
    let to: [String]
    let reason: String
    /// True when the policy wants the output muted (lost target or another device).
    let mute: Bool
  }

  /// The targets the preference list selects now, and which pattern did.
  func preferred(_ client: JackClient) -> (targets: [String], pattern: String?) {
    if let override, override.allSatisfy(client.portExists) { return (override, "override") }
    for pattern in patterns {
      let ports = client.ports(matching: pattern, playback: isOutput)
      if let first = ports.first {
        return ([first, ports.count > 1 ? ports[1] : first], pattern)
      }
    }
    let existing = fixedDefault.filter(client.portExists)
    if let first = existing.first { return ([first, existing.count > 1 ? existing[1] : first], nil) }
    return ([], nil)
  }

  /// Connects to the preferred targets (at start, or after a reconnection: no mute).
  func apply(_ client: JackClient) {
    connect(client, to: preferred(client).targets)
  }

  /// Re-evaluates after the graph changed; returns the change made, if any.
  func update(_ client: JackClient, reason explicit: String? = nil) -> Change? {
    let (all, pattern) = preferred(client)
    let targets = Array(all.prefix(isOutput ? client.outputPortNames.count : client.inputPortNames.count))
    guard targets != current else { return nil }
    let from = current
    let lost = !from.isEmpty && from.contains { !client.portExists($0) }
    connect(client, to: targets)
    let reason: String
    if let explicit {
      reason = explicit
    } else if targets.isEmpty {
      reason = "the output target disappeared and no other pattern matches"
    } else if lost {
      reason = "the output target disappeared; fell back to '\(pattern ?? "")'"
    } else if from.isEmpty {
      reason = "a target matching '\(pattern ?? "")' appeared"
    } else {
      reason = "a more preferred target matching '\(pattern ?? "")' appeared"
    }
    let deviceChanged = !from.isEmpty && device(from) != device(targets)
    return Change(from: from, to: targets, reason: reason, mute: policy == .mute && (lost || deviceChanged))
  }

  /// The client part of a port name: the "device" a target belongs to.
  private func device(_ ports: [String]) -> String {
    ports.first.map { String($0.split(separator: ":", maxSplits: 1).first ?? "") } ?? ""
  }

  private func connect(_ client: JackClient, to targets: [String]) {
    let ours = isOutput ? client.outputPortNames : client.inputPortNames
    // (source, destination) of a connection between our i-th port and a target.
    let output = isOutput
    let pair = { (i: Int, target: String) in output ? (ours[i], target) : (target, ours[i]) }
    for (i, old) in current.enumerated() where i < ours.count && !(i < targets.count && targets[i] == old) {
      let (a, b) = pair(i, old)
      client.disconnect(a, b)
    }
    for (i, target) in targets.enumerated() where i < ours.count {
      let (a, b) = pair(i, target)
      do { try client.connect(a, b) } catch { Log.error(error.description) }
    }
    current = Array(targets.prefix(ours.count))
  }

  /// "requested … ; connected …", for the log.
  func describe(_ client: JackClient) -> String {
    var requested = patterns.map { "'\($0)'" }.joined(separator: " then ")
    if patterns.isEmpty { requested = fixedDefault.joined(separator: ", ") }
    if let override { requested = "override \(override.joined(separator: ", ")) (default: \(requested))" }
    let actual = (isOutput ? client.outputPortNames : client.inputPortNames).map { port in
      "\(port) → " + (client.connections(of: port).joined(separator: ", ").nilIfEmpty ?? "nothing")
    }.joined(separator: "; ")
    return "\(isOutput ? "output" : "input") route: requested \(requested); connected \(actual)"
  }
}

extension String {
  var nilIfEmpty: String? { isEmpty ? nil : self }
}

/// Why a route override was refused. One sentence.
enum RouteError: Error, CustomStringConvertible {
  case badOverride(String)
  case noSuchPort(String)

  var description: String {
    switch self {
    case .badOverride(let why): return "a route override needs one or two ports: \(why)"
    case .noSuchPort(let port): return "there is no JACK port named '\(port)'"
    }
  }
}
