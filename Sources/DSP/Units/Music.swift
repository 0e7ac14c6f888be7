/// The music bed's settings: a stage that leaves the voice untouched and holds the parameters
/// the engine reads to mix the `music_1`/`music_2` inputs into the outputs after the chain
/// (`--music`). Being a stage of the chain, its keys (`music.volume_db`, `music.duck`, …) are
/// set like any other parameter: `ctl set`, OSC, MIDI, presets and `--set`.
///
/// The engine (`ProcessState`) does the mixing and the ducking; see docs/rig.md.
public struct MusicBed: VoiceUnit {
  public static let typeName = "music"
  public static let summary =
    "Music bed (--music): its volume and ducking under the voice; the voice passes unchanged."
  public static let parameters = [
    ParameterSpec(
      "volume_db", unit: "dB", range: -60...12, default: -10,
      "Volume of the music inputs in the outputs (they bypass the voice chain); -60 is silent."),
    ParameterSpec.toggle("duck", default: false, "Dips the music while the processed voice is present."),
    ParameterSpec(
      "duck_threshold_db", unit: "dB", range: -80...0, default: -40,
      "Peak level of the processed voice above which the music ducks."),
    ParameterSpec(
      "duck_depth_db", unit: "dB", range: 0...60, default: 12, "How far the music dips under the voice."),
    ParameterSpec(
      "duck_attack_ms", unit: "ms", range: 1...5000, default: 50,
      "Time the music takes to dip by the full depth once the voice starts."),
    ParameterSpec(
      "duck_release_ms", unit: "ms", range: 1...20000, default: 800,
      "Time the music takes to come back from the full depth once the hold has passed."),
    ParameterSpec(
      "duck_hold_ms", unit: "ms", range: 0...5000, default: 200,
      "How long the voice must stay under the threshold before the music comes back."),
  ]

  public init() {}
  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {}
  /// - Realtime: safe
  public mutating func reset() {}

  /// The voice passes unchanged.
  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {}
}

/// The monitor mix's levels (`--monitor`): a stage that leaves the voice untouched and holds the
/// parameters the engine reads to feed `monitor_1`/`monitor_2`, the performers' headphones:
/// voice and music levels and a reverb send heard only there.
public struct MonitorMix: VoiceUnit {
  public static let typeName = "monitor"
  public static let summary =
    "Monitor mix (--monitor): voice, music and reverb levels of monitor_1/monitor_2; the voice passes unchanged."
  public static let parameters = [
    ParameterSpec(
      "voice_db", unit: "dB", range: -60...24, default: 0,
      "Level of the processed voice (the main outputs' voice, after output.volume) in the monitor; -60 is silent."
    ),
    ParameterSpec(
      "music_db", unit: "dB", range: -60...12, default: -10,
      "Level of the music bed in the monitor (not ducked, independent of music.volume_db); -60 is silent."),
    ParameterSpec(
      "reverb_db", unit: "dB", range: -60...6, default: -60,
      "Level of the monitor-only reverb, relative to the monitor's voice (a post-fader send); -60 is off. The main outputs get none of it."
    ),
    ParameterSpec(
      "reverb_room", unit: "", range: 0...1, default: 0.6, "Room size (decay time) of the monitor reverb."),
    ParameterSpec(
      "reverb_damping", unit: "", range: 0...1, default: 0.5,
      "High-frequency damping of the monitor reverb's tail."),
  ]

  public init() {}
  public mutating func prepare(sampleRate: Double, maxFrames: Int, parameters: ParameterValues) {}
  /// - Realtime: safe
  public mutating func reset() {}

  /// The voice passes unchanged.
  /// - Realtime: safe
  public mutating func process(_ block: StereoBlock, parameters p: ParameterValues) {}
}
