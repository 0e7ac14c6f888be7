import CJack
import Foundation
import Synchronization

/// A JACK client that closes an acoustic loop around LiveMic, the room model of
/// Tests/DSPTests/FeedbackLoopTests.swift: what it hears on `in` (LiveMic's output) goes through
/// a loudspeaker band (high-pass 150 Hz, low-pass 6 kHz), four room/speaker/microphone
/// resonances, a soft saturation at full scale (`tanh`, the amplifier), a delay and a broadband
/// gain G, and is added to a source (speech) on `out` (LiveMic's input). It records what it
/// hears from the moment the source starts.
final class RoomClient: @unchecked Sendable {
  let handle: OpaquePointer
  let name: String
  private let input: OpaquePointer
  private let output: OpaquePointer
  private let source: UnsafeMutableBufferPointer<Float>
  private let recorded: UnsafeMutablePointer<Float>
  private let capacity: Int
  private let ringSize = 1 << 14
  private let ring: UnsafeMutablePointer<Float>
  /// Per section: b0, b1, b2, a1, a2, then its state x1, x2, y1, y2.
  private let sections: UnsafeMutablePointer<Float>
  private let sectionCount: Int
  private let delayFrames: Int
  private let gain: Float
  private var writeIndex = 0
  private let started = Atomic<Bool>(false)
  /// Source frames played (and output frames recorded) since `start`.
  let played = Atomic<Int>(0)
  let xruns = Atomic<Int>(0)

  /// The room's resonances, as in the offline loop test.
  static let resonances: [(hz: Double, gainDecibels: Double, q: Double)] = [
    (520, 9, 6), (1250, 11, 8), (2300, 10, 8), (3400, 8, 10),
  ]

  init(name: String, server: String, source: [Float], gainDecibels: Double, delayFrames: Int) throws {
    var status = jack_status_t(rawValue: 0)
    guard let h = livemic_client_open(name, JackNoStartServer, server, &status) else {
      throw HarnessError(
        "room client '\(name)' cannot open on server '\(server)' (status \(status.rawValue))")
    }
    handle = h
    self.name = String(cString: jack_get_client_name(h))
    let rate = Double(jack_get_sample_rate(h))
    self.source = .allocate(capacity: source.count)
    _ = self.source.initialize(from: source)
    capacity = source.count
    recorded = .allocate(capacity: capacity)
    recorded.initialize(repeating: 0, count: capacity)
    ring = .allocate(capacity: ringSize)
    ring.initialize(repeating: 0, count: ringSize)
    self.delayFrames = delayFrames
    gain = Float(pow(10, gainDecibels / 20))
    let coefficients =
      [Self.highPass(150, rate), Self.lowPass(6000, rate)]
      + Self.resonances.map { Self.peaking($0.hz, $0.q, $0.gainDecibels, rate) }
    sectionCount = coefficients.count
    sections = .allocate(capacity: 9 * sectionCount)
    sections.initialize(repeating: 0, count: 9 * sectionCount)
    for (s, c) in coefficients.enumerated() {
      for k in 0..<5 { sections[9 * s + k] = Float(c[k]) }
    }
    guard
      let input = jack_port_register(h, "in", "32 bit float mono audio", UInt(JackPortIsInput.rawValue), 0),
      let output = jack_port_register(h, "out", "32 bit float mono audio", UInt(JackPortIsOutput.rawValue), 0)
    else { throw HarnessError("room client '\(name)' cannot register its ports") }
    (self.input, self.output) = (input, output)
    jack_set_process_callback(
      h,
      { frames, context in
        guard let context else { return 0 }
        return Unmanaged<RoomClient>.fromOpaque(context).takeUnretainedValue().process(frames)
      }, Unmanaged.passUnretained(self).toOpaque())
    jack_set_xrun_callback(
      h,
      { context in
        guard let context else { return 0 }
        Unmanaged<RoomClient>.fromOpaque(context).takeUnretainedValue().xruns.add(1, ordering: .relaxed)
        return 0
      }, Unmanaged.passUnretained(self).toOpaque())
    guard jack_activate(h) == 0 else { throw HarnessError("room client '\(name)' cannot activate") }
  }

  deinit {
    close()
    source.deallocate()
    recorded.deallocate()
    ring.deallocate()
    sections.deallocate()
  }

  private var closed = false
  func close() {
    guard !closed else { return }
    closed = true
    jack_deactivate(handle)
    jack_client_close(handle)
  }

  func portName(_ short: String) -> String { "\(name):\(short)" }

  /// Starts the source (and the recording) at the next cycle.
  func start() { started.store(true, ordering: .releasing) }

  /// What the room heard from LiveMic since `start`, one sample per source frame.
  var recording: [Float] {
    Array(UnsafeBufferPointer(start: recorded, count: played.load(ordering: .acquiring)))
  }

  private func process(_ frames: jack_nframes_t) -> Int32 {
    let n = Int(frames)
    guard let xRaw = jack_port_get_buffer(input, frames), let yRaw = jack_port_get_buffer(output, frames)
    else {
      return 0
    }
    let (x, y) = (xRaw.assumingMemoryBound(to: Float.self), yRaw.assumingMemoryBound(to: Float.self))
    let running = started.load(ordering: .acquiring)
    var position = played.load(ordering: .relaxed)
    let mask = ringSize - 1
    for i in 0..<n {
      let heard = x[i].isFinite ? x[i] : 0
      var z = heard
      for s in 0..<sectionCount {
        let p = sections + 9 * s
        let out = p[0] * z + p[1] * p[5] + p[2] * p[6] - p[3] * p[7] - p[4] * p[8]
        (p[6], p[5], p[8], p[7]) = (p[5], z, p[7], out)
        z = out
      }
      ring[(writeIndex + delayFrames) & mask] = gain * tanhf(z)
      var dry: Float = 0
      if running && position < capacity {
        dry = source[position]
        recorded[position] = heard
        position += 1
      }
      y[i] = dry + ring[writeIndex & mask]
      ring[writeIndex & mask] = 0
      writeIndex += 1
    }
    played.store(position, ordering: .releasing)
    return 0
  }

  // RBJ cookbook biquads, normalized: [b0, b1, b2, a1, a2].
  static func highPass(_ hz: Double, _ rate: Double) -> [Double] {
    let w = 2 * Double.pi * hz / rate
    let (c, alpha) = (cos(w), sin(w) / (2 * 0.707))
    let a0 = 1 + alpha
    return [(1 + c) / 2 / a0, -(1 + c) / a0, (1 + c) / 2 / a0, -2 * c / a0, (1 - alpha) / a0]
  }

  static func lowPass(_ hz: Double, _ rate: Double) -> [Double] {
    let w = 2 * Double.pi * hz / rate
    let (c, alpha) = (cos(w), sin(w) / (2 * 0.707))
    let a0 = 1 + alpha
    return [(1 - c) / 2 / a0, (1 - c) / a0, (1 - c) / 2 / a0, -2 * c / a0, (1 - alpha) / a0]
  }

  static func peaking(_ hz: Double, _ q: Double, _ decibels: Double, _ rate: Double) -> [Double] {
    let a = pow(10, decibels / 40)
    let w = 2 * Double.pi * hz / rate
    let (c, alpha) = (cos(w), sin(w) / (2 * q))
    let a0 = 1 + alpha / a
    return [(1 + alpha * a) / a0, -2 * c / a0, (1 - alpha * a) / a0, -2 * c / a0, (1 - alpha / a) / a0]
  }
}
