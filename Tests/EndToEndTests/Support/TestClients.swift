import CJack
import Foundation
import Synchronization

/// The signal a generator writes: a function of the absolute frame time, so a capture can tell
/// exactly which frame (and so which cycle) each sample came from.
enum TestSignal {
  /// A pseudo-random value per frame in [-0.5, 0.5), exactly representable (24-bit steps).
  case frameCode
  /// A sine.
  case sine(frequencyHz: Double, amplitude: Float)
  /// A sine for `onFrames`, then silence for `offFrames`, over and over (from frame time 0).
  case burst(frequencyHz: Double, amplitude: Float, onFrames: UInt32, offFrames: UInt32)
  /// A counter of the generator's own frames from `start` (not the server's frame time, which a
  /// restarted server begins anew): `(start + n) mod 2^23` in steps of 2^-23 around zero, exact
  /// in float and in 24-bit PCM, so a recording tells which frame each sample is
  /// (`counterFrame`) and a frame written twice shows as a step back.
  case counter(start: UInt32)

  /// The counter value a sample of `.counter` holds (nil for exact zero: no signal).
  static func counterFrame(_ sample: Float) -> Int? {
    sample == 0 ? nil : Int((Double(sample) * Double(1 << 23)).rounded()) + (1 << 22)
  }

  func value(atFrame t: UInt32, sampleRate: Double) -> Float {
    switch self {
    case .frameCode:
      var x = t &* 2_654_435_761
      x ^= x >> 15
      x = x &* 2_246_822_519
      x ^= x >> 13
      return Float(Int32(bitPattern: x) >> 8) / Float(1 << 24)
    case .sine(let f, let a):
      let phase = (Double(t).truncatingRemainder(dividingBy: sampleRate / f * 1000)) * f / sampleRate
      return a * Float(sin(2 * Double.pi * phase))
    case .burst(let f, let a, let on, let off):
      guard t % (on + off) < on else { return 0 }
      return TestSignal.sine(frequencyHz: f, amplitude: a).value(atFrame: t, sampleRate: sampleRate)
    case .counter(let start):
      return Float(Int32(bitPattern: (start &+ t) & 0x7F_FFFF) - (1 << 22)) / Float(1 << 23)
    }
  }
}

