import LiveMicPresets

/// The doors requests come in by and stream lines go out of — the control socket, OSC and the web remote —
/// and the meters they serve. Thread: the supervisor.
final class Doors {
  /// The control socket (nil when it could not be served).
  var control: ControlServer?
  /// OSC (`--osc PORT`).
  var osc: OscServer?
  /// The web remote (`--web`): its feed is the control socket's stream lines.
  var web: WebDoor?
  /// The meters served to requests and subscribers, and their lease.
  let meters = MeterFeed()

  init() {}

  /// True when a socket or OSC subscriber follows `topic`.
  func followed(_ topic: String) -> Bool {
    (control?.hasSubscribers(topic) ?? false) || (osc?.hasSubscribers(topic) ?? false)
  }

  /// Sends a meter reading to the subscribers of either door.
  func send(_ reading: MeterReading) {
    if control?.hasSubscribers("meters") ?? false {
      control?.broadcast("meters", ControlServer.streamLine("meters", reading.fields))
    }
    if osc?.hasSubscribers("meters") ?? false { osc?.sendMeters(reading.oscValues) }
  }

  /// Hands an event (as written to `--events`) to the subscribers of either door.
  func send(event name: String, _ object: JSONObject) {
    if control?.hasSubscribers("events") ?? false {
      control?.broadcast("events", ControlServer.streamLine("event", object))
    }
    if osc?.hasSubscribers("events") ?? false { osc?.sendEvent(name, object.encoded()) }
  }
}
