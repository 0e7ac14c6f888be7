import Dispatch
import Foundation
import LiveMicEngine
import LiveMicOffline
import LiveMicPresets

/// The session's tap consumers and their state: the recordings, the output stream and the
/// loudness meter. Started from the command line (`--record`, `--autorecord`, `--stream-out`) or
/// the control socket (`record`), fed by the tap table (which outlives every client), and
/// watched by the supervisor at every wake (see docs/recording.md). It needs no JACK client:
/// the client's name and rate come in as a `Host`.
///
/// Thread: the supervisor.
final class Recorder {
  /// The client the taps belong to: its name (in recording file names) and its sample rate.
  struct Host {
    var name: String
    var sampleRate: Int
  }

  /// Seconds each recording's ring holds (rounded up to a power of two by libjack).
  static let recordingRingSeconds = 3.0

  /// The tap consumers' table, shared by every client the session opens.
  let taps = TapTable()
  /// How often the tap consumers' threads look into their rings (faster while JACK freewheels).
  let writerPace = WriterPace()
  /// The recordings running.
  private(set) var recordings: [Recording] = []
  /// Recordings stopped and still finalizing their files, answered when done.
  private var finishing: [FinishingRecordings] = []
  private var nextRecordingId = 1
  /// The `--stream-out` consumer, while it runs.
  var streamOut: StreamOut?
  /// The stream's openings and closings already reported (`stream-opened`, `stream-closed`).
  var streamReported: (openings: UInt64, closings: UInt64) = (0, 0)
  /// The EBU R128 loudness meter on the output tap (always on, unless it could not start).
  var loudness: LoudnessMeter?

  /// The command line's recording folders, format and stream.
  private let options: RunOptions
  /// Where `record-*`, `stream-*`, `freewheel` and `loudness-reset` events go.
  let stream: EventStream
  /// Woken by the writers when they fail.
  let wake: DispatchSemaphore

  init(options: RunOptions, stream: EventStream, wake: DispatchSemaphore) {
    self.options = options
    self.stream = stream
    self.wake = wake
  }

  /// Starts what the command line asks for, once the first client runs.
  func startTapConsumers(_ client: Host) {
    startLoudness(client)
    if let folder = options.recordDirectory {
      startLogged(.output, options.recordFormat, folder, .record, client)
    }
    if let folder = options.autorecordDirectory {
      startLogged(.output, options.recordFormat, folder, .autorecord, client)
    }
    if let path = options.streamOut {
      startStream(path: path, format: options.streamWavHeader ? .wav : .f32, client, origin: "command line")
    }
  }

  /// Starts a recording and reports a failure (log and event) instead of throwing.
  private func startLogged(
    _ tap: Tap, _ format: RecordingFormat, _ folder: String, _ origin: Recording.Origin, _ client: Host
  ) {
    do {
      _ = try startRecording(tap: tap, format: format, path: folder + "/", origin: origin, client: client)
    } catch {
      Log.error(error.description)
      stream.emit("record-failed", ["path": .string(folder), "error": .string(error.description)])
    }
  }

  /// The file a recording goes to: `PATH` itself, or, when PATH is a folder (existing, or
  /// ending in `/`), `CLIENT-TAP-YYYYMMDD-HHMMSS.EXT` in it (with `-2`, `-3`… when taken).
  func recordingPath(_ path: String, tap: Tap, format: RecordingFormat, client: Host) -> String {
    var isFolder: ObjCBool = false
    let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
    guard path.hasSuffix("/") || (exists && isFolder.boolValue) else { return path }
    let stamp = DateFormatter()
    stamp.dateFormat = "yyyyMMdd-HHmmss"
    let base = (path as NSString).appendingPathComponent(
      "\(client.name)-\(tap.name)-\(stamp.string(from: Date()))")
    var candidate = base + "." + format.rawValue
    var n = 2
    while FileManager.default.fileExists(atPath: candidate)
      || recordings.contains(where: { $0.path == candidate })
    {
      candidate = base + "-\(n)." + format.rawValue
      n += 1
    }
    return candidate
  }

