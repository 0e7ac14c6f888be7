import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// Following the routes: the loss rule (mute first, then the fallback), the route command and
/// a preset's route. Thread: the supervisor.
extension LiveSession {
  /// Re-evaluates both routes after the graph changed and follows them.
  func followRoutes(_ client: JackClient, _ state: ProcessState) {
    if let inputRoute, let change = inputRoute.update(client) { follow(change, inputRoute, client, state) }
    guard let route else { return }
    if let change = route.update(client) {
      follow(change, route, client, state)
    } else {
      endRouteLoss(route, client, state)  // a lost target back before its fallback was connected
    }
  }

  /// Makes a planned route change and reports it. When the output's current target was lost,
  /// the output is muted first and the fallback connected only once the ramp is silent (when
  /// the audio thread is stalled, the ramp is cut and the fallback waits for a silent cycle);
  /// it stays muted (`--on-route-loss mute`) or ramps up again (`continue`). Any other change
  /// (a more preferred target of the user's list, an override, a new default) moves without
  /// muting.
  func follow(
    _ change: RouteController.Change, _ controller: RouteController, _ client: JackClient,
    _ state: ProcessState
  ) {
    // The route, not the book, decides where these ports go: the old targets are not made again.
    let ours = controller.isOutput ? client.outputPortNames : client.inputPortNames
    for (i, old) in change.from.enumerated()
    where i < ours.count && (i >= change.to.count || change.to[i] != old) {
      book.forget(String(ours[i].split(separator: ":", maxSplits: 1).last ?? ""), old)
    }
    let direction = controller.isOutput ? "output" : "input"
    guard controller.isOutput && change.mute else {
      controller.commit(change, client: client, book: book)
      report(change, direction: direction)
      if controller.isOutput {
        followAutoload(client, state)
        endRouteLoss(controller, client, state)
      }
      return
    }
    if controller.loss == nil {
      let silentBefore = supervisorState.audio.outputSilent
      controller.loss = RouteController.Loss(silentBefore: silentBefore)
      transition(.routeLost, reason: "route lost: \(change.reason)", client: client, state: state)
      if !silentBefore {
        Log.info("output muted (route lost): unmute with 'livemic ctl unmute' or SIGUSR1")
        stream.emit("muted", ["reason": .string(change.reason), "code": .string(change.code.rawValue)])
      }
    }
    // The supervisor never waits for the ramp (every door, and a server loss, would wait
    // with it): the route is looked at again every 5 ms until the ramp is silent. A stalled
    // audio thread cannot ramp, and the next cycle it runs must not finish the fade on the
    // fallback's ears: after `fadeLimitMilliseconds` the ramp is cut, and the fallback waits for a silent cycle
    // (looked at every 50 ms).
    if !state.ramp.isSilent {
      let now = DispatchTime.now()
      if controller.loss?.cut == false {
        let deadline = controller.loss?.fadeDeadline ?? now + .milliseconds(Self.fadeLimitMilliseconds)
        controller.loss?.fadeDeadline = deadline
        if now < deadline {
          routing.graphSettled = min(deadline, now + .milliseconds(5))
          return
        }
        controller.loss?.cut = true
        state.ramp.cut()
        Log.error(
          "the output did not ramp to silence in \(Self.fadeLimitMilliseconds) ms (the audio thread is stalled): "
            + "cut to silence; the fallback is connected once a silent cycle has run")
      }
      routing.graphSettled = now + .milliseconds(50)
      return
    }
    controller.commit(change, client: client, book: book)
    report(change, direction: direction)
    followAutoload(client, state)
    endRouteLoss(controller, client, state)
  }

