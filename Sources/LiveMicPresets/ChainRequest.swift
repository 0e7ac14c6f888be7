import DSP
import LV2Host

/// The chain a run asks for: a preset, and what the command line adds to it (`--plugin`,
/// `--music`, `--monitor`, `--loudness-target`, `--set`). The live session, the renderer and
/// the response plot all build their chains from one.
///
/// Thread: any (value type).
public struct ChainRequest: Sendable, Equatable {
  /// A preset name or a path to a preset file.
  public var preset: String
  /// LV2 plugin URIs, inserted before the final output stage in order.
  public var plugins: [String] = []
  /// Adds the `music` stage (the music bed's settings) when the preset has none.
  public var music = false
  /// Adds the `monitor` stage (the monitor mix's settings) when the preset has none.
  public var monitor = false
  /// A slow loudness target in LUFS (`addLoudnessTarget`).
  public var loudnessTargetLufs: Float?
  /// `--set` overrides, applied last.
  public var overrides: [ParameterOverride] = []
  /// `--no-plugins`: no entry's mode runs an LV2 alternative.
  public var noPlugins = false

  public init(preset: String) { self.preset = preset }

  /// Loads the preset from `library`, adds what the request adds, and applies the overrides:
  /// the preset as loaded and the entries to build.
  public func stages(library: PresetLibrary = PresetLibrary()) throws(ChainRequestError)
    -> (Preset, [ChainEntry])
  {
    let preset: Preset
    var library = library
    if noPlugins { library.pluginsOff = "--no-plugins" }
    do { preset = try library.load(self.preset) } catch { throw .preset(error) }
    var entries = preset.entries
    // --plugin entries go before the final output stage.
    for uri in plugins {
      var id = PluginIdentifiers.suggestedId(for: uri)
      var n = 2
      while entries.contains(where: { $0.id == id }) {
        id = PluginIdentifiers.suggestedId(for: uri) + "\(n)"
        n += 1
      }
      let at = entries.lastIndex { $0.unit?.type == OutputVolume.typeName } ?? entries.count
      entries.insert(.plugin(PluginDescription(id: id, uri: uri)), at: at)
    }
    if music && !entries.contains(where: { $0.unit?.type == MusicBed.typeName }) {
      entries.append(.unit(StageDescription(id: MusicBed.typeName, type: MusicBed.typeName)))
    }
    if monitor && !entries.contains(where: { $0.unit?.type == MonitorMix.typeName }) {
      entries.append(.unit(StageDescription(id: MonitorMix.typeName, type: MonitorMix.typeName)))
    }
    if let lufs = loudnessTargetLufs { Self.addLoudnessTarget(lufs, to: &entries) }
    var withPlugins = preset
    withPlugins.chain = entries
    do { return (preset, try withPlugins.stages(applying: overrides)) } catch { throw .override(error) }
  }

  /// Sets the chain's `loudness` stage to `lufs`, or inserts one before the limiter (or before
  /// the output volume) with the limiter's ceiling. The target promises a ceiling, so a chain
  /// whose limiter is bypassed gets it back, and one without gets a limiter (-1 dBFS) after the
  /// new stage.
  /// Thread: any.
  public static func addLoudnessTarget(_ lufs: Float, to entries: inout [ChainEntry]) {
    if let i = entries.firstIndex(where: { $0.unit?.type == LoudnessTarget.typeName }),
      var stage = entries[i].unit
    {
      stage.values["target_lufs"] = lufs
      entries[i] = .unit(stage)
      return
    }
    let limiter = entries.firstIndex { $0.unit?.type == Limiter.typeName }
    if let limiter, var stage = entries[limiter].unit, stage.bypassed {
      stage.bypassed = false
      entries[limiter] = .unit(stage)
    }
    var values = ["target_lufs": lufs]
    if let limiter, let ceiling = entries[limiter].unit?.values["ceiling_db"] {
      values["ceiling_db"] = ceiling
    }
    let at = limiter ?? entries.lastIndex { $0.unit?.type == OutputVolume.typeName } ?? entries.count
    func freeId(_ base: String) -> String {
      var (id, n) = (base, 2)
      while entries.contains(where: { $0.id == id }) {
        id = base + "\(n)"
        n += 1
      }
      return id
    }
    if limiter == nil {
      entries.insert(.unit(StageDescription(id: freeId(Limiter.typeName), type: Limiter.typeName)), at: at)
    }
    let stage = StageDescription(
      id: freeId(LoudnessTarget.typeName), type: LoudnessTarget.typeName, values: values)
    entries.insert(.unit(stage), at: at)
  }
}

/// Why a requested chain cannot be made; each message is one sentence.
public enum ChainRequestError: CodedError, Equatable {
  case preset(PresetError)
  case override(OverrideError)

  public var description: String {
    switch self {
    case .preset(let e): return e.description
    case .override(let e): return e.description
    }
  }

  public var code: String {
    switch self {
    case .preset(let e): return e.code
    case .override(let e): return e.code
    }
  }
}
