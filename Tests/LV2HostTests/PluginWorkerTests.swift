import CLilv
import Foundation
import Synchronization
import Testing

@testable import LV2Host

/// A stand-in plugin with the worker interface: `work` (worker thread) echoes each request as
/// its response; `work_response` (the audio-thread stand-in) checks the responses arrive whole
/// and in order.
final class EchoPlugin: @unchecked Sendable {
  let messages = NumberedMessages(maxBytes: PluginWorker.maxMessageBytes)
  /// Audio-thread state.
  var responses = 0
  var endRuns = 0
  var failure: String?
  /// Worker-thread state.
  var works = 0

  let interface = UnsafeMutablePointer<LV2_Worker_Interface>.allocate(capacity: 1)

  deinit {
    messages.deallocate()
    interface.deallocate()
  }

  init() {
    interface.initialize(
      to: LV2_Worker_Interface(
        work: { handle, respond, respondHandle, size, data in
          guard let handle, let respond else { return LV2_WORKER_ERR_UNKNOWN }
          let plugin = Unmanaged<EchoPlugin>.fromOpaque(handle).takeUnretainedValue()
          plugin.works += 1
          // The response ring can be full while the audio thread is behind: retry.
          while respond(respondHandle, size, data) != LV2_WORKER_SUCCESS { sched_yield() }
          return LV2_WORKER_SUCCESS
        },
        work_response: { handle, size, data in
          guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
          let plugin = Unmanaged<EchoPlugin>.fromOpaque(handle).takeUnretainedValue()
          let n = plugin.responses
          if plugin.failure == nil && !(data.map { plugin.messages.matches($0, size: Int(size), n) } ?? false)
          {
            plugin.failure = "response \(n) torn or out of order: \(size) bytes"
          }
          plugin.responses += 1
          return LV2_WORKER_SUCCESS
        },
        end_run: { handle in
          guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
          Unmanaged<EchoPlugin>.fromOpaque(handle).takeUnretainedValue().endRuns += 1
          return LV2_WORKER_SUCCESS
        }))
  }
}

extension LV2HostStressTests {
  @Suite struct PluginWorkerTests {
    static let count = Stress.count(200_000, sanitized: 50_000)

    @Test("requests scheduled on one thread are worked and answered whole, in order; stop joins")
    func echo() {
      let plugin = EchoPlugin()
      let handle = Unmanaged.passUnretained(plugin).toOpaque()
      let worker = PluginWorker()
      #expect(worker.start(interface: plugin.interface, handle: handle))
      let count = Self.count
      let audio: @Sendable () -> Void = {
        let staging = UnsafeMutableRawPointer.allocate(byteCount: PluginWorker.maxMessageBytes, alignment: 16)
        defer { staging.deallocate() }
        var deadline = Stress.now() + 10
        var n = 0
        while plugin.responses < count && Stress.now() < deadline {
          // Like a process cycle: schedule a few requests, then deliver what has come back.
          for _ in 0..<4 where n < count {
            let size = plugin.messages.fill(staging, n)
            guard worker.schedule(size: UInt32(size), data: staging) == LV2_WORKER_SUCCESS else { break }
            n += 1
            deadline = Stress.now() + 10
          }
          worker.deliverResponses()
        }
      }
      Stress.run([audio])
      worker.stop()
      #expect(plugin.failure == nil)
      #expect(plugin.responses == count)
      #expect(plugin.works == count)
      #expect(plugin.endRuns > 0)
      worker.stop()  // a second stop is a no-op
    }

    @Test(
      "a worker that was never started stops at once; one dropped while running is freed, its thread joined")
    func lifecycle() {
      let idle = PluginWorker()
      idle.stop()
      for round in 0..<50 {
        let plugin = EchoPlugin()
        weak var dropped: PluginWorker?
        do {
          let worker = PluginWorker()
          #expect(
            worker.start(interface: plugin.interface, handle: Unmanaged.passUnretained(plugin).toOpaque()))
          dropped = worker
          if round % 2 == 0 { _ = worker.schedule(size: 0, data: nil) }
        }
        // The worker thread holds no reference to the worker: the last release runs deinit,
        // which stops and joins the thread (so the plugin's counters are safe to read).
        #expect(dropped == nil)
        #expect(plugin.works <= 1)
      }
    }
  }
}
