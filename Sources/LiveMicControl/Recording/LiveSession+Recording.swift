import Foundation
import LiveMicEngine
import LiveMicPresets

/// Recordings and the output stream: started from the command line (`--record`,
/// `--autorecord`, `--stream-out`) or the control socket (`record`), fed by the tap table, and
/// watched by the supervisor (see docs/recording.md). Thread: the supervisor.
extension LiveSession {
  /// Seconds each recording's ring holds (rounded up to a power of two by libjack).
  static let recordingRingSeconds = 3.0

  /// Starts what the command line asks for, once the first client runs.
  func startTapConsumers(_ client: JackClient) {
    startLoudness(client)
    if let folder = options.recordDirectory {
      startLogged(.output, options.recordFormat, folder, .record, client)
    }
    if let folder = options.autorecordDirectory {
      startLogged(.output, options.recordFormat, folder, .autorecord, client)
    }
    if let path = options.streamOut {
      let stream = StreamOut(
        path: path, format: options.streamWavHeader ? .wav : .f32, sampleRate: Int(client.sampleRate),
        table: taps, wake: wake, pace: writerPace)
      streamOut = stream
      Log.info(
        "streaming the output tap (\(stream.format.rawValue)) to \(stream.label)"
          + (path == "-" ? "" : " once it can be opened"))
    }
  }

  /// Starts a recording and reports a failure (log and event) instead of throwing.
  private func startLogged(
    _ tap: Tap, _ format: RecordingFormat, _ folder: String, _ origin: Recording.Origin, _ client: JackClient
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
  func recordingPath(_ path: String, tap: Tap, format: RecordingFormat, client: JackClient) -> String {
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
    tap: Tap, format: RecordingFormat, path: String, origin: Recording.Origin, client: JackClient
  ) throws(TapWriterError) -> Recording {
    let file = recordingPath(path, tap: tap, format: format, client: client)
    let recording = try Recording(
      id: nextRecordingId, path: file, tap: tap, format: format, origin: origin,
      sampleRate: Int(client.sampleRate), ringSeconds: Self.recordingRingSeconds, wake: wake,
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
  func stopRecording(_ recording: Recording, audioRunning: Bool, reason: String) -> [String: Any] {
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
      group.pending?.answer(Self.encode(["ok": true, "stopped": summaries]))
    }
    finishing = still
  }

  /// The earliest deadline of the recordings finishing (nil: none).
  var nextFinishingDeadline: DispatchTime? { finishing.map(\.deadline).min() }

  /// Logs and emits `record-stopped` (or `record-failed` when the writer failed) for a
  /// recording that was stopped; returns its summary.
  private func reportStopped(_ recording: Recording, reason: String) -> [String: Any] {
    let frames = recording.writtenFrames.load(ordering: .acquiring)
    let dropped = Int(recording.consumer.droppedFrames.load(ordering: .relaxed))
    if let failure = recording.failed {
      Log.error(failure)
      stream.emit(
        "record-failed",
        ["id": .int(recording.id), "path": .string(recording.path), "error": .string(failure)])
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
  func summary(_ r: Recording) -> [String: Any] {
    [
      "id": r.id, "path": r.path, "tap": r.tap.name, "format": r.format.rawValue, "origin": r.origin.rawValue,
      "frames": Int(r.writtenFrames.load(ordering: .relaxed)), "seconds": (r.seconds * 10).rounded() / 10,
      "dropped_frames": Int(r.consumer.droppedFrames.load(ordering: .relaxed)),
    ]
  }

  /// The recordings and the stream, for `status`.
  var tapStatus: [String: Any] {
    var fields: [String: Any] = ["recordings": recordings.map(summary)]
    if let s = streamOut {
      fields["stream"] = [
        "path": s.path, "format": s.format.rawValue, "open": s.attached.load(ordering: .relaxed),
        "frames": Int(s.writtenFrames.load(ordering: .relaxed)),
        "dropped_frames": Int(s.consumer.droppedFrames.load(ordering: .relaxed)),
      ]
    }
    return fields
  }

  /// Called at every wake: stops the recordings and the stream whose writer failed (a full
  /// disk, a write error, a reader gone), reporting each in one sentence; audio goes on.
  func superviseTapConsumers(audioRunning: Bool) {
    for recording in recordings where recording.failed != nil {
      stopRecording(recording, audioRunning: audioRunning, reason: "failed")
    }
    if let s = streamOut, let failure = s.failed {
      taps.detach(s.consumer, audioRunning: audioRunning)
      s.finish()
      streamOut = nil
      Log.error(failure)
      stream.emit(
        "stream-failed",
        [
          "path": .string(s.path), "error": .string(failure),
          "frames": .int(Int(s.writtenFrames.load(ordering: .relaxed))),
        ])
    }
  }

  /// After a reconnection: `--autorecord` starts a new file for the new session, and a
  /// recording whose sample rate no longer matches is closed (and, for `--record`, continued in a
  /// new file).
  func restartRecordings(after client: JackClient) {
    let rate = Int(client.sampleRate)
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
    if let s = streamOut {
      taps.detach(s.consumer, audioRunning: false)
      s.finish()
      streamOut = nil
      Log.info("the stream to \(s.label) ended after \(s.writtenFrames.load(ordering: .relaxed)) frames")
    }
  }

  /// `record stop` (`{"cmd":"record","action":"stop","id":N}`, no id: all): the recordings are
  /// detached at once and `pending` is answered once their files are finalized
  /// (`pollFinishingRecordings`); a bad id is answered at once.
  func startRecordStop(_ pending: ControlServer.Pending) {
    var chosen = recordings
    if let raw = pending.request["id"] {
      guard let id = raw.number.map({ Int($0) }) else {
        return pending.answer(ControlServer.error("\"id\" must be a number"))
      }
      chosen = recordings.filter { $0.id == id }
      guard !chosen.isEmpty else { return pending.answer(ControlServer.error("no recording has id \(id)")) }
    }
    guard !chosen.isEmpty else { return pending.answer(Self.encode(["ok": true, "stopped": [Any]()])) }
    beginStopping(chosen, audioRunning: !suspended, reason: "control", answering: pending)
  }

  /// The `record` command: `{"cmd":"record","action":"start","tap":…,"format":…,"path":…}`,
  /// `{"cmd":"record"}` (list); `stop` is `startRecordStop`.
  func record(_ request: [String: JSONValue], _ client: JackClient) throws(ControlError) -> [String: Any] {
    let name = request["action"]?.string ?? ControlProtocol.RecordAction.list.rawValue
    switch ControlProtocol.RecordAction(rawValue: name) {
    case .list:
      return tapStatus
    case .start:
      let tapName = request["tap"]?.string ?? "output"
      guard let tap = Tap(name: tapName) else {
        throw ControlError("tap '\(tapName)' is not one of input, output")
      }
      var path = request["path"]?.string ?? ""
      if path.isEmpty {
        path =
          (options.recordDirectory ?? options.autorecordDirectory ?? FileManager.default.currentDirectoryPath)
          + "/"
      }
      let format: RecordingFormat
      if let name = request["format"]?.string {
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
