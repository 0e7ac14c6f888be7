import DSP
import Dispatch
import Foundation
import LiveMicEngine
import LiveMicOffline
import LiveMicPresets

/// One meter reading as the supervisor serves it (control socket, OSC, `livemic monitor`).
///
/// Thread: any (value type).
struct MeterReading {
  /// Peak and RMS (dBFS, -200 for silence) of input left/right, then output left/right.
  var channels: [(peakDecibels: Double, rmsDecibels: Double)]
  /// The gain reduction (dB) each compressor/limiter stage reports, by stage id.
  var gainReductions: [(id: String, decibels: Double)]
  /// The loudness meter's latest figures (nil when it is not running).
  var loudness: LoudnessReading?

  /// The fields of a `meters` response or stream line.
  var fields: JSONObject {
    let tenth = { (x: Double) in JSONValue.number((x * 10).rounded() / 10) }
    let m: [JSONValue] = channels.map {
      .object(["peak_dbfs": tenth($0.peakDecibels), "rms_dbfs": tenth($0.rmsDecibels)])
    }
    var reductions = JSONObject()
    for (id, db) in gainReductions { reductions[id] = tenth(db) }
    var fields: JSONObject = [
      "input": .array(Array(m[0..<2])), "output": .array(Array(m[2..<4])),
      "gain_reduction_db": .object(reductions),
    ]
    if let loudness { fields["loudness"] = loudness.json }
    return fields
  }

  /// The arguments of `/livemic/meters`: input L/R peak, output L/R peak, input L/R RMS,
  /// output L/R RMS (dBFS), and the deepest gain reduction (dB).
  var oscValues: [Float] {
    channels.map { Float($0.peakDecibels) } + channels.map { Float($0.rmsDecibels) }
      + [Float(gainReductions.map(\.decibels).max() ?? 0)]
  }
}

/// The supervisor's live streams: meters read about 20 times a second while anyone follows
/// them, and events fanned out to the socket's and OSC's subscribers. Thread: the supervisor.
extension LiveSession {
  /// The meter period while someone follows the meters.
  static let meterIntervalNanoseconds: UInt64 = 50_000_000

  /// True when a socket or OSC subscriber follows the meters.
  var metersFollowed: Bool {
    (control?.hasSubscribers("meters") ?? false) || (osc?.hasSubscribers("meters") ?? false)
  }

  /// How long the supervisor may sleep before its next duty (a meter update or the 1 s tick).
  func nextWakeTimeout() -> DispatchTime {
    guard metersFollowed else { return .now() + .seconds(1) }
    let due = lastMeterRead.uptimeNanoseconds + Self.meterIntervalNanoseconds
    let now = DispatchTime.now().uptimeNanoseconds
    return DispatchTime(uptimeNanoseconds: max(due, now))
  }

  /// How long the audio thread keeps metering after a one-shot `meters` request (so the next
  /// request, `watch livemic ctl meters`, finds the meters running).
  static let meterLeaseNanoseconds: UInt64 = 10_000_000_000

  /// Keeps the audio thread's metering on while anyone follows the meters or a one-shot request
  /// came within the lease, and off otherwise (nobody reads them: the cycle skips them). Called
  /// at every wake. Turned on, the next reading starts here.
  func keepMetering(_ state: ProcessState) {
    let wanted = metersFollowed || DispatchTime.now().uptimeNanoseconds < meterLeaseEnd
    guard wanted != state.meters.isWanted else { return }
    state.meters.setWanted(wanted)
    if wanted { lastMeterRead = .now() }
  }

  /// Reads the meters (resetting them) and the stages' gain reductions.
  func readMeters(_ state: ProcessState) -> MeterReading {
    lastMeterRead = .now()
    let reading = MeterReading(
      channels: state.meters.read(), gainReductions: running.gainReductions,
      loudness: recorder.loudness?.reading)
    lastMeters = reading
    return reading
  }

  /// The meters for a `meters` request: the streamed reading when it is fresh, so a request
  /// does not steal a window from the subscribers; else a new reading. The first request while
  /// the meters are off turns them on and waits for two cycles (at most 100 ms) to read.
  func currentMeters(_ state: ProcessState) -> MeterReading {
    meterLeaseEnd = DispatchTime.now().uptimeNanoseconds + Self.meterLeaseNanoseconds
    if !state.meters.isWanted {
      keepMetering(state)
      let start = state.cycles.load(ordering: .relaxed)
      let deadline = DispatchTime.now().uptimeNanoseconds + 100_000_000
      while state.cycles.load(ordering: .relaxed) < start &+ 2,
        DispatchTime.now().uptimeNanoseconds < deadline
      {
        usleep(1000)
      }
    }
    if metersFollowed, let lastMeters,
      DispatchTime.now().uptimeNanoseconds < lastMeterRead.uptimeNanoseconds + 2
        * Self.meterIntervalNanoseconds
    {
      return lastMeters
    }
    return readMeters(state)
  }

  /// Sends a meter reading to the subscribers when one is due.
  func streamMeters(_ state: ProcessState) {
    keepMetering(state)
    guard metersFollowed,
      DispatchTime.now().uptimeNanoseconds + 5_000_000 >= lastMeterRead.uptimeNanoseconds
        + Self.meterIntervalNanoseconds
    else { return }
    let reading = readMeters(state)
    if control?.hasSubscribers("meters") ?? false {
      control?.broadcast("meters", Self.meterStreamLine(reading.fields))
    }
    if osc?.hasSubscribers("meters") ?? false { osc?.sendMeters(reading.oscValues) }
  }

  /// A meters stream line: `{"stream":"meters",` first, as the protocol promises (a client
  /// waiting for an answer must tell the two apart), then input, output, gain reductions and
  /// loudness.
  static func meterStreamLine(_ fields: JSONObject) -> String {
    ControlServer.streamLine("meters", fields)
  }

  /// Hands an event (as written to `--events`) to the subscribers.
  func fanOut(event name: String, object: JSONObject) {
    if control?.hasSubscribers("events") ?? false {
      control?.broadcast("events", ControlServer.streamLine("event", object))
    }
    if osc?.hasSubscribers("events") ?? false { osc?.sendEvent(name, object.encoded()) }
  }
}
