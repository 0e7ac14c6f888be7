import LiveMicPresets

/// What `livemic run` was asked to do.
///
/// Thread: any (value type).
public struct RunOptions: Sendable {
  public var clientName = "livemic"
  public var serverName: String?
  public var preset = "voice"
  public var overrides: [ParameterOverride] = []
  public var inputCount = 1
  public var connectIn: [String]?
  public var connectOut: [String]?
  public var noConnect = false
  /// Registers the music bed inputs `music_1`/`music_2` and adds a `music` stage (its volume and
  /// ducking parameters) to the chain when the preset has none.
  public var music = false
  /// Registers the monitor outputs `monitor_1`/`monitor_2` and adds a `monitor` stage (their
  /// voice and music levels) to the chain when the preset has none.
  public var monitor = false
  /// Ports to connect `monitor_1`, `monitor_2` to (nil: none).
  public var connectMonitor: [String]? {
    didSet { if connectMonitor != nil { monitor = true } }
  }
  /// A slow loudness target for streams in LUFS (`--loudness-target`): sets
  /// `loudness.target_lufs`, adding a `loudness` stage before the limiter (its ceiling copied
  /// from the limiter's) when the preset has none. Nil: the preset's chain as it is.
  public var loudnessTargetLufs: Float?
  /// Ports to connect to `music_1`, `music_2` (nil: none).
  public var connectMusic: [String]? {
    didSet { if connectMusic != nil { music = true } }
  }
  /// LV2 plugin URIs appended to the chain (before the output volume).
  public var plugins: [String] = []
  /// Reload the preset file (crossfading) whenever it changes on disk.
  public var watch = false
  /// The autoload rules' file (`--autoload`; nil: `$XDG_CONFIG_HOME/livemic/autoload.json` when it
  /// exists).
  public var autoload: String?
  /// `--no-plugins`: no entry's mode runs an LV2 alternative (`automatic` means built-in).
  public var noPlugins = false
  /// Start fully prepared but muted: `ctl unmute` ramps up at once.
  public var startMuted = false
  /// OSC port (nil: no OSC) and the address it listens on (loopback by default).
  public var oscPort: Int?
  public var oscHost = "127.0.0.1"
  /// Where the web remote listens (`--web [ADDR:]PORT`; nil: no web remote).
  public var web: WebBinding?
  /// MIDI CC mappings (`--midi-cc CC[:CHANNEL]=KEY`), added to the preset's.
  public var midiMappings: [MidiMapping] = []
  /// Where the JSON event stream goes: nil (none), "json" (standard output) or a file path.
  public var events: String?
  /// Output routing preference list (patterns, most preferred first); empty: plain connections.
  public var routeOut: [String] = []
  /// Input routing preference list (capture-port patterns, most preferred first).
  public var routeIn: [String] = []
  /// What happens when the output target is lost or changes device.
  public var onRouteLoss: RouteLossPolicy = .mute
  /// `--record DIR`: record the output tap for the whole run into one file in DIR.
  public var recordDirectory: String?
  /// `--autorecord DIR`: record the output tap of every live session (a new file after each
  /// reconnection) into DIR.
  public var autorecordDirectory: String?
  /// The format of `--record` and `--autorecord` files.
  public var recordFormat: RecordingFormat = .wav
  /// `--stream-out PATH|-`: the output tap as a continuous stream (nil: none).
  public var streamOut: String?
  /// `--stream-format f32|wav`.
  public var streamWavHeader = false

  public init() {}

  /// The chain these options ask for.
  public var chainRequest: ChainRequest {
    var request = ChainRequest(preset: preset)
    request.plugins = plugins
    (request.music, request.monitor) = (music, monitor)
    request.loudnessTargetLufs = loudnessTargetLufs
    request.noPlugins = noPlugins
    request.overrides = overrides
    return request
  }
}
