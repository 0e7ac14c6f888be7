import DSP
import Dispatch
import Foundation
import LiveMicEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One recording: a tap consumer and a writer thread that drains its ring into a file
/// (`RecordingFile`) with libsndfile. WAV headers are brought up to date once a second, so a
/// killed process leaves a file readable up to the last second; `finish` drains the ring and
/// finalizes the file. A fault (a full disk, a failed write, the file's folder gone) ends the
/// writer with one sentence (`failed`), after it has finalized what it wrote; a recording no
/// audio reached is removed (`removedEmpty`). See docs/recording.md, "Every file opens".
///
/// Thread: created, finished and read by the supervisor; the writer thread owns the file.
final class Recording: @unchecked Sendable {
  /// What started it: `record` (--record), `autorecord` (--autorecord) or `control`.
  enum Origin: String { case record, autorecord, control }

  let id: Int
  let path: String
  let format: RecordingFormat
  let origin: Origin
  let sampleRate: Int
  let started = Date()
  let consumer: TapConsumer
  /// The file; touched by the writer thread only, once started.
  private var file: RecordingFile
  /// Frames written to the file.
  let writtenFrames = Atomic<UInt64>(0)
  private let stopRequested = Atomic<Bool>(false)
  private let failure = Locked<String?>(nil)
  private let removed = Atomic<Bool>(false)
  private let done = DispatchSemaphore(value: 0)
  private let wake: DispatchSemaphore
  private let pace: WriterPace

  var tap: Tap { consumer.tap }

  /// Opens `path` for writing (its folder is created when missing) and starts the writer
  /// thread, which rests at `pace` when the ring is empty; the caller attaches `consumer` to the
  /// tap table.
  init(
    id: Int, path: String, tap: Tap, format: RecordingFormat, origin: Origin, sampleRate: Int,
    ringSeconds: Double, wake: DispatchSemaphore, pace: WriterPace
  ) throws(TapWriterError) {
    guard format.isSupported(sampleRate: sampleRate) else {
      throw TapWriterError("the installed libsndfile cannot write \(format.rawValue.uppercased()) files")
    }
    if let failed = Self.makeFolders((path as NSString).deletingLastPathComponent) {
      throw TapWriterError("cannot record to '\(path)': the folder cannot be created (\(failed))")
    }
    file = try RecordingFile(path: path, format: format, sampleRate: sampleRate)
    (self.id, self.path, self.format, self.origin, self.sampleRate, self.wake, self.pace) =
      (id, path, format, origin, sampleRate, wake, pace)
    consumer = TapConsumer(tap: tap, seconds: ringSeconds, sampleRate: Double(sampleRate))
    Thread.startOwn("livemic-record-\(id)") { [self] in writeLoop() }
  }

  /// Fault injection for tests (docs/testing.md): `LIVEMIC_FAULT_FINALIZE_DELAY_MS` makes every
  /// writer wait that long before it finalizes its file, as a slow disk or encoder would.
  static let finalizeDelayMicroseconds: UInt32 = {
    guard let text = ProcessInfo.processInfo.environment["LIVEMIC_FAULT_FINALIZE_DELAY_MS"],
      let ms = UInt32(text), ms <= 60_000
    else { return 0 }
    return ms * 1000
  }()

  /// Creates `folder` and its missing parents (mode 0755); the system's reason when it cannot.
  static func makeFolders(_ folder: String) -> String? {
    var path = folder.hasPrefix("/") ? "" : "."
    for part in folder.split(separator: "/") {
      path += "/" + part
      var info = stat()
      if stat(path, &info) == 0 {
        if (info.st_mode & S_IFMT) != S_IFDIR { return String(cString: strerror(ENOTDIR)) }
        continue
      }
      if mkdir(path, 0o755) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
    }
    return nil
  }

  /// The one-sentence reason the writer stopped on its own (a fault), if it did.
  var failed: String? { failure.withLock { $0 } }

  /// True once the writer has removed the file because no audio reached it.
  var removedEmpty: Bool { removed.load(ordering: .acquiring) }

  /// Seconds of audio written so far.
  var seconds: Double { Double(writtenFrames.load(ordering: .relaxed)) / Double(sampleRate) }

  /// After the consumer has been detached: lets the writer drain the ring, finalize the file and
  /// end; returns the frames written. Waits at most `timeoutSeconds`.
  @discardableResult
  func finish(timeoutSeconds: Double = 10) -> UInt64 {
    requestStop()
    _ = done.wait(timeout: .now() + timeoutSeconds)
    return writtenFrames.load(ordering: .acquiring)
  }

  /// After the consumer has been detached: asks the writer to drain the ring, finalize the file
  /// and end, without waiting; it wakes the supervisor when `isFinished`.
  func requestStop() { stopRequested.store(true, ordering: .releasing) }

  /// True once the writer has finalized the file (or given up on it) and ended.
  var isFinished: Bool { finished.load(ordering: .acquiring) }
  private let finished = Atomic<Bool>(false)

  private func fail(_ sentence: String) {
    failure.withLock { $0 = $0 ?? sentence }
    wake.signal()
  }

  private func writeLoop() {
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * writerChunkFrames)
    defer {
      buffer.deallocate()
      finished.store(true, ordering: .releasing)
      done.signal()
      wake.signal()
    }
    var lastCheck = DispatchTime.now()
    while true {
      let stopping = stopRequested.load(ordering: .acquiring)
      if let fault = file.makeRoom() {
        fail(fault)
        break
      }
      let n = consumer.read(into: buffer, maxFrames: writerChunkFrames)
      if n > 0 {
        let (written, fault) = file.write(buffer, frames: n)
        writtenFrames.add(UInt64(written), ordering: .releasing)
        if let fault {
          fail(fault)
          break
        }
      }
      // Once a second: the WAV header, and whether the path still leads to the file.
      if DispatchTime.now().uptimeNanoseconds >= lastCheck.uptimeNanoseconds + 1_000_000_000 {
        lastCheck = .now()
        if format == .wav { file.updateHeader() }
        if let fault = file.vanished {
          fail(fault)
          break
        }
      }
      if n == 0 {
        if stopping { break }
        pace.rest()
      }
    }
    if Self.finalizeDelayMicroseconds > 0 { usleep(Self.finalizeDelayMicroseconds) }
    let (wasRemoved, fault) = file.finalize(empty: writtenFrames.load(ordering: .acquiring) == 0)
    removed.store(wasRemoved, ordering: .releasing)
    if let fault { failure.withLock { $0 = $0 ?? fault } }
  }
}
