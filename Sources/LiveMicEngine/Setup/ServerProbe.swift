import CJack
import Foundation

/// What a running JACK server says about itself, for `livemic doctor`: read through a short-lived
/// client that registers no ports and never activates.
///
/// Thread: any but the audio thread (it opens and closes a client).
public struct ServerProbe: Sendable {
  /// The server's name as asked for (`default` when none was given).
  public let serverName: String
  /// `jackd2`, or `PipeWire` with its version (PipeWire's libjack says so in its version string).
  public let implementation: String
  /// Whether the server runs its graph in real time, and the priority of its clients' process
  /// threads then.
  public let realtime: Bool
  public let clientPriority: Int32?
  public let sampleRate: Int
  public let bufferFrames: Int
  /// The first physical capture and playback ports' latencies (frames; nil without such ports).
  public let captureLatencyFrames: Int?
  public let playbackLatencyFrames: Int?

  /// The round trip from a capture port to a playback port (frames): the ports' latencies, or
  /// two periods (one in, one out) where the server has no physical ports.
  public var roundTripFrames: Int {
    (captureLatencyFrames ?? bufferFrames) + (playbackLatencyFrames ?? bufferFrames)
  }

  /// Probes the server `server` (nil: the default one); nil when none answers. libjack's own
  /// lines about a server that is not there ("Cannot connect to server socket", …) are kept
  /// off standard error: the caller reports the absence in one sentence.
  public static func probe(server: String?) -> ServerProbe? {
    JackMessages.install()
    JackMessages.setQuiet(true)
    defer { JackMessages.setQuiet(false) }
    var status = jack_status_t(rawValue: 0)
    guard let client = livemic_client_open("livemic-doctor", JackNoStartServer, server, &status) else {
      return nil
    }
    defer { jack_client_close(client) }
    let version = jack_get_version_string().map { String(cString: $0) } ?? ""
    let implementation: String
    if let range = version.range(of: "PipeWire") {
      implementation = String(version[range.lowerBound...]).trimmingCharacters(
        in: CharacterSet(charactersIn: ")"))
    } else {
      implementation = "jackd2" + (version.isEmpty ? "" : " (libjack \(version))")
    }
    /// The latency of the first physical capture (`capture`) or playback port.
    func latency(capture: Bool) -> Int? {
      let flags = JackPortIsPhysical.rawValue | (capture ? JackPortIsOutput : JackPortIsInput).rawValue
      guard let names = jack_get_ports(client, nil, "32 bit float mono audio", UInt(flags)) else {
        return nil
      }
      defer { jack_free(UnsafeMutableRawPointer(mutating: names)) }
      guard let first = names[0], let port = jack_port_by_name(client, first) else { return nil }
      var range = jack_latency_range_t()
      jack_port_get_latency_range(port, capture ? JackCaptureLatency : JackPlaybackLatency, &range)
      return Int(range.max)
    }
    return ServerProbe(
      serverName: server ?? JackClient.defaultServerName, implementation: implementation,
      realtime: jack_is_realtime(client) != 0,
      clientPriority: jack_client_real_time_priority(client) > 0
        ? jack_client_real_time_priority(client) : nil,
      sampleRate: Int(jack_get_sample_rate(client)),
      bufferFrames: Int(jack_get_buffer_size(client)),
      captureLatencyFrames: latency(capture: true), playbackLatencyFrames: latency(capture: false))
  }
}