  /// Opens the file, starts the writer and attaches its consumer; reports `record-started`.
  func startRecording(
    tap: Tap, format: RecordingFormat, path: String, origin: Recording.Origin, client: Host
  ) throws(TapWriterError) -> Recording {
    let file = recordingPath(path, tap: tap, format: format, client: client)
    let recording = try Recording(
      id: nextRecordingId, path: file, tap: tap, format: format, origin: origin,
      sampleRate: client.sampleRate, ringSeconds: Self.recordingRingSeconds, wake: wake,
      pace: writerPace)
    guard taps.attach(recording.consumer) else {
      recording.finish()
      try? FileManager.default.removeItem(atPath: file)
      throw TapWriterError("cannot record '\(file)': all \(TapTable.slotCount) tap slots are taken")
    }
    if writerPace.isFreewheeling { sizeRing(recording.consumer, freewheeling: true) }
    nextRecordingId += 1
    recordings.append(recording)
    Log.info("recording \(recording.id) started: the \(tap.name) tap (\(format.rawValue)) to '\(file)'")
    stream.emit(
      "record-started",
      [
        "id": .int(recording.id), "path": .string(file), "tap": .string(tap.name),
        "format": .string(format.rawValue), "origin": .string(origin.rawValue),
      ])
    return recording
  }

  /// Detaches, drains and finalizes a recording, waiting for its writer (on stop, and for a
  /// failed writer, which has ended already); reports it and returns its summary.
  @discardableResult
  func stopRecording(_ recording: Recording, audioRunning: Bool, reason: String) -> JSONObject {
    taps.detach(recording.consumer, audioRunning: audioRunning)
    recording.finish()
    recordings.removeAll { $0 === recording }
    return reportStopped(recording, reason: reason)
  }

  /// Detaches `chosen` and asks their writers to drain and finalize, without waiting: the
  /// supervisor answers requests meanwhile, and `pollFinishingRecordings` reports each (and
  /// answers `pending` with their summaries) once every one has finished.
  func beginStopping(
    _ chosen: [Recording], audioRunning: Bool, reason: String, answering pending: ControlServer.Pending?
  ) {
    for recording in chosen {
      taps.detach(recording.consumer, audioRunning: audioRunning)
      recording.requestStop()
    }
    recordings.removeAll { r in chosen.contains { $0 === r } }
    finishing.append(
      FinishingRecordings(
        recordings: chosen, reason: reason, pending: pending, deadline: .now() + .seconds(10)))
  }

  /// Reports the recordings whose writers have finished (or whose 10 s are over) and answers
  /// the `record stop` that waited for them.
  func pollFinishingRecordings() {
    guard !finishing.isEmpty else { return }
    let now = DispatchTime.now()
    var still: [FinishingRecordings] = []
    for group in finishing {
      guard group.recordings.allSatisfy(\.isFinished) || now >= group.deadline else {
        still.append(group)
        continue
      }
      for r in group.recordings where !r.isFinished {
        Log.error("recording \(r.id) did not finish writing '\(r.path)' within 10 s; it goes on alone")
      }
      let summaries = group.recordings.map { reportStopped($0, reason: group.reason) }
      group.pending?.answer(ControlServer.answer(["stopped": .array(summaries.map(JSONValue.object))]))
    }
    finishing = still
  }

  /// The earliest deadline of the recordings finishing (nil: none).
  var nextFinishingDeadline: DispatchTime? { finishing.map(\.deadline).min() }

  /// Logs and emits `record-stopped` for a recording that was stopped (`record-failed` when the
  /// writer had a fault, `recording-empty` when no audio reached it and its file was removed);
  /// returns its summary.
  private func reportStopped(_ recording: Recording, reason: String) -> JSONObject {
    let frames = recording.writtenFrames.load(ordering: .acquiring)
    let dropped = Int(recording.consumer.droppedFrames.load(ordering: .relaxed))
    if let failure = recording.failed {
      let removed = recording.removedEmpty ? "; no audio had reached it, so the file was removed" : ""
      Log.error(failure + removed)
      stream.emit(
        "record-failed",
        [
          "id": .int(recording.id), "path": .string(recording.path), "error": .string(failure),
          "frames": .int(Int(frames)), "removed": .bool(recording.removedEmpty),
        ])
    } else if recording.removedEmpty {
      Log.info(
        "recording \(recording.id) stopped (\(reason)) before any audio reached it: '\(recording.path)' removed"
      )
      stream.emit(
        "recording-empty",
        ["id": .int(recording.id), "path": .string(recording.path), "reason": .string(reason)])
    } else {
      Log.info(
        "recording \(recording.id) stopped (\(reason)): \(frames) frames ("
          + String(format: "%.1f", recording.seconds) + " s), \(dropped) dropped, '\(recording.path)'")
      stream.emit(
        "record-stopped",
        [
          "id": .int(recording.id), "path": .string(recording.path), "frames": .int(Int(frames)),
          "dropped_frames": .int(dropped), "reason": .string(reason),
        ])
    }
    return summary(recording)
  }

