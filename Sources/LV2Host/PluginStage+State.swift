import CLilv
import Foundation
import Synchronization

// A plugin stage's state: saving it (the plugin's own and the control values) and the
// helpers lilv's state callbacks use. Off the audio thread.
extension PluginStage {
  /// Saves the plugin's state (its own, plus the control values) as `state.ttl` in `directory`
  /// and returns that file's path. Off the audio thread, while the plugin runs, as hosts do.
  public func saveState(to directory: String) throws(PluginError) -> String {
    world.access.lock()
    defer { world.access.unlock() }
    guard let plugin = world.plugin(info.uri) else { throw .unknownURI(info.uri) }
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let values = PortValues(
      symbols: info.ports.filter { $0.kind == .control && $0.isInput }.map(\.symbol), source: appliedControls)
    values.load()
    let box = Unmanaged.passRetained(values)
    defer { box.release() }
    values.floatType = world.urids.map(URI.atomFloat)
    guard
      let state = lilv_state_new_from_instance(
        plugin, instances[0], world.urids.mapFeature, nil, directory, directory, directory,
        { symbol, userData, size, type in
          guard let symbol, let userData else { return nil }
          let values = Unmanaged<PortValues>.fromOpaque(userData).takeUnretainedValue()
          guard let i = values.index[String(cString: symbol)] else { return nil }
          size?.pointee = 4
          type?.pointee = values.floatType
          return UnsafeRawPointer(values.storage + i)
        }, box.toOpaque(), 0, features[0].features)
    else { throw .unreadableState(path: directory) }
    defer { lilv_state_free(state) }
    guard
      lilv_state_save(
        world.world, world.urids.mapFeature, world.urids.unmapFeature, state, nil, directory, "state.ttl")
        == 0
    else { throw .unreadableState(path: directory + "/state.ttl") }
    return directory + "/state.ttl"
  }
}

/// Control values by symbol, in stable storage for lilv's port-value callback.
final class PortValues {
  var index: [String: Int] = [:]
  let storage: UnsafeMutablePointer<Float>
  private let count: Int
  private let source: UnsafeMutablePointer<Atomic<UInt32>>
  var floatType: UInt32 = 0

  /// `symbols` in control-input order; `source` the stage's applied values in the same order.
  init(symbols: [String], source: UnsafeMutablePointer<Atomic<UInt32>>) {
    count = symbols.count
    storage = .allocate(capacity: max(count, 1))
    self.source = source
    for (i, symbol) in symbols.enumerated() { index[symbol] = i }
  }

  /// Copies the values the audio thread last applied (each one atomically; together they may
  /// span two cycles while a control is being smoothed).
  func load() {
    for i in 0..<count { storage[i] = Float(bitPattern: source[i].load(ordering: .relaxed)) }
  }

  deinit { storage.deallocate() }
}

/// Applies an LV2 state (preset) to an instance, collecting port values by symbol.
final class StateRestore {
  var values: [String: Float]
  private let intTypes: Set<UInt32>

  init(values: [String: Float], intTypes: Set<UInt32>) {
    self.values = values
    self.intTypes = intTypes
  }

  func apply(
    _ state: OpaquePointer, to instance: UnsafeMutablePointer<LilvInstance>,
    features: UnsafePointer<UnsafePointer<LV2_Feature>?>
  ) {
    lilv_state_restore(
      state, instance,
      { symbol, userData, value, size, type in
        guard let symbol, let userData, let value else { return }
        let restore = Unmanaged<StateRestore>.fromOpaque(userData).takeUnretainedValue()
        let v: Float
        switch size {
        case 4 where restore.isInt(type): v = Float(value.load(as: Int32.self))
        case 4: v = value.load(as: Float.self)
        case 8: v = Float(value.load(as: Double.self))
        default: return
        }
        restore.values[String(cString: symbol)] = v
      }, Unmanaged.passUnretained(self).toOpaque(), 0, features)
  }

  func isInt(_ type: UInt32) -> Bool { intTypes.contains(type) }
}