  /// Ends the output route's loss in progress, if any (its fallback connected, its targets made
  /// again after a server restart, or the lost target back): `--on-route-loss continue` lifts
  /// the route's own mute and ramps up (a mute mode the user set stays); `mute` keeps it until
  /// the user unmutes.
  func endRouteLoss(_ controller: RouteController, _ client: JackClient, _ state: ProcessState) {
    guard let loss = controller.loss else { return }
    controller.loss = nil
    guard controller.policy == .continue else { return }
    transition(.routeContinued, reason: "route: --on-route-loss continue", client: client, state: state)
    guard !supervisorState.audio.outputSilent && !loss.silentBefore else { return }
    Log.info("output unmuted (route: --on-route-loss continue; ramping up over 1 s)")
    stream.emit("unmuted", ["reason": .string("route"), "code": .string(RouteController.Code.lost.rawValue)])
  }

  /// Loads the autoload preset of the output's target now, when it is not the one running
  /// (crossfaded like any reload; the mute state is kept; the preset's own route is not applied,
  /// the route chose the preset). Reported as `preset-loaded` with reason `autoload`.
  func followAutoload(_ client: JackClient, _ state: ProcessState) {
    guard let autoload = routing.autoload, let route else { return }
    let targets = route.current
    guard let choice = autoload.preset(for: targets), choice.preset != running.presetName else { return }
    let goes = targets.isEmpty ? "nothing" : targets.joined(separator: ", ")
    Log.info("autoload: the output goes to \(goes) (\(choice.because)): preset '\(choice.preset)'")
    let previous = options.preset
    options.preset = choice.preset
    if reloadPreset(client, state: state, reason: "autoload", applyRoute: false) != nil {
      options.preset = previous
    }
  }

  /// A loaded preset's route becomes the persistent default (when it has one).
  func applyPresetRoute(_ preset: Preset, _ client: JackClient, _ state: ProcessState) {
    let reason = "preset '\(preset.name)' loaded"
    if !preset.routeOut.isEmpty, let route, route.patterns != preset.routeOut,
      let change = route.setDefault(preset.routeOut, client: client, reason: reason)
    {
      follow(change, route, client, state)
    }
    guard !preset.routeIn.isEmpty else { return }
    let input = inputRoute ?? RouteController(patterns: [], policy: .continue, isOutput: false)
    inputRoute = input
    if input.patterns != preset.routeIn,
      let change = input.setDefault(preset.routeIn, client: client, reason: reason)
    {
      follow(change, input, client, state)
    }
  }

  /// `route` (show), `route override`, `route clear`, `route default`: the requested route,
  /// the effective target, the actual connections and the candidates available now.
  func routeCommand(_ request: JSONObject, _ client: JackClient, _ state: ProcessState)
    throws(ControlError) -> JSONObject
  {
    guard let controller = route else { throw ControlError("LiveMic has no output route") }
    let name = try request.text("action", or: ControlProtocol.RouteAction.show.rawValue)
    var change: RouteController.Change?
    func list(_ key: String) -> [String]? {
      if let list = request[key]?.array { return list.compactMap(\.string) }
      return request[key]?.string.map {
        $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
      }
    }
    switch ControlProtocol.RouteAction(rawValue: name) {
    case .show: break
    case .override:
      guard let ports = list("ports") else {
        throw ControlError("\"route override\" needs \"ports\": one or two playback port names")
      }
      do { change = try controller.setOverride(ports, client: client) } catch {
        throw ControlError(error)
      }
    case .clear:
      change = controller.clearOverride(client: client)
    case .default:
      guard let patterns = list("patterns"), !patterns.isEmpty else {
        throw ControlError("\"route default\" needs \"patterns\": one or more port-name patterns")
      }
      if let reason = patterns.lazy.compactMap(PortPattern.reason).first { throw ControlError(reason) }
      change = controller.setDefault(patterns, client: client, reason: "the default route was changed")
    case nil:
      throw ControlError("unknown route action '\(name)' (show, override, clear, default)")
    }
    if let change { follow(change, controller, client, state) }
    return [
      "default": JSONValue(controller.patterns.isEmpty ? controller.fixedDefault : controller.patterns),
      "override": JSONValue(controller.override), "requested": .string(controller.requested),
      "effective": JSONValue(controller.preferred(client).targets), "targets": JSONValue(controller.current),
      "candidates": JSONValue(controller.candidates(client)), "connections": connections(client),
    ]
  }
}
