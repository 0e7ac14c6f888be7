import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// The control door while the JACK server is away (see `reconnect`): requests are answered at
/// once. `status` reports the reconnecting state; values can be read and set on the chain that
/// runs once the server is back; a mute or unmute holds across the reconnection; the rest needs
/// the server. Thread: the supervisor.
extension LiveSession {
  func answerWhileAway(_ request: JSONObject) -> String {
    let command = request["cmd"]?.string ?? ""
    do throws(ControlError) {
      let result: JSONObject
      switch command {
      case "status":
        let fields: JSONObject = [
          "client": .string(options.clientName), "server": .string(serverLabel),
          "preset": .string(running.presetName), "freewheeling": false,
        ]
        result = fields.merging(stateStatus)
      case "get": result = try get(request)
      case "set": result = try set(request)
      // Kept for the new client: it starts silent (ramp, suspend) or with the input muted.
      case "mute": result = mute(try Self.muteMode(request), nil, nil)
      case "unmute": result = unmute(nil, nil)
      default:
        var attempt = 0
        if case .reconnecting(let n, _) = supervisorState.link { attempt = n }
        throw ControlError(
          "'\(command)' needs the JACK server, which is away (LiveMic is reconnecting, attempt \(attempt))")
      }
      return ControlServer.answer(result)
    } catch {
      return ControlServer.error(error.message, code: error.code)
    }
  }
}