/// An in-process JACK client used by the tests: an optional generator output (`out`) and any
/// number of capture inputs (`in_1`…), recording every cycle's frame time and samples into
/// preallocated storage.
final class TestClient: @unchecked Sendable {
  let handle: OpaquePointer
  let name: String
  let signal: TestSignal?
  let sampleRate: Double
  private var outputPort: OpaquePointer?
  private var inputPorts: [OpaquePointer] = []
  /// The input ports and their storage, as pointers the process callback indexes (a debug
  /// build's array iteration allocates, and a malloc lock held by a preempted test thread would
  /// stall this real-time thread: the cycles lost under load were the test's own).
  private let inputPortList: UnsafeMutablePointer<OpaquePointer?>
  private let storageList: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
  private let inputCount: Int
  /// The three bytes of a control change, written by the process callback.
  private let midiBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 3)
  private let capacity: Int
  private var storage: [UnsafeMutablePointer<Float>] = []
  private let frameTimes: UnsafeMutablePointer<UInt32>
  private let written = Atomic<Int>(0)
  let cycles = Atomic<Int>(0)
  /// Xruns the server reported while this client was active (any client's).
  let xruns = Atomic<Int>(0)
  /// Cycles the server ran without this client: gaps in the frame times of its process calls
  /// (PipeWire's libjack reports no xrun for them).
  let missedCycles = Atomic<Int>(0)
  /// The frame time the next cycle should start at (the process thread's own).
  private var nextFrameTime: jack_nframes_t?
  /// Set to make the process callback sleep this long (µs) each cycle, to cause xruns.
  let sleepMicroseconds = Atomic<Int>(0)
  /// Set to hold the process callback in its cycle (polling every millisecond, at most 3 s)
  /// until cleared: every client downstream of this one (fed by it) waits for the cycle too,
  /// which is how a test stalls LiveMic's audio thread at a moment of its choosing.
  let hold = Atomic<Bool>(false)
  /// True while the process callback is held (`hold`).
  let held = Atomic<Bool>(false)

  /// A MIDI output port (`midi_out`) when the client was made with `midi: true`.
  private var midiPort: OpaquePointer?
  /// A three-byte message waiting to be sent: the frame offset in its cycle << 32 | status << 16 |
  /// data 1 << 8 | data 2; 0 for none.
  private let pendingMidi = Atomic<UInt64>(0)
  /// The frame time at which the last message went out (its cycle's plus its offset).
  private let sentMidiFrameTime = Atomic<UInt32>(0)

  /// Sends one control change from `midi_out` in the next cycle (channel 1–16).
  func sendControlChange(channel: Int, cc: Int, value: Int) {
    sendMidi(status: UInt8(0xB0 | (channel - 1)), UInt8(cc), UInt8(value))
  }

  /// Sends one three-byte message from `midi_out` in the next cycle, `offset` frames into it (less
  /// than the period); returns the frame time it went out at, nil when it was not sent in 2 s.
  @discardableResult
  func sendMidi(status: UInt8, _ data1: UInt8, _ data2: UInt8, offset: Int = 0) -> UInt32? {
    let message =
      UInt64(offset) << 32 | UInt64(status) << 16 | UInt64(data1 & 0x7F) << 8 | UInt64(data2 & 0x7F)
    pendingMidi.store(message, ordering: .releasing)
    guard waitUntil(seconds: 2, { pendingMidi.load(ordering: .acquiring) == 0 }) else { return nil }
    return sentMidiFrameTime.load(ordering: .acquiring)
  }

  /// Opens the client, registers its ports and, unless `activate` is false, activates it
  /// (`activate()` then does, as most JACK clients do: register, then activate; jackd2 refuses
  /// to connect the ports of a client that is not active yet).
  init(
    name: String, server: String, signal: TestSignal?, captureChannels: Int, seconds: Double = 12,
    midi: Bool = false, activate: Bool = true
  ) throws {
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open(name, JackNoStartServer, server, &status) else {
      throw HarnessError(
        "test client '\(name)' cannot open on server '\(server)' (status \(status.rawValue))")
    }
    handle = h
    self.name = String(cString: jack_get_client_name(h))
    self.signal = signal
    sampleRate = Double(jack_get_sample_rate(h))
    capacity = Int(seconds * sampleRate)
    frameTimes = .allocate(capacity: capacity)
    // Touched now, so the process thread never takes a page fault writing it.
    frameTimes.initialize(repeating: 0, count: capacity)
    if midi {
      midiPort = jack_port_register(h, "midi_out", "8 bit raw midi", UInt(JackPortIsOutput.rawValue), 0)
    }
    if signal != nil {
      outputPort = jack_port_register(h, "out", "32 bit float mono audio", UInt(JackPortIsOutput.rawValue), 0)
    }
    for i in 0..<captureChannels {
      guard
        let port = jack_port_register(
          h, "in_\(i + 1)", "32 bit float mono audio", UInt(JackPortIsInput.rawValue), 0)
      else { throw HarnessError("test client '\(name)' cannot register in_\(i + 1)") }
      inputPorts.append(port)
      let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
      buffer.initialize(repeating: 0, count: capacity)
      storage.append(buffer)
    }
    inputCount = captureChannels
    inputPortList = .allocate(capacity: max(captureChannels, 1))
    storageList = .allocate(capacity: max(captureChannels, 1))
    for i in 0..<captureChannels {
      inputPortList[i] = inputPorts[i]
      storageList[i] = storage[i]
    }
    jack_set_process_callback(
      h,
      { frames, context in
        guard let context else { return 0 }
        return Unmanaged<TestClient>.fromOpaque(context).takeUnretainedValue().process(frames)
      }, Unmanaged.passUnretained(self).toOpaque())
    jack_set_xrun_callback(
      h,
      { context in
        guard let context else { return 0 }
        Unmanaged<TestClient>.fromOpaque(context).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
        return 0
      }, Unmanaged.passUnretained(self).toOpaque())
    if activate { try self.activate() }
  }

  /// Activates the client: from now on it runs and its ports can be connected.
  func activate() throws {
    guard jack_activate(handle) == 0 else { throw HarnessError("test client '\(name)' cannot activate") }
  }

  deinit {
    close()
    frameTimes.deallocate()
    for s in storage { s.deallocate() }
    inputPortList.deallocate()
    storageList.deallocate()
    midiBytes.deallocate()
  }

  private var closed = false
  /// Frames this client has generated (the process callback's own count, for `.counter`).
  private var ownFrames: UInt32 = 0
  /// Forgets a client whose server was killed under it, without calling libjack (jackd2's
  /// libjack crashes deactivating a client of a dead server); its memory is left to the process.
  func abandon() { closed = true }

  func close() {
    guard !closed else { return }
    closed = true
    jack_deactivate(handle)
    jack_client_close(handle)
  }

  private func process(_ frames: jack_nframes_t) -> Int32 {
    let t = jack_last_frame_time(handle)
    let n = Int(frames)
    if let expected = nextFrameTime, t != expected { missedCycles.add(1, ordering: .relaxed) }
    nextFrameTime = t &+ frames
    if let midiPort, let buffer = jack_port_get_buffer(midiPort, frames) {
      jack_midi_clear_buffer(buffer)
      // Cleared only once sent, so `sendMidi` reads this message's frame time (it waits for the
      // clear before it sends another).
      let message = pendingMidi.load(ordering: .acquiring)
      if message != 0 {
        midiBytes[0] = UInt8(message >> 16 & 0xFF)
        midiBytes[1] = UInt8(message >> 8 & 0x7F)
        midiBytes[2] = UInt8(message & 0x7F)
        let offset = min(UInt32(truncatingIfNeeded: message >> 32), frames &- 1)
        _ = jack_midi_event_write(buffer, offset, midiBytes, 3)
        sentMidiFrameTime.store(t &+ offset, ordering: .releasing)
        pendingMidi.store(0, ordering: .releasing)
      }
    }
    if let outputPort, let signal, let out = jack_port_get_buffer(outputPort, frames) {
      let o = out.assumingMemoryBound(to: Float.self)
      // A counter counts the generator's own frames; every other signal follows the frame time.
      let base: UInt32
      if case .counter = signal { base = ownFrames } else { base = t }
      for i in 0..<n { o[i] = signal.value(atFrame: base &+ UInt32(i), sampleRate: sampleRate) }
      ownFrames &+= frames
    }
    let w = written.load(ordering: .relaxed)
    if inputCount > 0 && w + n <= capacity {
      for c in 0..<inputCount {
        guard let b = jack_port_get_buffer(inputPortList[c], frames), let s = storageList[c] else { continue }
        (s + w).update(from: b.assumingMemoryBound(to: Float.self), count: n)
      }
      for i in 0..<n { frameTimes[w + i] = t &+ UInt32(i) }
      written.store(w + n, ordering: .releasing)
    }
    let sleep = sleepMicroseconds.load(ordering: .relaxed)
    if sleep > 0 { usleep(UInt32(sleep)) }
    if hold.load(ordering: .acquiring) {
      held.store(true, ordering: .releasing)
      var waited = 0
      while hold.load(ordering: .acquiring) && waited < 3000 {
        usleep(1000)
        waited += 1
      }
      held.store(false, ordering: .releasing)
    }
    cycles.add(1, ordering: .relaxed)
    return 0
  }

  func portName(_ short: String) -> String { "\(name):\(short)" }

  func connect(_ source: String, _ destination: String) throws {
    let code = jack_connect(handle, source, destination)
    guard code == 0 || code == EEXIST else {
      throw HarnessError("cannot connect \(source) → \(destination) (\(code))")
    }
  }

  /// Disconnects `source` from `destination` (a missing connection is fine).
  func disconnect(_ source: String, _ destination: String) {
    _ = jack_disconnect(handle, source, destination)
  }

  /// Full names of the ports connected to `port`.
  func connections(of port: String) -> [String] {
    guard let p = jack_port_by_name(handle, port), let list = jack_port_get_all_connections(handle, p) else {
      return []
    }
    defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
    var names: [String] = []
    var i = 0
    while let c = list[i] { names.append(String(cString: c)); i += 1 }
    return names
  }

  /// The JACK pretty-name metadata of a port, if it has one.
  func prettyName(of port: String) -> String? {
    guard let p = jack_port_by_name(handle, port) else { return nil }
    var value: UnsafeMutablePointer<CChar>?
    var type: UnsafeMutablePointer<CChar>?
    guard jack_get_property(jack_port_uuid(p), livemic_pretty_name_key(), &value, &type) == 0, let value
    else { return nil }
    defer {
      jack_free(value)
      if let type { jack_free(type) }
    }
    return String(cString: value)
  }

  /// The pretty-name of `port` once it is `expected` (within `seconds`), else what a client
  /// opened now sees on PipeWire (else what this one sees). A running client of PipeWire's
  /// libjack (0.3.65) has been seen to lack a name the daemon held (`pw-metadata`); a new
  /// client's bind receives everything the server holds, so that second look tells whether
  /// LiveMic set the name on the server.
  func prettyNameOnServer(of port: String, expected: String, server: String, seconds: Double = 5) -> String? {
    if waitUntil(seconds: seconds, { prettyName(of: port) == expected }) { return expected }
    guard TestBackend.isPipeWire,
      let fresh = try? TestClient(name: "lmfresh", server: server, signal: nil, captureChannels: 0)
    else { return prettyName(of: port) }
    defer { fresh.close() }
    return fresh.prettyName(of: port)
  }

  func portExists(_ port: String) -> Bool { jack_port_by_name(handle, port) != nil }

  /// Latency range of any port on the server.
  func latency(of port: String, capture: Bool) -> (min: UInt32, max: UInt32) {
    guard let p = jack_port_by_name(handle, port) else { return (0, 0) }
    var r = jack_latency_range_t()
    jack_port_get_latency_range(p, capture ? JackCaptureLatency : JackPlaybackLatency, &r)
    return (r.min, r.max)
  }

  func setBufferSize(_ frames: Int) -> Int32 { jack_set_buffer_size(handle, jack_nframes_t(frames)) }

  /// Frames recorded so far.
  var frameCount: Int { written.load(ordering: .acquiring) }

  /// Waits until `frames` more frames have been recorded.
  func record(frames: Int, timeout: Double = 20) throws {
    let target = frameCount + frames
    guard waitUntil(seconds: timeout, { frameCount >= target }) else {
      throw HarnessError("capture '\(name)' recorded only \(frameCount) of \(target) frames")
    }
  }

  /// Cycles this client missed while recording: jumps in the recorded frame times. On jackd each
  /// is also an xrun; PipeWire reports none.
  var frameTimeGaps: Int { frameTimeGaps(from: 0, to: frameCount) }

  /// The jumps in the recorded frame times between frames `start` and `end` (counting a jump
  /// into `start`).
  func frameTimeGaps(from start: Int, to end: Int) -> Int {
    let end = min(end, frameCount)
    var gaps = 0
    for i in max(start, 1)..<max(end, max(start, 1)) where frameTimes[i] != frameTimes[i - 1] &+ 1 {
      gaps += 1
    }
    return gaps
  }

  /// Records `frames` more frames in a window the server did not spoil (`recordWithoutXrun`)
  /// and returns the samples of `channels` over it, all read to one end frame.
  func take(frames: Int, channels: [Int]) throws -> [[Float]] {
    let start = try recordWithoutXrun(frames: frames)
    let end = frameCount
    return channels.map { recording(channel: $0, from: start, to: end).samples }
  }

  /// The recorded samples of channel `c` and their frame times, from `start` to `end` (by
  /// default, what is recorded now). The client goes on recording, so channels that are compared
  /// must be read with one `end` (`frameCount` taken once), or their lengths may differ.
  func recording(channel c: Int, from start: Int = 0, to end: Int? = nil) -> (
    times: [UInt32], samples: [Float]
  ) {
    let n = min(end ?? frameCount, frameCount)
    guard start < n else { return ([], []) }
    return (
      Array(UnsafeBufferPointer(start: frameTimes + start, count: n - start)),
      Array(UnsafeBufferPointer(start: storage[c] + start, count: n - start))
    )
  }
}

/// Root mean square.
func rms(_ x: ArraySlice<Float>) -> Double {
  guard !x.isEmpty else { return 0 }
  return (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
}

extension TestClient {
  /// Records `frames` more frames and returns where they start; a window the server spoilt (a
  /// gap in this client's frame times, an xrun it reported) is recorded again (`retaking`).
  func recordWithoutXrun(frames: Int) throws -> Int {
    let witness = Witness(capture: self)
    return try retaking("a window of \(frames) frames") {
      let mark = witness.mark()
      try record(frames: frames)
      return Take(mark.frame, spoilt: witness.evidence(since: mark, to: frameCount))
    }
  }
}