  /// A recording's fields in `status` and `record` answers.
  func summary(_ r: Recording) -> JSONObject {
    [
      "id": .int(r.id), "path": .string(r.path), "tap": .string(r.tap.name),
      "format": .string(r.format.rawValue),
      "origin": .string(r.origin.rawValue), "frames": .int(r.writtenFrames.load(ordering: .relaxed)),
      "seconds": .number((r.seconds * 10).rounded() / 10),
      "dropped_frames": .int(r.consumer.droppedFrames.load(ordering: .relaxed)),
      "removed": .bool(r.removedEmpty),
    ]
  }

  /// The recordings and the stream, for `status`.
  var tapStatus: JSONObject {
    var fields: JSONObject = ["recordings": .array(recordings.map { .object(summary($0)) })]
    if let s = streamOut { fields["stream"] = .object(streamSummary(s)) }
    return fields
  }

  /// Called at every wake: stops the recordings and the stream whose writer failed (a full
  /// disk, a write error, a reader gone), reporting each in one sentence; audio goes on.
  func superviseTapConsumers(audioRunning: Bool) {
    for recording in recordings where recording.failed != nil {
      stopRecording(recording, audioRunning: audioRunning, reason: "failed")
    }
    superviseStream(audioRunning: audioRunning)
  }

  /// After a reconnection: `--autorecord` starts a new file for the new session, and a
  /// recording whose sample rate no longer matches is closed (and, for `--record`, continued in a
  /// new file).
  func restartRecordings(after client: Host) {
    let rate = client.sampleRate
    loudness?.follow(sampleRate: rate)
    for recording in recordings where recording.origin == .autorecord || recording.sampleRate != rate {
      let reason = recording.origin == .autorecord ? "new session" : "the sample rate changed to \(rate) Hz"
      beginStopping([recording], audioRunning: true, reason: reason, answering: nil)
      guard recording.origin != .control else { continue }
      let folder = (recording.path as NSString).deletingLastPathComponent
      startLogged(recording.tap, recording.format, folder, recording.origin, client)
    }
  }

  /// Finalizes every recording and closes the stream (on stop; the audio is no longer running).
  func stopAllTapConsumers() {
    stopLoudness(audioRunning: false)
    for recording in recordings { stopRecording(recording, audioRunning: false, reason: "stop") }
    for group in finishing {
      for r in group.recordings { r.finish() }
    }
    pollFinishingRecordings()
    stopStream(audioRunning: false, reason: "stop")
  }

  /// `record stop` (`{"cmd":"record","action":"stop","id":N}`, no id: all): the recordings are
  /// detached at once and `pending` is answered once their files are finalized
  /// (`pollFinishingRecordings`); a bad id is answered at once.
  func startRecordStop(_ pending: ControlServer.Pending, audioRunning: Bool) {
    var chosen = recordings
    if let raw = pending.request["id"] {
      guard let id = raw.integer else {
        return pending.answer(ControlServer.error("\"id\" must be a whole number"))
      }
      chosen = recordings.filter { $0.id == id }
      guard !chosen.isEmpty else { return pending.answer(ControlServer.error("no recording has id \(id)")) }
    }
    guard !chosen.isEmpty else {
      return pending.answer(ControlServer.answer(["stopped": []]))
    }
    beginStopping(chosen, audioRunning: audioRunning, reason: "control", answering: pending)
  }

