import DSP
import Foundation
import LV2Host

/// A chain built from preset entries, with its plugin stages and the stages left out.
///
/// Thread: the supervisor (or the renderer).
public struct BuiltChain: @unchecked Sendable {
  public let chain: VoiceChain
  public let plugins: [PluginStage]
  /// One sentence per plugin entry that could not be made, with its id; the chain runs without it.
  public let skipped: [(id: String, message: String)]
  /// `automatic` stages whose plugin could not be made and whose built-in unit runs instead,
  /// with why (one sentence each).
  public var fellBack: [(id: String, reason: String)] = []
}

/// Builds chains from entries: built-in units through `ChainAssembly`, LV2 plugins through the
/// host, all prepared and warmed (one block of silence) before anything runs them. Never
/// real-time.
public enum ChainBuilder {
  /// The installed plugins, loaded once on first use (scanning bundles takes a while).
  public static let world = LV2World()

  /// Builds `entries`. A plugin that cannot be made is left out and reported in `skipped`
  /// (the rest of the chain runs); with `strict`, it is an error instead.
  public static func build(_ entries: [ChainEntry], settings: HostSettings, strict: Bool = false)
    throws(BuildError) -> BuiltChain
  {
    var assembly = ChainAssembly()
    var plugins: [PluginStage] = []
    var skipped: [(id: String, message: String)] = []
    var fellBack: [(id: String, reason: String)] = []
    let stateRoot = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-state-\(getpid())")
      .path
    // Whether both channels still carry the same signal at the entry being built.
    var stageSettings = settings
    do {
      for entry in entries {
        switch entry {
        case .unit(let d):
          try assembly.append(d)
          if BuiltinUnits.type(named: d.type)?.makesChannelsDiffer ?? true {
            stageSettings.identicalChannels = false
          }
        case .plugin(let d):
          let stage: PluginStage
          do {
            stage = try PluginStage(
              d, world: world, settings: stageSettings, stateDirectory: stateRoot + "/" + d.id)
          } catch {
            if let fallback = d.fallback {
              // An automatic stage: its built-in unit instead (also on a strict reload).
              try assembly.append(fallback)
              if BuiltinUnits.type(named: fallback.type)?.makesChannelsDiffer ?? true {
                stageSettings.identicalChannels = false
              }
              fellBack.append((d.id, error.description))
              continue
            }
            if strict { throw BuildError.plugin(id: d.id, error) }
            skipped.append((d.id, "plugin stage '\(d.id)' is left out: \(error.description)"))
            continue
          }
          if !stage.keepsChannelsIdentical { stageSettings.identicalChannels = false }
          stage.bind(firstParameter: assembly.nextParameterIndex)
          try assembly.append(stage: stage, parameters: stage.parameterSpecs)
          plugins.append(stage)
        }
      }
    } catch let error as ChainError {
      throw .chain(error)
    } catch let error as BuildError {
      throw error
    } catch {
      throw .chain(.invalidId("?"))
    }
    return BuiltChain(
      chain: assembly.makeChain(
        sampleRate: settings.sampleRate, warmFrames: settings.nominalBlockFrames, context: settings.processing
      ),
      plugins: plugins, skipped: skipped, fellBack: fellBack)
  }
}

/// Why a chain cannot be built; each message is one sentence.
public enum BuildError: CodedError, Equatable {
  /// A built-in stage's description is invalid.
  case chain(ChainError)
  /// A plugin stage cannot be made (a strict build).
  case plugin(id: String, PluginError)

  public var description: String {
    switch self {
    case .chain(let e): return e.description
    case .plugin(let id, let e): return "plugin stage '\(id)': \(e.description)"
    }
  }

  public var code: String {
    switch self {
    case .chain(let e): return e.code
    case .plugin(_, let e): return e.code
    }
  }
}
