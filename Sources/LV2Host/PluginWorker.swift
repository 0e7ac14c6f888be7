import CJack
import CLilv
import Foundation
import Synchronization

/// The LV2 worker of one plugin instance: `schedule` (audio thread) writes a request into a ring
/// and wakes a non-real-time thread, which calls the plugin's `work`; its responses come back
/// through a second ring and are delivered by `deliverResponses` on the audio thread.
///
/// Thread: `schedule`, `deliverResponses` on the audio thread; the worker thread its own.
final class PluginWorker: @unchecked Sendable {
  static let ringBytes = 1 << 16
  static let maxMessageBytes = 4096
  private let requests = jack_ringbuffer_create(ringBytes)!
  private let responses = jack_ringbuffer_create(ringBytes)!
  private let wake = DispatchSemaphore(value: 0)
  private let scratch = UnsafeMutableRawPointer.allocate(byteCount: maxMessageBytes, alignment: 16)
  private let workScratch = UnsafeMutableRawPointer.allocate(byteCount: maxMessageBytes, alignment: 16)
  private var interface: UnsafePointer<LV2_Worker_Interface>?
  private var handle: LV2_Handle?
  private var thread: Thread?
  private let stopping = ManagedAtomicFlag()

  init() {
    jack_ringbuffer_mlock(requests)
    jack_ringbuffer_mlock(responses)
  }

  deinit {
    stop()
    jack_ringbuffer_free(requests)
    jack_ringbuffer_free(responses)
    scratch.deallocate()
    workScratch.deallocate()
  }

  /// Starts the worker thread for an instance that has the worker interface.
  func start(interface: UnsafePointer<LV2_Worker_Interface>, handle: LV2_Handle?) {
    self.interface = interface
    self.handle = handle
    let thread = Thread { [unowned self] in self.loop() }
    thread.name = "livemic-lv2-worker"
    self.thread = thread
    thread.start()
  }

  /// Stops the worker thread (off the audio thread, after the instance is deactivated).
  func stop() {
    guard thread != nil else { return }
    stopping.set()
    wake.signal()
    while !stopping.finished { usleep(1000) }
    thread = nil
  }

  /// Queues work for the worker thread.
  /// - Realtime: safe
  func schedule(size: UInt32, data: UnsafeRawPointer?) -> LV2_Worker_Status {
    guard Self.write(requests, size: size, data: data) else { return LV2_WORKER_ERR_NO_SPACE }
    wake.signal()
    return LV2_WORKER_SUCCESS
  }

  /// Delivers the worker's responses to the plugin, then tells it the run has ended.
  /// - Realtime: safe
  func deliverResponses() {
    guard let interface, let handle else { return }
    while let size = Self.read(responses, into: scratch) {
      _ = interface.pointee.work_response?(handle, size, scratch)
    }
    _ = interface.pointee.end_run?(handle)
  }

  private func loop() {
    while true {
      wake.wait()
      if stopping.isSet { break }
      guard let interface, let handle else { continue }
      while let size = Self.read(requests, into: workScratch) {
        _ = interface.pointee.work?(
          handle,
          { respondHandle, size, data in
            let worker = Unmanaged<PluginWorker>.fromOpaque(respondHandle!).takeUnretainedValue()
            return PluginWorker.write(worker.responses, size: size, data: data)
              ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
          }, Unmanaged.passUnretained(self).toOpaque(), size, workScratch)
      }
    }
    stopping.finish()
  }

  /// Writes a size-prefixed message, or nothing when it does not fit.
  /// - Realtime: safe
  private static func write(
    _ ring: UnsafeMutablePointer<jack_ringbuffer_t>, size: UInt32, data: UnsafeRawPointer?
  ) -> Bool {
    guard Int(size) <= maxMessageBytes, jack_ringbuffer_write_space(ring) >= 4 + Int(size) else {
      return false
    }
    var s = size
    withUnsafeBytes(of: &s) {
      _ = jack_ringbuffer_write(ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 4)
    }
    if size > 0, let data {
      _ = jack_ringbuffer_write(ring, data.assumingMemoryBound(to: CChar.self), Int(size))
    }
    return true
  }

  /// Reads one message into `buffer`; nil when the ring is empty.
  /// - Realtime: safe
  private static func read(
    _ ring: UnsafeMutablePointer<jack_ringbuffer_t>, into buffer: UnsafeMutableRawPointer
  ) -> UInt32? {
    guard jack_ringbuffer_read_space(ring) >= 4 else { return nil }
    var size: UInt32 = 0
    withUnsafeMutableBytes(of: &size) {
      _ = jack_ringbuffer_read(ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 4)
    }
    _ = jack_ringbuffer_read(ring, buffer.assumingMemoryBound(to: CChar.self), Int(size))
    return size
  }
}

/// A stop flag and a finished flag for a worker thread.
final class ManagedAtomicFlag: @unchecked Sendable {
  private let stopFlag = Atomic<Bool>(false)
  private let doneFlag = Atomic<Bool>(false)
  var isSet: Bool { stopFlag.load(ordering: .acquiring) }
  var finished: Bool { doneFlag.load(ordering: .acquiring) }
  func set() { stopFlag.store(true, ordering: .releasing) }
  func finish() { doneFlag.store(true, ordering: .releasing) }
}
