import DSP
import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets

/// The chain the session runs (or runs again after a reconnection), what it was built from, the
/// preset it came from and the MIDI mappings bound to it. It needs no JACK client: a chain built
/// by `ChainBuilder` offline is enough, and `bind(_:)` fills any `MidiMap`.
///
/// Thread: the supervisor.
final class RunningChain {
  /// The chain, its entries and its plugin stages.
  private(set) var chain: VoiceChain
  private(set) var entries: [ChainEntry]
  private(set) var plugins: [PluginStage]
  /// The preset file, for SIGHUP and `--watch`, and its modification date when last loaded.
  private(set) var presetPath: String?
  private(set) var presetModified: Date?
  /// The name of the preset running, and how its entries' processing modes were resolved.
  private(set) var presetName: String
  private(set) var modes: [ModeResolution]
  /// The MIDI mappings in force: the preset's, the command line's, then the learned ones.
  private(set) var midiMappings: [MidiMapping]
  /// Why LV2 alternatives are off for `ctl mode` (`--no-plugins`, `"plugins": false`), or nil.
  private(set) var pluginsOff: String?
  /// True while a reloaded chain's swap is under way (the supervisor then wakes every 10 ms).
  var swapUnderway = false

  /// The chain `built` from `entries` of `preset`, with the command line's `midi` mappings.
  init(_ built: BuiltChain, entries: [ChainEntry], preset: Preset, midi: [MidiMapping]) {
    (chain, self.entries, plugins) = (built.chain, entries, built.plugins)
    (presetPath, presetModified, presetName, modes, midiMappings, pluginsOff) = Self.facts(
      built, preset: preset, midi: midi)
  }

  /// What the session keeps of `preset` and its built chain.
  private static func facts(_ built: BuiltChain, preset: Preset, midi: [MidiMapping]) -> (
    String?, Date?, String, [ModeResolution], [MidiMapping], String?
  ) {
    (
      preset.path, modificationDate(preset.path), preset.name,
      modes(preset.resolutions, fellBack: built.fellBack), preset.midi + midi, preset.pluginsOffReason
    )
  }

  /// The resolutions, with the `automatic` stages whose plugin could not be made marked as
  /// running their built-in unit.
  static func modes(_ resolutions: [ModeResolution], fellBack: [(id: String, reason: String)])
    -> [ModeResolution]
  {
    resolutions.map { r in fellBack.first { $0.id == r.id }.map { r.fellBack(because: $0.reason) } ?? r }
  }

  /// Replaces everything with a reloaded preset's chain (the swap itself is the caller's).
  func adopt(_ built: BuiltChain, entries: [ChainEntry], preset: Preset, midi: [MidiMapping]) {
    (chain, self.entries, plugins) = (built.chain, entries, built.plugins)
    (presetPath, presetModified, presetName, modes, midiMappings, pluginsOff) = Self.facts(
      built, preset: preset, midi: midi)
  }

  /// True when the chain has units that hand frames to a helper thread (WebRTC's), whose
  /// declared latency depends on the period it was built for
  /// (`ProcessingContext.helperLatencyFrames(frameLength:)`, of the context it was prepared with).
  var dependsOnPeriod: Bool { entries.contains { $0.unit?.type.hasPrefix("webrtc-") == true } }

  /// Builds the same entries again for a new sample rate or period, keeping every settable
  /// parameter's value; returns the plugin stages left out. On an error the running chain is kept.
  func reprepare(settings: HostSettings) throws(BuildError) -> [(id: String, message: String)] {
    let built = try ChainBuilder.build(entries, settings: settings)
    carryValues(to: built.chain)
    chain = built.chain
    plugins = built.plugins
    modes = Self.modes(modes, fellBack: built.fellBack)
    return built.skipped
  }

  /// Sets every settable parameter of `next` that the running chain has too (same key) to its
  /// running value.
  func carryValues(to next: VoiceChain) {
    for p in chain.parameters where p.spec.kind != .output {
      next.set(p.key, chain.targets.value(p.index))
    }
  }