  /// The `record` command: `{"cmd":"record","action":"start","tap":…,"format":…,"path":…}`,
  /// `{"cmd":"record"}` (list); `stop` is `startRecordStop`.
  func record(_ request: JSONObject, _ client: Host) throws(ControlError) -> JSONObject {
    let name = try request.text("action", or: ControlProtocol.RecordAction.list.rawValue)
    switch ControlProtocol.RecordAction(rawValue: name) {
    case .list:
      return tapStatus
    case .start:
      let tapName = try request.text("tap", or: "output")
      guard let tap = Tap(name: tapName) else {
        throw ControlError("tap '\(tapName)' is not one of input, output")
      }
      var path = try request.text("path", or: "")
      if path.isEmpty {
        path =
          (options.recordDirectory ?? options.autorecordDirectory ?? FileManager.default.currentDirectoryPath)
          + "/"
      }
      let format: RecordingFormat
      if let name = try request.text("format", or: "").nilIfEmpty {
        guard let f = RecordingFormat(rawValue: name) else {
          throw ControlError("format '\(name)' is not one of wav, flac, ogg, mp3")
        }
        format = f
      } else {
        format = RecordingFormat(pathExtension: (path as NSString).pathExtension) ?? .wav
      }
      do {
        let recording = try startRecording(
          tap: tap, format: format, path: path, origin: .control, client: client)
        return summary(recording)
      } catch {
        Log.error(error.description)
        stream.emit("record-failed", ["path": .string(path), "error": .string(error.description)])
        throw ControlError(error)
      }
    case .stop, nil:  // a stop is answered by `startRecordStop`, before this
      throw ControlError("unknown record action '\(name)' (start, stop, list)")
    }
  }
}

/// Recordings stopped together (one `record stop`, or a new session's autorecording) whose
/// writers are finalizing their files; `pending` is answered when every one has finished.
struct FinishingRecordings {
  let recordings: [Recording]
  let reason: String
  let pending: ControlServer.Pending?
  let deadline: DispatchTime
}

/// The loudness meter: started with the first client, kept across reconnections, reset by the
/// `loudness` command. Thread: the supervisor.
extension Recorder {
  /// Starts the loudness meter and attaches it to the output tap; a failure is logged and the
  /// session runs without it.
  func startLoudness(_ client: Host) {
    guard loudness == nil else { return }
    do {
      let meter = try LoudnessMeter(sampleRate: client.sampleRate, pace: writerPace)
      guard taps.attach(meter.consumer) else {
        meter.finish()
        Log.error("the loudness meter cannot start: all \(TapTable.slotCount) tap slots are taken")
        return
      }
      loudness = meter
    } catch {
      Log.error("the loudness meter cannot start: \(error.description)")
    }
  }

  /// Detaches and ends the loudness meter.
  func stopLoudness(audioRunning: Bool) {
    guard let meter = loudness else { return }
    taps.detach(meter.consumer, audioRunning: audioRunning)
    meter.finish()
    loudness = nil
  }

  /// The `loudness` object of `status`.
  var loudnessStatus: JSONObject {
    guard let meter = loudness, var fields = meter.reading.json.object else { return [:] }
    fields["dropped_frames"] = .int(meter.consumer.droppedFrames.load(ordering: .relaxed))
    return ["loudness": .object(fields)]
  }

  /// The `loudness` command: `{"cmd":"loudness"}` (the figures) or
  /// `{"cmd":"loudness","action":"reset"}` (start integrated loudness, range and true peak over).
  func loudnessCommand(_ request: JSONObject) throws(ControlError) -> JSONObject {
    guard let meter = loudness else { throw ControlError("the loudness meter is not running") }
    let name = try request.text("action", or: ControlProtocol.LoudnessAction.show.rawValue)
    switch ControlProtocol.LoudnessAction(rawValue: name) {
    case .show:
      return ["loudness": meter.reading.json]
    case .reset:
      meter.reset()
      Log.info("loudness measurement reset (control)")
      stream.emit("loudness-reset", [:])
      return ["loudness": LoudnessReading().json, "reset": true]
    case nil:
      throw ControlError("unknown loudness action '\(name)' (show, reset)")
    }
  }
}
