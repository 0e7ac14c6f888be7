import CJack
import CLV2Support
import CLilv
import Foundation

/// The C feature structures one plugin instance is given, kept alive as long as the instance.
///
/// Thread: built off the audio thread; the worker's `schedule` is called by the plugin on the
/// audio thread (real-time safe: a ring-buffer write and a semaphore signal).
final class HostFeatures {
  private var strings: [UnsafeMutablePointer<CChar>] = []
  private var allocations: [UnsafeMutableRawPointer] = []
  private(set) var features: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>
  let logQueue: OpaquePointer?
  let worker: PluginWorker

  init(world: LV2World, settings: HostSettings, stateDirectory: String) {
    logQueue = livemic_log_queue_new(64)
    worker = PluginWorker()
    let map = world.urids
    var list: [(String, UnsafeMutableRawPointer?)] = [
      (URI.uridMap, UnsafeMutableRawPointer(map.mapFeature)),
      (URI.uridUnmap, UnsafeMutableRawPointer(map.unmapFeature)),
      (URI.boundedBlockLength, nil),
    ]
    if settings.provides(URI.fixedBlockLength) { list.append((URI.fixedBlockLength, nil)) }
    if settings.provides(URI.powerOf2BlockLength) { list.append((URI.powerOf2BlockLength, nil)) }

    // options: sample rate and block lengths, as the buf-size and parameters specs name them.
    let ints = UnsafeMutablePointer<Int32>.allocate(capacity: 4)
    ints[0] = 1
    ints[1] = Int32(settings.maxBlockFrames)
    ints[2] = Int32(settings.nominalBlockFrames)
    ints[3] = 8192
    let rate = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    rate.pointee = Float(settings.sampleRate)
    allocations += [UnsafeMutableRawPointer(ints), UnsafeMutableRawPointer(rate)]
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
    allocations.append(UnsafeMutableRawPointer(options))
    list.append((URI.options, UnsafeMutableRawPointer(options)))

    // worker:schedule
    let schedule = UnsafeMutablePointer<LV2_Worker_Schedule>.allocate(capacity: 1)
    schedule.initialize(
      to: LV2_Worker_Schedule(
        handle: Unmanaged.passUnretained(worker).toOpaque(),
        schedule_work: { handle, size, data in
          Unmanaged<PluginWorker>.fromOpaque(handle!).takeUnretainedValue().schedule(size: size, data: data)
        }))
    allocations.append(UnsafeMutableRawPointer(schedule))
    list.append((URI.workerSchedule, UnsafeMutableRawPointer(schedule)))

    // state: paths live under the stage's state directory; mapping is the identity.
    let directory = strdup(stateDirectory)!
    strings.append(directory)
    let makePath = UnsafeMutablePointer<LV2_State_Make_Path>.allocate(capacity: 1)
    makePath.initialize(
      to: LV2_State_Make_Path(
        handle: UnsafeMutableRawPointer(directory),
        path: { handle, path in
          let dir = String(cString: handle!.assumingMemoryBound(to: CChar.self))
          let full = dir + "/" + String(cString: path!)
          try? FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
          return strdup(full)
        }))
    let mapPath = UnsafeMutablePointer<LV2_State_Map_Path>.allocate(capacity: 1)
    mapPath.initialize(
      to: LV2_State_Map_Path(
        handle: nil, abstract_path: { _, path in strdup(path!) }, absolute_path: { _, path in strdup(path!) })
    )
    let freePath = UnsafeMutablePointer<LV2_State_Free_Path>.allocate(capacity: 1)
    freePath.initialize(to: LV2_State_Free_Path(handle: nil, free_path: { _, path in free(path) }))
    allocations += [
      UnsafeMutableRawPointer(makePath), UnsafeMutableRawPointer(mapPath), UnsafeMutableRawPointer(freePath),
    ]
    list += [
      (URI.makePath, UnsafeMutableRawPointer(makePath)), (URI.mapPath, UnsafeMutableRawPointer(mapPath)),
      (URI.freePath, UnsafeMutableRawPointer(freePath)),
    ]

    // log:log → the stage's lock-free queue, drained by the supervisor.
    if let logQueue, let log = livemic_log_feature_new(logQueue) {
      allocations.append(log)
      list.append((URI.logLog, log))
    }

    features = .allocate(capacity: list.count + 1)
    for (i, (uri, data)) in list.enumerated() {
      let u = strdup(uri)!
      strings.append(u)
      let feature = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
      feature.initialize(to: LV2_Feature(URI: u, data: data))
      allocations.append(UnsafeMutableRawPointer(feature))
      features[i] = UnsafePointer(feature)
    }
    features[list.count] = nil
  }

  deinit {
    features.deallocate()
    for p in allocations { p.deallocate() }
    for s in strings { free(s) }
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
      lines.append(prefix + buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }
    return lines
  }
}
