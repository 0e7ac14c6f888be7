import CJack
import CLV2Support
import CLilv
import Foundation

/// The C feature structures one plugin instance is given, kept alive as long as the instance.
///
/// Thread: built off the audio thread; the worker's `schedule` is called by the plugin on the
/// audio thread (real-time safe: a ring-buffer write and a semaphore signal).
final class HostFeatures {
  private let strings: [UnsafeMutablePointer<CChar>]
  private let allocations: [UnsafeMutableRawPointer]
  let features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>
  let logQueue: OpaquePointer?
  let worker: PluginWorker

  init(world: LV2World, settings: HostSettings, stateDirectory: String) {
    logQueue = livemic_log_queue_new(64)
    worker = PluginWorker()
    let map = world.urids
    var b = Builder()
    b.add(URI.uridMap, UnsafeMutableRawPointer(map.mapFeature))
    b.add(URI.uridUnmap, UnsafeMutableRawPointer(map.unmapFeature))
    b.add(URI.boundedBlockLength, nil)
    if settings.provides(URI.fixedBlockLength) { b.add(URI.fixedBlockLength, nil) }
    if settings.provides(URI.powerOf2BlockLength) { b.add(URI.powerOf2BlockLength, nil) }
    Self.addOptions(&b, map: map, settings: settings)
    Self.addWorkerSchedule(&b, worker: worker)
    Self.addStatePaths(&b, directory: stateDirectory)
    // log:log → the stage's lock-free queue, drained by the supervisor.
    if let logQueue, let log = livemic_log_feature_new(logQueue) {
      b.allocations.append(log)
      b.add(URI.logLog, log)
    }
    (features, strings, allocations) = b.finish()
  }

  /// The feature list while it is built: each feature's URI and data, and what to free.
  private struct Builder {
    var list: [(String, UnsafeMutableRawPointer?)] = []
    var allocations: [UnsafeMutableRawPointer] = []
    var strings: [UnsafeMutablePointer<CChar>] = []

    mutating func add(_ uri: String, _ data: UnsafeMutableRawPointer?) { list.append((uri, data)) }

    /// `value` in memory the features own.
    mutating func keep<T>(_ value: T) -> UnsafeMutablePointer<T> {
      let p = UnsafeMutablePointer<T>.allocate(capacity: 1)
      p.initialize(to: value)
      allocations.append(UnsafeMutableRawPointer(p))
      return p
    }

    /// The NULL-terminated `LV2_Feature` array, and everything to free with it.
    mutating func finish() -> (
      UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>, [UnsafeMutablePointer<CChar>],
      [UnsafeMutableRawPointer]
    ) {
      let features = UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>.allocate(capacity: list.count + 1)
      for (i, (uri, data)) in list.enumerated() {
        let u = HostFeatures.cString(uri)
        strings.append(u)
        features[i] = UnsafePointer(keep(LV2_Feature(URI: u, data: data)))
      }
      features[list.count] = nil
      return (features, strings, allocations)
    }
  }

  /// options: the sample rate and block lengths, as the buf-size and parameters specs name them.
  private static func addOptions(_ b: inout Builder, map: URIDMap, settings: HostSettings) {
    let ints = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    ints[0] = 1
    ints[1] = Int32(settings.maxBlockFrames)
    ints[2] = Int32(settings.nominalBlockFrames)
    ints[3] = 8192
    let rate = b.keep(Float(settings.sampleRate))
    b.allocations.append(UnsafeMutableRawPointer(ints))
    let intType = map.map(URI.atomInt)
    let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: 6)
    func option(_ key: String, _ type: UInt32, _ value: UnsafeRawPointer) -> LV2_Options_Option {
      LV2_Options_Option(
        context: LV2_OPTIONS_INSTANCE, subject: 0, key: map.map(key), size: 4, type: type, value: value)
    }
    options[0] = option(URI.minBlockLength, intType, ints)
    options[1] = option(URI.maxBlockLength, intType, ints + 1)
    options[2] = option(URI.nominalBlockLength, intType, ints + 2)
    options[3] = option(URI.sequenceSize, intType, ints + 3)
    options[4] = option(URI.parameterSampleRate, map.map(URI.atomFloat), rate)
    options[5] = LV2_Options_Option(
      context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil)
    b.allocations.append(UnsafeMutableRawPointer(options))
    b.add(URI.options, UnsafeMutableRawPointer(options))
  }

  /// worker:schedule, into `worker`'s request ring.
  private static func addWorkerSchedule(_ b: inout Builder, worker: PluginWorker) {
    let schedule = b.keep(
      LV2_Worker_Schedule(
        handle: Unmanaged.passUnretained(worker).toOpaque(),
        schedule_work: { handle, size, data in
          guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
          return Unmanaged<PluginWorker>.fromOpaque(handle).takeUnretainedValue().schedule(
            size: size, data: data)
        }))
    b.add(URI.workerSchedule, UnsafeMutableRawPointer(schedule))
  }

  /// state: paths live under the stage's state directory; mapping is the identity.
  private static func addStatePaths(_ b: inout Builder, directory stateDirectory: String) {
    let directory = cString(stateDirectory)
    b.strings.append(directory)
    let makePath = b.keep(
      LV2_State_Make_Path(
        handle: UnsafeMutableRawPointer(directory),
        path: { handle, path in
          guard let handle, let path else { return nil }
          let dir = String(cString: handle.assumingMemoryBound(to: CChar.self))
          let full = dir + "/" + String(cString: path)
          try? FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
          return strdup(full)
        }))
    let mapPath = b.keep(
      LV2_State_Map_Path(
        handle: nil, abstract_path: { _, path in path.flatMap { strdup($0) } },
        absolute_path: { _, path in path.flatMap { strdup($0) } }))
    let freePath = b.keep(LV2_State_Free_Path(handle: nil, free_path: { _, path in free(path) }))
    b.add(URI.makePath, UnsafeMutableRawPointer(makePath))
    b.add(URI.mapPath, UnsafeMutableRawPointer(mapPath))
    b.add(URI.freePath, UnsafeMutableRawPointer(freePath))
  }

  /// A NUL-terminated copy of `text` the features own (freed in `deinit`).
  private static func cString(_ text: String) -> UnsafeMutablePointer<CChar> {
    let utf8 = Array(text.utf8CString)
    let copy = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
    copy.initialize(from: utf8, count: utf8.count)
    return copy
  }

  deinit {
    features.deallocate()
    for p in allocations { p.deallocate() }
    for s in strings { s.deallocate() }
    if let logQueue { livemic_log_queue_free(logQueue) }
  }

  /// Log lines the plugin wrote since the last call (off the audio thread).
  func drainLog(map: URIDMap) -> [String] {
    guard let logQueue else { return [] }
    var lines: [String] = []
    var buffer = [CChar](repeating: 0, count: 256)
    var type: UInt32 = 0
    while livemic_log_queue_pop(logQueue, &buffer, 256, &type) == 1 {
      let kind = map.unmap(type).map { String(cString: $0) } ?? ""
      let prefix = kind == URI.logError ? "error: " : kind == URI.logWarning ? "warning: " : ""
      let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
      lines.append(prefix + String(decoding: bytes, as: UTF8.self))
    }
    return lines
  }
}
