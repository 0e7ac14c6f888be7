import CJack
import CLV2Support
import CLilv
import Foundation
import Synchronization

/// The LV2 worker of one plugin instance: `schedule` (audio thread) writes a request into a ring
/// and wakes a non-real-time thread, which calls the plugin's `work`; its responses come back
/// through a second ring and are delivered by `deliverResponses` on the audio thread.
///
/// Thread: `schedule`, `deliverResponses` on the audio thread; `start`, `stop` and `deinit` on
/// the owner's thread (off the audio thread). The worker thread holds only its `WorkerThread`,
/// never the worker, so dropping a running worker runs `deinit`, which stops and joins it.
final class PluginWorker: @unchecked Sendable {
  static let ringBytes = 1 << 16
  static let maxMessageBytes = 4096
  /// Audio thread → worker thread.
  let requests = WorkerRing(bytes: ringBytes, maxMessageBytes: maxMessageBytes)
  /// Worker thread → audio thread.
  let responses = WorkerRing(bytes: ringBytes, maxMessageBytes: maxMessageBytes)
  private let wake = DispatchSemaphore(value: 0)
  private let scratch = UnsafeMutableRawPointer.allocate(byteCount: maxMessageBytes, alignment: 16)
  /// Written once by `start`, before the stage is published to the audio thread (the chain
  /// slot's release/acquire orders the writes before `deliverResponses`); read-only after.
  private var interface: UnsafePointer<LV2_Worker_Interface>?
  private var handle: LV2_Handle?
  /// The worker thread while it runs; only the owner's thread touches it.
  private var running: (id: pthread_t, thread: WorkerThread)?

  init() {}

  deinit {
    stop()
    scratch.deallocate()
  }

  /// Starts the worker thread for an instance that has the worker interface; false (and no
  /// worker: `schedule` then fails once the ring is full) when the thread cannot be created.
  @discardableResult
  func start(interface: UnsafePointer<LV2_Worker_Interface>, handle: LV2_Handle?) -> Bool {
    precondition(running == nil && self.interface == nil, "a worker is started once")
    guard let handle else { return false }
    self.interface = interface
    self.handle = handle
    let thread = WorkerThread(
      requests: requests, responses: responses, wake: wake, interface: interface, handle: handle)
    let context = Unmanaged.passRetained(thread).toOpaque()
    var id = pthread_t()
    let result = pthread_create(
      &id, nil,
      { context in
        if let context { Unmanaged<WorkerThread>.fromOpaque(context).takeRetainedValue().run() }
        return nil
      }, context)
    guard result == 0 else {
      Unmanaged<WorkerThread>.fromOpaque(context).release()
      return false
    }
    running = (id, thread)
    return true
  }

  /// Stops the worker thread and waits for it to exit (off the audio thread, once the audio
  /// thread no longer runs the instance, before it is deactivated). Queued requests are dropped.
  func stop() {
    guard let running else { return }
    running.thread.stopping.store(true, ordering: .releasing)
    wake.signal()
    pthread_join(running.id, nil)
    self.running = nil
  }

  /// Queues work for the worker thread.
  /// - Realtime: safe
  func schedule(size: UInt32, data: UnsafeRawPointer?) -> LV2_Worker_Status {
    guard requests.write(size: size, data: data) else { return LV2_WORKER_ERR_NO_SPACE }
    wake.signal()
    return LV2_WORKER_SUCCESS
  }

  /// Delivers the worker's responses to the plugin, then tells it the run has ended.
  /// - Realtime: safe
  func deliverResponses() {
    guard let interface, let handle else { return }
    while let size = responses.read(into: scratch) {
      _ = interface.pointee.work_response?(handle, size, scratch)
    }
    _ = interface.pointee.end_run?(handle)
  }
}

/// The worker thread's side: the request ring it reads, the response ring the plugin's `work`
/// writes through `respond`, its own scratch buffer. Retained by the thread while it runs.
///
/// Thread: `run` on the worker thread; `stopping` is set by `PluginWorker.stop`.
private final class WorkerThread: @unchecked Sendable {
  let requests: WorkerRing
  let responses: WorkerRing
  let wake: DispatchSemaphore
  let interface: UnsafePointer<LV2_Worker_Interface>
  let handle: LV2_Handle
  let stopping = Atomic<Bool>(false)
  private let scratch = UnsafeMutableRawPointer.allocate(
    byteCount: PluginWorker.maxMessageBytes, alignment: 16)

  init(
    requests: WorkerRing, responses: WorkerRing, wake: DispatchSemaphore,
    interface: UnsafePointer<LV2_Worker_Interface>, handle: LV2_Handle
  ) {
    self.requests = requests
    self.responses = responses
    self.wake = wake
    self.interface = interface
    self.handle = handle
  }

  deinit { scratch.deallocate() }

  /// Waits for a wake-up, then runs every queued request, until `stopping` is set.
  func run() {
    livemic_set_thread_name("livemic-lv2-wk")
    let respondHandle = Unmanaged.passUnretained(self).toOpaque()
    while true {
      wake.wait()
      if stopping.load(ordering: .acquiring) { return }
      while let size = requests.read(into: scratch) {
        _ = interface.pointee.work?(
          handle,
          { respondHandle, size, data in
            guard let respondHandle else { return LV2_WORKER_ERR_UNKNOWN }
            let thread = Unmanaged<WorkerThread>.fromOpaque(respondHandle).takeUnretainedValue()
            return thread.responses.write(size: size, data: data)
              ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
          }, respondHandle, size, scratch)
      }
    }
  }
}