  /// The entries with stage `id` resolved again in `mode` (`ctl mode`), from the entry as the
  /// preset wrote it, and how it was resolved. Nothing changes until `adoptMode`.
  func entries(
    switching id: String, to mode: ProcessingMode, availability: (String) -> PluginAvailability
  ) throws(ModeError) -> ([ChainEntry], ModeResolution) {
    guard let index = entries.firstIndex(where: { $0.id == id }) else { throw .noStage(id: id) }
    guard let resolution = modes.first(where: { $0.id == id }) else {
      throw .modesNotSupported(unit: entries[index].unit?.type ?? entries[index].plugin?.uri ?? id)
    }
    var request = resolution.request
    request.mode = mode
    let (entry, next) = try ProcessingModes.resolve(
      resolution.stage, request: request, availability: availability, pluginsOff: pluginsOff)
    var switched = entries
    switched[index] = entry
    return (switched, next)
  }

  /// Takes the chain built from `entries(switching:to:availability:)` (the swap is the caller's).
  func adoptMode(_ built: BuiltChain, entries: [ChainEntry], resolution: ModeResolution) {
    (chain, self.entries, plugins) = (built.chain, entries, built.plugins)
    let replaced = modes.map { $0.id == resolution.id ? resolution : $0 }
    modes = Self.modes(replaced, fellBack: built.fellBack)
  }

  /// True (once per change) when `--watch` should reload: the preset file's modification date
  /// differs from the one last seen.
  func presetFileChanged() -> Bool {
    guard let presetPath else { return false }
    let now = Self.modificationDate(presetPath)
    guard now != presetModified else { return false }
    presetModified = now
    return true
  }

  /// Maps the MIDI controllers onto the chain's parameters (after a start, a reload or a
  /// reconnection); returns one sentence per mapping to a key the chain has no settable
  /// parameter for (skipped).
  func bind(_ map: MidiMap) -> [String] {
    map.clear()
    var refused: [String] = []
    for m in midiMappings {
      guard let p = chain.parameter(m.key), p.spec.kind != .output else {
        refused.append(
          "MIDI CC \(m.cc) is mapped to '\(m.key)', which the chain has no settable parameter for")
        continue
      }
      map.bind(cc: m.cc, channel: m.channel.map { $0 - 1 }, to: p)
    }
    return refused
  }

  /// Adds a learned mapping of `cc` on `channel` (0-based) to `key`, replacing the ones the
  /// same controller had.
  func learn(cc: Int, channel: Int, key: String) {
    midiMappings.removeAll { $0.cc == cc && ($0.channel == nil || $0.channel == channel + 1) }
    midiMappings.append(MidiMapping(cc: cc, channel: channel + 1, key: key))
  }

  /// Per-stage processing time per block: `id mean/max µs`, for the log and health events.
  func stageSummary() -> String {
    "stage time per block (mean/max µs, one block in \(VoiceChain.timedBlockInterval) timed): "
      + chain.stageTimes().map {
        "\($0.id) " + String(format: "%.1f/%.0f", $0.meanMicroseconds, $0.maxMicroseconds)
      }
      .joined(separator: ", ")
  }

  /// The plugins' log lines since the last call, each with its plugin's id.
  func drainPluginLogs() -> [String] {
    plugins.flatMap { plugin in plugin.drainLog().map { "plugin '\(plugin.id)': \($0)" } }
  }

  /// The gain reduction (dB) each compressor/limiter stage reports now, by stage id.
  var gainReductions: [(id: String, decibels: Double)] {
    chain.parameters.filter { $0.key.hasSuffix(".gain_reduction_db") }.map {
      (
        id: String($0.key.dropLast(".gain_reduction_db".count)),
        decibels: Double(chain.targets.value($0.index))
      )
    }
  }

  static func modificationDate(_ path: String?) -> Date? {
    guard let path else { return nil }
    return (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
  }
}
