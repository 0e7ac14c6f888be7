import CSndfile
import DSP
import Foundation
import LiveMicPresets
import Testing

@testable import LiveMicControl
@testable import LiveMicEngine

/// The recorder on its own: no session, no server. The test plays the audio thread, writing
/// cycles into the recorder's tap table by hand.
@Suite struct RecorderTests {
  static let host = Recorder.Host(name: "lmrectest", sampleRate: 48000)

  /// A recorder whose events are kept.
  static func recorder() throws -> (Recorder, Locked<[JSONObject]>) {
    let events = Locked<[JSONObject]>([])
    let stream = try EventStream(destination: nil)
    stream.listener = { _, object in events.withLock { $0.append(object) } }
    return (Recorder(options: RunOptions(), stream: stream, wake: DispatchSemaphore(value: 0)), events)
  }

  static func folder() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("lmrec-\(UUID().uuidString)")
      .path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// Writes `cycles` cycles of 64 frames of a 1 kHz sine (`amplitude`, the right channel
  /// inverted) into the output tap, as the audio thread.
  static func play(_ recorder: Recorder, cycles: Int, amplitude: Float = 0.25) {
    let left = UnsafeMutablePointer<Float>.allocate(capacity: 64)
    let right = UnsafeMutablePointer<Float>.allocate(capacity: 64)
    defer {
      left.deallocate()
      right.deallocate()
    }
    for c in 0..<cycles {
      for f in 0..<64 {
        left[f] = amplitude * sinf(2 * .pi * 1000 * Float(c * 64 + f) / 48000)
        right[f] = -left[f]
      }
      recorder.taps.write(.output, left: left, right: right, frames: 64)
      recorder.taps.finishCycle()
    }
  }

