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
    throws(SessionError) -> BuiltChain
  {
    var assembly = ChainAssembly()
    var plugins: [PluginStage] = []
    var skipped: [(id: String, message: String)] = []
    let stateRoot = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-state-\(getpid())")
      .path
    do {
      for entry in entries {
        switch entry {
        case .unit(let d):
          try assembly.append(d)
        case .plugin(let d):
          let stage: PluginStage
          do {
            stage = try PluginStage(
              d, world: world, settings: settings, stateDirectory: stateRoot + "/" + d.id)
          } catch {
            if strict { throw SessionError.plugin(id: d.id, error) }
            skipped.append((d.id, "plugin stage '\(d.id)' is left out: \(error.description)"))
            continue
          }
          stage.bind(firstParameter: assembly.nextParameterIndex)
          try assembly.append(stage: stage, parameters: stage.parameterSpecs)
          plugins.append(stage)
        }
      }
    } catch let error as ChainError {
      throw .chain(error)
    } catch let error as SessionError {
      throw error
    } catch {
      throw .chain(.invalidId("?"))
    }
    return BuiltChain(
      chain: assembly.makeChain(sampleRate: settings.sampleRate, warmFrames: settings.nominalBlockFrames),
      plugins: plugins, skipped: skipped)
  }
}
