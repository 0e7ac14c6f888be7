import CJack
import Foundation
import Synchronization

/// A JACK client that registers its ports at once but activates only when told, as most JACK
/// clients do (register, then `jack_activate`): a generator output `out` and capture inputs
/// `in_1`…, recording what reaches them once active. jackd2 refuses to connect the ports of a
/// client that is not active yet.
final class LateClient: @unchecked Sendable {
  let handle: OpaquePointer
  let name: String
  let signal: TestSignal
  let sampleRate: Double
  private let outputPort: OpaquePointer
  private var inputPorts: [OpaquePointer] = []
  private let capacity: Int
  private var storage: [UnsafeMutablePointer<Float>] = []
  private let written = Atomic<Int>(0)
  private var active = false
  private var closed = false

  /// Opens the client and registers `out` and `in_1`…`in_N`; it does not activate.
  init(
    name: String, server: String, signal: TestSignal = .frameCode, captureChannels: Int = 2,
    seconds: Double = 10
  ) throws {
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open(name, JackNoStartServer, server, &status) else {
      throw HarnessError(
        "late client '\(name)' cannot open on server '\(server)' (status \(status.rawValue))")
    }
    handle = h
    self.name = String(cString: jack_get_client_name(h))
    self.signal = signal
    sampleRate = Double(jack_get_sample_rate(h))
    capacity = Int(seconds * sampleRate)
    guard
      let out = jack_port_register(h, "out", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
    else { throw HarnessError("late client '\(name)' cannot register its output") }
    outputPort = out
    for i in 0..<captureChannels {
      guard
        let port = jack_port_register(
          h, "in_\(i + 1)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
      else { throw HarnessError("late client '\(name)' cannot register input \(i + 1)") }
      inputPorts.append(port)
      let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
      buffer.initialize(repeating: 0, count: capacity)
      storage.append(buffer)
    }
    jack_set_process_callback(
      h,
      { frames, context in
        Unmanaged<LateClient>.fromOpaque(context!).takeUnretainedValue().process(frames)
      }, Unmanaged.passUnretained(self).toOpaque())
  }

  deinit {
    close()
    for s in storage { s.deallocate() }
  }

  /// Activates the client: from now on its ports can be connected and it runs.
  func activate() throws {
    guard jack_activate(handle) == 0 else { throw HarnessError("late client '\(name)' cannot activate") }
    active = true
  }

  /// Deactivates and closes the client (before the server stops). Safe to call twice.
  func close() {
    guard !closed else { return }
    closed = true
    if active { jack_deactivate(handle) }
    jack_client_close(handle)
  }

  private func process(_ frames: jack_nframes_t) -> Int32 {
    let t = jack_last_frame_time(handle)
    let n = Int(frames)
    if let out = jack_port_get_buffer(outputPort, frames) {
      let o = out.assumingMemoryBound(to: Float.self)
      for i in 0..<n { o[i] = signal.value(atFrame: t &+ UInt32(i), sampleRate: sampleRate) }
    }
    let w = written.load(ordering: .relaxed)
    if !inputPorts.isEmpty && w + n <= capacity {
      for c in 0..<inputPorts.count {
        let b = jack_port_get_buffer(inputPorts[c], frames)!.assumingMemoryBound(to: Float.self)
        (storage[c] + w).update(from: b, count: n)
      }
      written.store(w + n, ordering: .releasing)
    }
    return 0
  }

  /// Full names of the ports connected to `port` (any port on the server).
  func connections(of port: String) -> [String] {
    guard let p = jack_port_by_name(handle, port), let list = jack_port_get_all_connections(handle, p) else {
      return []
    }
    defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
    var names: [String] = []
    var i = 0
    while let c = list[i] {
      names.append(String(cString: c))
      i += 1
    }
    return names
  }

  /// Frames recorded so far.
  var frameCount: Int { written.load(ordering: .acquiring) }

  /// Waits until `frames` more frames are recorded and returns where they start.
  func record(frames: Int, timeout: Double = 10) throws -> Int {
    let start = frameCount
    guard waitUntil(seconds: timeout, { frameCount >= start + frames }) else {
      throw HarnessError("late client '\(name)' recorded only \(frameCount - start) of \(frames) frames")
    }
    return start
  }

  /// The samples of input `c` (0-based) recorded from `start` to `end`.
  func samples(channel c: Int, from start: Int, to end: Int) -> [Float] {
    let n = min(end, frameCount)
    guard start < n else { return [] }
    return Array(UnsafeBufferPointer(start: storage[c] + start, count: n - start))
  }
}
