import Dispatch
import Foundation
import LiveMicEngine

/// The control door while the JACK server is away (see `reconnect`): requests are answered at
/// once. `status` reports the reconnecting state; values can be read and set on the chain that
/// runs once the server is back; a mute or unmute holds across the reconnection; the rest needs
/// the server. Thread: the supervisor.
extension LiveSession {
  func answerWhileAway(_ request: [String: JSONValue], attempt: Int, lostAt: DispatchTime) -> String {
    let command = request["cmd"]?.string ?? ""
    do throws(ControlError) {
      let result: [String: Any]
      switch command {
      case "status":
        let lost = Double(DispatchTime.now().uptimeNanoseconds - lostAt.uptimeNanoseconds) / 1e9
        result = [
          "client": options.clientName, "server": serverLabel, "preset": presetName, "muted": isMuted,
          "mute_mode": muteMode ?? (muted ? "ramp" : "none"), "state": "reconnecting", "attempt": attempt,
          "lost_seconds": (lost * 10).rounded() / 10,
        ]
      case "get": result = try get(request)
      case "set": result = try set(request)
      case "mute":
        let mode = request["mode"]?.string ?? "ramp"
        guard Self.muteModes.contains(mode) else {
          throw ControlError("mute mode '\(mode)' is not one of ramp, input, suspend")
        }
        // Kept for the new client: it starts silent (ramp, suspend) or with the input muted.
        (muteMode, muted) = (mode, mode != "input")
        Log.info("output muted (control, mode \(mode), while the server is away)")
        stream.emit("muted", ["reason": .string("control"), "mode": .string(mode)])
        result = ["muted": true, "mode": mode]
      case "unmute":
        if isMuted { stream.emit("unmuted", ["reason": .string("control")]) }
        (muteMode, muted) = (nil, false)
        result = ["muted": false]
      default:
        throw ControlError(
          "'\(command)' needs the JACK server, which is away (LiveMic is reconnecting, attempt \(attempt))")
      }
      return Self.encode(["ok": true].merging(result) { a, _ in a })
    } catch {
      return ControlServer.error(error.message)
    }
  }
}