  @Test(
    "A recording started into a folder is named after the client and tap, gets every frame, and is reported")
  func recordsIntoAFolder() throws {
    let (recorder, events) = try Self.recorder()
    let folder = try Self.folder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let recording = try recorder.startRecording(
      tap: .output, format: .wav, path: folder + "/", origin: .control, client: Self.host)
    #expect((recording.path as NSString).lastPathComponent.hasPrefix("lmrectest-output-"))
    #expect(recording.path.hasSuffix(".wav"))
    let second = try recorder.startRecording(
      tap: .output, format: .wav, path: folder + "/", origin: .control, client: Self.host)
    #expect(second.path != recording.path, "two recordings in the same second share a name")
    #expect(recorder.tapStatus["recordings"]?.array?.count == 2)
    Self.play(recorder, cycles: 100)
    let summary = recorder.stopRecording(recording, audioRunning: false, reason: "test")
    recorder.stopRecording(second, audioRunning: false, reason: "test")
    #expect(summary["frames"]?.integer == 6400, "\(summary)")
    #expect(summary["dropped_frames"]?.integer == 0, "\(summary)")
    #expect(recorder.recordings.isEmpty)
    let size = try FileManager.default.attributesOfItem(atPath: recording.path)[.size] as? Int
    #expect(
      (size ?? 0) >= 44 + 6400 * 2 * 2, "a WAV of 6400 stereo frames, at least 16-bit: \(size ?? -1) bytes")
    let names = events.withLock { $0 }.compactMap { $0["event"]?.string }
    #expect(names == ["record-started", "record-started", "record-stopped", "record-stopped"], "\(names)")
  }

  @Test("A bad record request is refused in one sentence and starts nothing")
  func refusesBadRequests() throws {
    let (recorder, _) = try Self.recorder()
    #expect(throws: ControlError.self) {
      try recorder.record(["action": .string("start"), "tap": .string("x")], Self.host)
    }
    #expect(throws: ControlError.self) {
      try recorder.record(["action": .string("start"), "format": .string("aiff")], Self.host)
    }
    #expect(throws: ControlError.self) { try recorder.record(["action": .string("rewind")], Self.host) }
    #expect(recorder.recordings.isEmpty)
    #expect(try recorder.record([:], Self.host)["recordings"]?.array?.isEmpty == true)
  }

  /// `record stop` with an id no whole number can hold (a fuzzed control message once stopped
  /// LiveMic here: converting 1e23 to an integer traps) is refused in one sentence.
  @Test(
    "record stop with an id that is no whole number (1e23, -1e300, 1.5) is refused in one sentence",
    arguments: [1e23, -1e300, 1.5, 9.3e18])
  func refusesIdsNoIntegerHolds(_ id: Double) throws {
    let (recorder, _) = try Self.recorder()
    let pending = ControlServer.Pending([
      "cmd": .string("record"), "action": .string("stop"), "id": .number(id),
    ])
    recorder.startRecordStop(pending, audioRunning: false)
    let answer = pending.wait()
    #expect(answer.contains("\"ok\":false") && answer.contains("whole number"), "\(answer)")
  }

  @Test("The loudness meter measures what the output tap carries, and a reset starts over")
  func loudnessFollowsTheOutputTap() throws {
    let (recorder, events) = try Self.recorder()
    recorder.startLoudness(Self.host)
    defer { recorder.stopLoudness(audioRunning: false) }
    let meter = try #require(recorder.loudness)
    Self.play(recorder, cycles: 3000, amplitude: 0.1)  // 4 s
    let deadline = Date().addingTimeInterval(5)
    while meter.reading.integrated < -70 && Date() < deadline { usleep(20_000) }
    let status = try #require(recorder.loudnessStatus["loudness"]?.object)
    #expect(status["dropped_frames"]?.integer == 0, "\(status)")
    // A 1 kHz sine of amplitude 0.1 (-23 dBFS RMS) on both channels: about -20 LUFS.
    #expect(abs(meter.reading.integrated + 20) < 1.5, "\(status)")
    _ = try recorder.loudnessCommand(["action": .string("reset")])
    #expect(events.withLock { $0 }.contains { $0["event"]?.string == "loudness-reset" })
  }

  @Test(
    "A wav stream to a file is a 32-bit float stereo WAV at the client's rate that libsndfile reads, every frame in order"
  )
  func wavStreamReads() throws {
    let (recorder, events) = try Self.recorder()
    let folder = try Self.folder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/stream.wav"
    let stream = recorder.startStream(path: path, format: .wav, Self.host, origin: "test")
    let deadline = Date().addingTimeInterval(5)
    while !stream.attached.load(ordering: .acquiring) && Date() < deadline { usleep(5000) }
    let opened = stream.attached.load(ordering: .acquiring)
    #expect(opened, "the stream never opened its file")
    Self.play(recorder, cycles: 750)  // 1 s
    let summary = try #require(recorder.stopStream(audioRunning: false, reason: "test"))
    #expect(summary["frames"]?.integer == 48000 && summary["dropped_frames"]?.integer == 0, "\(summary)")
    #expect(events.withLock { $0 }.contains { $0["event"]?.string == "stream-stopped" })
    // The header's lengths say "unknown" (a stream has no end); libsndfile reads to the file's end.
    var info = SF_INFO()
    let file = try #require(sf_open(path, Int32(SFM_READ), &info), "libsndfile cannot open the stream")
    defer { sf_close(file) }
    #expect(info.channels == 2 && info.samplerate == 48000)
    #expect(
      info.format == Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT), "format 0x\(String(info.format, radix: 16))")
    var frames = [Float](repeating: 0, count: 2 * 50000)
    let read = Int(sf_readf_float(file, &frames, 50000))
    #expect(read == 48000, "\(read) frames read")
    // What `play` wrote: a 1 kHz sine of amplitude 0.25, the right channel inverted.
    let wrong = (0..<min(read, 48000)).filter { f in
      let x = 0.25 * sinf(2 * .pi * 1000 * Float(f) / 48000)
      return frames[2 * f] != x || frames[2 * f + 1] != -x
    }
    #expect(wrong.isEmpty, "\(wrong.count) frames differ, the first at \(wrong.first ?? -1)")
  }
}
