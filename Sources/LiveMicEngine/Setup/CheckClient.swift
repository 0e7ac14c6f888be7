import CJack
import DSP
import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// The JACK client of `livemic plugins check`: no ports, one process callback that runs a
/// `CheckRender` (noise through a chain) until it is through, so that whatever the chain does
/// happens inside a real JACK cycle, where a preloaded real-time guard counts it.
///
/// Thread: the thread that made it (never the audio thread).
public final class CheckClient {
  let handle: OpaquePointer
  /// The server's sample rate and period at open.
  public let sampleRate: Double
  public let bufferFrames: Int
  private var active = false

  /// Opens a client on a running server (never starts one).
  public init(name: String, server: String?) throws(EngineError) {
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open(name, JackNoStartServer, server, &status) else {
      throw .serverUnavailable(server: server ?? JackClient.defaultServerName, status: status.rawValue)
    }
    handle = h
    sampleRate = Double(jack_get_sample_rate(h))
    bufferFrames = Int(jack_get_buffer_size(h))
  }

  deinit {
    if active { jack_deactivate(handle) }
    jack_client_close(handle)
  }

  /// Warms `render`'s path off the audio thread, activates, waits until every frame went
  /// through the process callback (at most `timeout` seconds), deactivates and returns what the
  /// render saw. Throws when the server refuses to activate the client or runs too few cycles.
  public func renderNoise(_ render: CheckRender, timeout: Double) throws(EngineError) -> CheckRender.Result {
    render.warm()
    let context = Unmanaged.passUnretained(render).toOpaque()
    jack_set_process_callback(handle, { livemicCheckProcess(frames: $0, context: $1) }, context)
    jack_set_thread_init_callback(handle, { _ in _ = livemic_flush_denormals() }, nil)
    guard jack_activate(handle) == 0 else { throw .activation }
    active = true
    let finished = render.finished.wait(timeout: .now() + timeout) == .success
    jack_deactivate(handle)
    active = false
    guard finished else { throw .stalled(seconds: timeout) }
    return render.result
  }
}
