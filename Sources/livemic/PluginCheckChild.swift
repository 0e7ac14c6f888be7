import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets

/// The child of `livemic plugins check` (the hidden `livemic plugins check-one URI`): hosts one
/// plugin as LiveMic does and renders noise through it inside a JACK process callback, then
/// prints one JSON line for the parent. A plugin that crashes or hangs takes only this process
/// down. Never real-time (the render itself runs on JACK's process thread).
enum PluginCheckChild {
  /// How long the noise lasts, and how long the server has to run its cycles.
  static let seconds = 1.0
  static let renderTimeout = 8.0

  /// Opens a client on `server`, builds the plugin as a one-stage chain for the server's rate
  /// and period (fixed blocks, as live), renders `seconds` of noise and returns the line to
  /// print. A plugin LiveMic refuses, or one that cannot be made, is a line too; a server that
  /// cannot be reached is an error.
  static func run(uri: String, server: String?) throws(EngineError) -> String {
    let client = try CheckClient(name: "livemic-check", server: server)
    let settings = HostSettings(
      sampleRate: client.sampleRate, maxBlockFrames: client.bufferFrames,
      nominalBlockFrames: client.bufferFrames, fixedBlocks: true)
    let description = PluginDescription(id: PluginIdentifiers.suggestedId(for: uri), uri: uri)
    let built: BuiltChain
    do {
      built = try ChainBuilder.build([.plugin(description)], settings: settings, strict: true)
    } catch {
      if case .plugin(_, .unsupported(_, let reason)) = error {
        return line(["outcome": "refused", "reason": .string(reason)])
      }
      if case .plugin(_, let inner) = error {
        return line(["outcome": "failed", "reason": .string(inner.description)])
      }
      return line(["outcome": "failed", "reason": .string(error.description)])
    }
    let render = CheckRender(
      chain: built.chain, sampleRate: client.sampleRate, seconds: seconds, maxFrames: client.bufferFrames)
    let result = try client.renderNoise(render, timeout: renderTimeout)
    for stage in built.plugins {
      for message in stage.drainLog() {
        FileHandle.standardError.write(Data("livemic: plugin '\(stage.id)': \(message)\n".utf8))
      }
    }
    return line([
      "outcome": "rendered", "frames": .int(result.frames), "blocks": .int(result.blocks),
      "peak": .number(Double(result.peak)), "nonFiniteBlocks": .int(result.nonFiniteBlocks),
      "sampleRate": .number(client.sampleRate), "period": .int(client.bufferFrames),
    ])
  }

  private static func line(_ object: JSONObject) -> String { JSONValue.object(object).encoded(.compact) }
}
