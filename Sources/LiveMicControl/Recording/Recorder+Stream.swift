import Dispatch
import Foundation
import LiveMicEngine
import LiveMicPresets

/// The output stream: started by `--stream-out` or `ctl stream start`, stopped by `ctl stream
/// stop` (or a failure), and followed at every wake: a FIFO whose reader left and came back is
/// reported as `stream-closed` and `stream-opened` (see docs/recording.md). Thread: the
/// supervisor.
extension Recorder {
  /// Starts the stream to `path` (`-`: standard output).
  @discardableResult
  func startStream(path: String, format: StreamOut.Format, _ client: Host, origin: String) -> StreamOut {
    let out = StreamOut(
      path: path, format: format, sampleRate: client.sampleRate, table: taps, wake: wake, pace: writerPace)
    streamOut = out
    streamReported = (0, 0)
    Log.info(
      "streaming the output tap (\(format.rawValue)) to \(out.label)"
        + (path == "-" ? "" : " once it can be opened")
        + " (\(origin))")
    stream.emit("stream-started", ["path": .string(path), "format": .string(format.rawValue)])
    return out
  }

  /// Stops the stream: detached, drained (to the destination, or discarded without a reader)
  /// and closed; reports `stream-stopped` and returns its summary (nil: no stream ran).
  @discardableResult
  func stopStream(audioRunning: Bool, reason: String) -> JSONObject? {
    guard let s = streamOut else { return nil }
    taps.detach(s.consumer, audioRunning: audioRunning)
    s.finish()
    streamOut = nil
    let summary = streamSummary(s)
    Log.info(
      "the stream to \(s.label) ended after \(s.writtenFrames.load(ordering: .relaxed)) frames (\(reason)), "
        + "\(dropped(s)) dropped")
    stream.emit(
      "stream-stopped",
      [
        "path": .string(s.path), "reason": .string(reason),
        "frames": .int(Int(s.writtenFrames.load(ordering: .relaxed))),
        "dropped_frames": .int(Int(dropped(s))),
      ])
    return summary
  }

  /// Frames the stream lost: the ring's overflows and what was read while nobody had the FIFO.
  func dropped(_ s: StreamOut) -> UInt64 {
    s.consumer.droppedFrames.load(ordering: .relaxed) &+ s.discardedFrames.load(ordering: .relaxed)
  }

  /// The `stream` object of `status` and of the `stream` command's answers.
  func streamSummary(_ s: StreamOut) -> JSONObject {
    [
      "path": .string(s.path), "format": .string(s.format.rawValue),
      "open": .bool(s.attached.load(ordering: .relaxed)),
      "frames": .int(s.writtenFrames.load(ordering: .relaxed)), "dropped_frames": .int(dropped(s)),
      "delivered_frames": .int(s.consumer.pushedFrames.load(ordering: .relaxed)),
      "reopened": .int(s.openings.load(ordering: .relaxed) &- min(s.openings.load(ordering: .relaxed), 1)),
    ]
  }

  /// At every wake: reports a FIFO reader's leaving and return, and stops a stream whose writer
  /// failed (one sentence; audio goes on).
  func superviseStream(audioRunning: Bool) {
    guard let s = streamOut else { return }
    let (openings, closings) = (s.openings.load(ordering: .acquiring), s.closings.load(ordering: .acquiring))
    // In order: a reader that left and came back between two wakes gives a close, then an open.
    while streamReported.closings < closings || streamReported.openings < openings {
      if streamReported.closings < closings && streamReported.closings < streamReported.openings {
        streamReported.closings += 1
        Log.info("the stream's reader went away; \(s.label) is reopened when a reader returns")
        stream.emit(
          "stream-closed",
          ["path": .string(s.path), "frames": .int(Int(s.writtenFrames.load(ordering: .relaxed)))])
      } else if streamReported.openings < openings {
        streamReported.openings += 1
        if streamReported.openings > 1 { Log.info("a reader opened \(s.label) again; streaming") }
        stream.emit(
          "stream-opened",
          [
            "path": .string(s.path), "frames": .int(Int(s.writtenFrames.load(ordering: .relaxed))),
            "dropped_frames": .int(Int(dropped(s))),
          ])
      } else {
        break
      }
    }
    guard let failure = s.failed else { return }
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

  /// The `stream` command: `{"cmd":"stream","action":"start","path":P,"format":"f32"|"wav"}`,
  /// `{"cmd":"stream","action":"stop"}`, `{"cmd":"stream"}` (show).
  func streamCommand(_ request: JSONObject, _ client: Host, audioRunning: Bool) throws(ControlError)
    -> JSONObject
  {
    let name = try request.text("action", or: ControlProtocol.StreamAction.show.rawValue)
    switch ControlProtocol.StreamAction(rawValue: name) {
    case .show:
      return ["stream": .object(streamOut.map(streamSummary) ?? [:])]
    case .start:
      guard let path = request["path"]?.string, !path.isEmpty else {
        throw ControlError("\"stream start\" needs a \"path\" (a file, a FIFO, or - for standard output)")
      }
      let formatName = try request.text("format", or: StreamOut.Format.f32.rawValue)
      guard let format = StreamOut.Format(rawValue: formatName) else {
        throw ControlError("stream format '\(formatName)' is not one of f32, wav")
      }
      if let problem = StreamDestination.problem(path: path) {
        throw ControlError("cannot stream to '\(path)': \(problem)")
      }
      if let running = streamOut {
        throw ControlError("a stream to \(running.label) runs already; stop it first (ctl stream stop)")
      }
      return [
        "stream": .object(streamSummary(startStream(path: path, format: format, client, origin: "control")))
      ]
    case .stop:
      guard let summary = stopStream(audioRunning: audioRunning, reason: "control") else {
        throw ControlError("no stream runs")
      }
      return ["stopped": .object(summary)]
    case nil:
      throw ControlError("unknown stream action '\(name)' (start, stop, show)")
    }
  }
}

/// Where a stream may go (`--stream-out`, `ctl stream start`), checked before its writer
/// starts, so a path that cannot be written is refused in one sentence rather than failing a
/// moment later in the log.
public enum StreamDestination {
  /// Why the stream cannot go to `path` (the system's words), or nil: `-`, a FIFO, a file this
  /// user may write, or a new file in a folder this user may write. Nothing is created.
  public static func problem(path: String) -> String? {
    guard path != "-" else { return nil }
    var info = stat()
    if stat(path, &info) == 0 {
      switch info.st_mode & S_IFMT {
      case S_IFIFO: return nil
      case S_IFDIR: return "it is a folder"
      default: return access(path, W_OK) == 0 ? nil : String(cString: strerror(errno))
      }
    }
    let folder = (path as NSString).deletingLastPathComponent
    return access(folder.isEmpty ? "." : folder, W_OK) == 0 ? nil : String(cString: strerror(errno))
  }
}
