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

  /// The fields of a `meters` response or stream line: input, output, gain reductions,
  /// loudness, to a tenth of a dB.
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

/// The meters the supervisor reads: about 20 times a second while anyone follows them (a
/// socket or OSC subscriber), and for one-shot `meters` requests, whose lease keeps the audio
/// thread metering for 10 s after each (so `watch livemic ctl meters` finds them running);
/// nobody reading, the audio thread skips them. Tested without a server (`MeterFeedTests`).
///
/// Thread: the supervisor.
final class MeterFeed {
  /// The meter period while someone follows the meters.
  static let intervalNanoseconds: UInt64 = 50_000_000
  /// How long the audio thread keeps metering after a one-shot request.
  static let leaseNanoseconds: UInt64 = 10_000_000_000

  /// What a reading adds to the audio thread's levels: the stages' gain reductions and the
  /// loudness meter's figures.
  typealias Extras = () -> (gainReductions: [(id: String, decibels: Double)], loudness: LoudnessReading?)

  private var last: MeterReading?
  private var lastRead = DispatchTime(uptimeNanoseconds: 0)
  /// Until when (uptime nanoseconds) a one-shot request keeps the metering on.
  private var leaseEnd: UInt64 = 0

  init() {}

  /// How long the supervisor may sleep before its next meter duty (`followed`: someone follows
  /// the meters); a second when nobody does.
  func nextWake(followed: Bool) -> DispatchTime {
    guard followed else { return .now() + .seconds(1) }
    let due = lastRead.uptimeNanoseconds + Self.intervalNanoseconds
    return DispatchTime(uptimeNanoseconds: max(due, DispatchTime.now().uptimeNanoseconds))
  }

  /// Keeps the audio thread's metering on while anyone follows the meters or a one-shot
  /// request came within the lease, and off otherwise. Called at every wake. Turned on, the
  /// next reading starts here.
  func keepMetering(_ meters: Meters, followed: Bool) {
    let wanted = followed || DispatchTime.now().uptimeNanoseconds < leaseEnd
    guard wanted != meters.isWanted else { return }
    meters.setWanted(wanted)
    if wanted { lastRead = .now() }
  }

  /// Reads the meters (resetting them) with `extras`.
  func read(_ meters: Meters, _ extras: Extras) -> MeterReading {
    lastRead = .now()
    let (reductions, loudness) = extras()
    let reading = MeterReading(channels: meters.read(), gainReductions: reductions, loudness: loudness)
    last = reading
    return reading
  }

  /// The meters for a `meters` request: the streamed reading when it is fresh, so a request
  /// does not steal a window from the subscribers; else a new reading. The first request while
  /// the meters are off turns them on and waits for two cycles (`cycles`, at most 100 ms).
  func current(_ meters: Meters, cycles: () -> UInt64, followed: Bool, _ extras: Extras) -> MeterReading {
    leaseEnd = DispatchTime.now().uptimeNanoseconds + Self.leaseNanoseconds
    if !meters.isWanted {
      keepMetering(meters, followed: followed)
      let start = cycles()
      let deadline = DispatchTime.now().uptimeNanoseconds + 100_000_000
      while cycles() < start &+ 2, DispatchTime.now().uptimeNanoseconds < deadline { usleep(1000) }
    }
    if followed, let last,
      DispatchTime.now().uptimeNanoseconds < lastRead.uptimeNanoseconds + 2 * Self.intervalNanoseconds
    {
      return last
    }
    return read(meters, extras)
  }

  /// At every wake: keeps the metering as wanted, and returns a new reading when one is due to
  /// the subscribers (nil: nobody follows, or not yet).
  func due(_ meters: Meters, followed: Bool, _ extras: Extras) -> MeterReading? {
    keepMetering(meters, followed: followed)
    guard followed,
      DispatchTime.now().uptimeNanoseconds + 5_000_000 >= lastRead.uptimeNanoseconds
        + Self.intervalNanoseconds
    else { return nil }
    return read(meters, extras)
  }
}
