import LiveMicEngine
import LiveMicPresets

/// The supervisor's live streams: the meters (`MeterFeed`) served to requests and subscribers,
/// and events fanned out to the socket's and OSC's subscribers. Thread: the supervisor.
extension LiveSession {
  /// True when a socket or OSC subscriber follows the meters.
  var metersFollowed: Bool { doors.followed("meters") }

  /// The stages' gain reductions and the loudness meter's figures, for a meter reading.
  private var meterExtras: MeterFeed.Extras {
    { [running, recorder] in (running?.gainReductions ?? [], recorder.loudness?.reading) }
  }

  /// The meters for a `meters` request.
  func currentMeters(_ state: ProcessState) -> MeterReading {
    doors.meters.current(
      state.meters, cycles: { state.cycles.load(ordering: .relaxed) }, followed: metersFollowed, meterExtras)
  }

  /// Sends a meter reading to the subscribers when one is due.
  func streamMeters(_ state: ProcessState) {
    guard let reading = doors.meters.due(state.meters, followed: metersFollowed, meterExtras) else { return }
    doors.send(reading)
  }

  /// A meters stream line: `{"stream":"meters",` first, as the protocol promises (a client
  /// waiting for an answer must tell the two apart), then input, output, gain reductions and
  /// loudness.
  static func meterStreamLine(_ fields: JSONObject) -> String {
    ControlServer.streamLine("meters", fields)
  }

  /// Hands an event (as written to `--events`) to the subscribers.
  func fanOut(event name: String, object: JSONObject) { doors.send(event: name, object) }
}
