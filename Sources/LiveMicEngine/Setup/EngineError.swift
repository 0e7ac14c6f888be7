import DSP

/// Why the engine could not start or change. Each message is one sentence.
public enum EngineError: CodedError, Equatable {
  case serverUnavailable(server: String, status: UInt32)
  case portRegistration(String)
  case activation
  case connection(from: String, to: String, code: Int32)
  case noSuchPort(String)
  /// The server ran too few cycles of a check client to render its noise in time.
  case stalled(seconds: Double)

  public var description: String {
    switch self {
    case .serverUnavailable(let server, let status):
      return "cannot open a JACK client on server '\(server)' (status 0x"
        + String(status, radix: 16) + "): is jackd running? 'scripts/run' starts a dummy server"
    case .portRegistration(let port):
      return "JACK refused to register port '\(port)'"
    case .activation:
      return "JACK refused to activate the client"
    case .connection(let from, let to, let code):
      return "cannot connect '\(from)' to '\(to)' (JACK error \(code))"
    case .noSuchPort(let port):
      return "there is no JACK port named '\(port)'"
    case .stalled(let seconds):
      return "the JACK server did not run the check client's cycles within \(Int(seconds)) s"
    }
  }

  public var code: String {
    switch self {
    case .serverUnavailable: return "engine.server-unavailable"
    case .portRegistration: return "engine.port-registration"
    case .activation: return "engine.activation"
    case .connection: return "engine.connection"
    case .noSuchPort: return "engine.no-such-port"
    case .stalled: return "engine.stalled"
    }
  }
}
