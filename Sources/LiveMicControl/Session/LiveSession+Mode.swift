import DSP
import Foundation
import LiveMicEngine
import LiveMicPresets

/// `ctl mode`: one stage's implementation switched while running. Thread: the supervisor.
extension LiveSession {
  /// `{"cmd": "mode"}`: every stage with a mode, how it resolved and why.
  /// `{"cmd": "mode", "id": STAGE, "mode": MODE}`: resolves the stage again in MODE from the
  /// entry as its preset wrote it, builds and warms the whole chain here (every other value as
  /// it runs now; the stage's own values where the new implementation has the same names, else
  /// the preset's), and crossfades to it over 50 ms (linear at the same latency, else equal
  /// power like a preset load). A mode that
  /// cannot be met (`plugin` with none usable, `webrtc` for a unit without it, a stage without
  /// modes) is refused in one sentence and the running chain kept. A preset load (`ctl preset
  /// load`, SIGHUP, `--watch`) resolves the preset's own modes again.
  func modeCommand(_ request: JSONObject, _ client: JackClient, _ state: ProcessState)
    throws(ControlError) -> JSONObject
  {
    let fields = { (r: ModeResolution) -> JSONObject in
      (["id": .string(r.id), "unit": .string(r.unit)] as JSONObject).merging(r.fields)
    }
    guard request["id"] != nil || request["mode"] != nil else {
      return ["modes": .array(running.modes.map { .object(fields($0)) })]
    }
    guard let id = request["id"]?.string, !id.isEmpty else {
      throw ControlError("\"mode\" needs an \"id\" string (a stage of the running chain)")
    }
    let names = ProcessingMode.allCases.map(\.rawValue)
    guard let name = request["mode"]?.string, let mode = ProcessingMode(rawValue: name) else {
      throw ControlError(
        "\"mode\" needs a \"mode\": \(names.dropLast().joined(separator: ", ")) or \(names.last ?? "")")
    }
    let started = DispatchTime.now()
    let (entries, resolution): ([ChainEntry], ModeResolution)
    do {
      (entries, resolution) = try running.entries(
        switching: id, to: mode, availability: ProcessingModes.availability(in: ChainBuilder.world))
    } catch { throw ControlError(error) }
    // Strict: a plugin that cannot be made refuses the switch, and the running chain stays.
    let built: BuiltChain
    do { built = try ChainBuilder.build(entries, settings: settings(for: client), strict: true) } catch {
      throw ControlError(error)
    }
    running.carryValues(to: built.chain)
    // The rest of the chain is the same: at the same latency both outputs are the same voice,
    // aligned, and a linear fade keeps its level (equal power would swell it by 3 dB).
    let curve: FadeCurve = built.chain.latencyFrames == running.chain.latencyFrames ? .linear : .equalPower
    running.swapUnderway = !state.slot.crossfade(
      to: built.chain, running: !suspended, timeoutMilliseconds: 0, curve: curve)
    running.adoptMode(built, entries: entries, resolution: resolution)
    report(skipped: [], fellBack: built.fellBack)
    bindMidi(state)
    let now = running.modes.first { $0.id == id } ?? resolution
    let ms = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6
    Log.info(
      "stage '\(id)': \(now.reason); crossfaded in after "
        + String(format: "%.0f", ms) + " ms")
    stream.emit(
      "mode-changed",
      [
        "id": .string(id), "mode": .string(mode.rawValue), "implementation": .string(now.effective),
        "why": .string(now.reason), "ms": .number(ms),
      ])
    return fields(now)
  }
}
