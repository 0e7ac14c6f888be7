import CSndfile
import DSP
import Dispatch
import Foundation
import LiveMicEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A recording's file format.
public enum RecordingFormat: String, Sendable, CaseIterable {
  case wav, flac, ogg, mp3

  /// libsndfile's format: WAV 32-bit float (bit-exact), FLAC 24-bit, Ogg Vorbis, MP3 (layer III).
  var sndfileFormat: Int32 {
    switch self {
    case .wav: return Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    case .flac: return Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_24)
    case .ogg: return Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
    case .mp3: return Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)
    }
  }

  /// Whether the installed libsndfile can write this format (stereo at `sampleRate`).
  func isSupported(sampleRate: Int) -> Bool {
    var info = SF_INFO()
    info.samplerate = Int32(sampleRate)
    info.channels = 2
    info.format = sndfileFormat
    return sf_format_check(&info) == 1
  }

  /// The format a file name's extension names, if any.
  init?(pathExtension: String) {
    switch pathExtension.lowercased() {
    case "wav": self = .wav
    case "flac": self = .flac
    case "ogg", "oga": self = .ogg
    case "mp3": self = .mp3
    default: return nil
    }
  }
}

/// Why a recording or a stream could not start or had to stop. Each message is one sentence.
struct TapWriterError: CodedError {
  let description: String
  var code: String { "record.writer" }
  init(_ description: String) { self.description = description }
}

/// The frames a writer thread moves per read of its ring.
let writerChunkFrames = 4096

/// The output stream (`--stream-out`, `ctl stream start`): a writer thread that sends the output
/// tap, raw float32 interleaved or as a WAV stream of unknown length, to a file, a FIFO (waiting
/// for a reader) or standard output.
///
/// A FIFO whose reader goes away (ffmpeg or OBS restarted) is not the end: the writer closes it,
/// discards the audio while nobody reads (counted in `discardedFrames`), opens it again as soon
/// as a reader returns (a WAV stream starts with its header again) and carries on; each close
/// and open is counted (`closings`, `openings`) for the supervisor's `stream-closed` and
/// `stream-opened` events. A file or standard output whose reader goes away, or a failed write,
/// stops the stream with one message; nothing else is affected. Every frame the tap handed over
/// is either written or discarded: `writtenFrames + discardedFrames == consumer.pushedFrames`
/// once the writer has finished.
///
/// Thread: created, stopped and read by the supervisor; the writer thread owns the descriptor.
final class StreamOut: @unchecked Sendable {
  enum Format: String, CaseIterable { case f32, wav }

  let path: String
  let format: Format
  let sampleRate: Int
  let consumer: TapConsumer
  private let table: TapTable
  private let wake: DispatchSemaphore
  private let pace: WriterPace
  /// Frames written to the stream, and frames read from the ring while no reader had the FIFO.
  let writtenFrames = Atomic<UInt64>(0)
  let discardedFrames = Atomic<UInt64>(0)
  /// Times the destination was opened and times a FIFO's reader went away.
  let openings = Atomic<UInt64>(0)
  let closings = Atomic<UInt64>(0)
  /// True while the destination is open (the consumer stays attached from the first opening).
  let attached = Atomic<Bool>(false)
  private let stopRequested = Atomic<Bool>(false)
  private let failure = Locked<String?>(nil)
  private let done = DispatchSemaphore(value: 0)
  /// How often the writer tries a FIFO again while it has no reader.
  static let reopenIntervalNanoseconds: UInt64 = 50_000_000

  /// Starts the writer thread, which attaches `consumer` to `table` once the destination is open
  /// and rests at `pace` when the ring is empty.
  init(
    path: String, format: Format, sampleRate: Int, table: TapTable, wake: DispatchSemaphore, pace: WriterPace
  ) {
    (self.path, self.format, self.sampleRate, self.table, self.wake, self.pace) =
      (path, format, sampleRate, table, wake, pace)
    consumer = TapConsumer(tap: .output, seconds: 4, sampleRate: Double(sampleRate))
    Thread.startOwn("livemic-stream") { [self] in run() }
  }

  /// Where the stream goes, for messages.
  var label: String { path == "-" ? "standard output" : "'\(path)'" }

  /// The one-sentence reason the stream stopped on its own, if it did.
  var failed: String? { failure.withLock { $0 } }

  /// After the consumer has been detached (or was never attached): lets the writer drain and
  /// close, waiting at most `timeoutSeconds`.
  func finish(timeoutSeconds: Double = 5) {
    stopRequested.store(true, ordering: .releasing)
    if done.wait(timeout: .now() + timeoutSeconds) == .success { done.signal() }
  }

  private func fail(_ message: String) {
    failure.withLock { $0 = "the stream to \(label) stopped: \(message)" }
    wake.signal()
  }

  /// What a write came to.
  private enum Sent { case ok, readerGone, failed, stopped }

  private func run() {
    defer { done.signal() }
    var info = stat()
    let isFifo = path != "-" && stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO
    guard var fd = open(fifo: isFifo, waiting: true) else { return }
    defer { if fd > 1 { close(fd) } }
    guard begin(fd) else { return }
    guard table.attach(consumer) else { return fail("every tap slot is taken") }
    attached.store(true, ordering: .releasing)
    openings.add(1, ordering: .releasing)
    wake.signal()
    let frames = UnsafeMutablePointer<Float>.allocate(capacity: 2 * writerChunkFrames)
    defer { frames.deallocate() }
    var nextTry: UInt64 = 0
    while true {
      let stopping = stopRequested.load(ordering: .acquiring)
      // Without a reader (fd < 0): try the FIFO again now and then.
      if fd < 0 && !stopping && DispatchTime.now().uptimeNanoseconds >= nextTry {
        nextTry = DispatchTime.now().uptimeNanoseconds + Self.reopenIntervalNanoseconds
        if let reopened = open(fifo: true, waiting: false) {
          if begin(reopened) {
            fd = reopened
            attached.store(true, ordering: .releasing)
            openings.add(1, ordering: .releasing)
            wake.signal()
          } else {
            close(reopened)
          }
        }
      }
      let n = consumer.read(into: frames, maxFrames: writerChunkFrames)
      if n > 0 {
        guard fd >= 0 else {
          discardedFrames.add(UInt64(n), ordering: .releasing)
          continue
        }
        let bytes = UnsafeRawBufferPointer(start: frames, count: n * TapConsumer.bytesPerFrame)
        switch write(fd, bytes) {
        case .ok:
          writtenFrames.add(UInt64(n), ordering: .releasing)
        case .readerGone where isFifo:
          // The chunk went to a reader that left, or nowhere: discarded with what follows.
          discardedFrames.add(UInt64(n), ordering: .releasing)
          close(fd)
          fd = -1
          attached.store(false, ordering: .releasing)
          closings.add(1, ordering: .releasing)
          wake.signal()
        case .readerGone:
          return fail("the reader went away")
        case .failed, .stopped:
          return
        }
      } else if stopping {
        return
      } else {
        pace.rest()
      }
    }
  }

  /// Makes a just-opened descriptor non-blocking (a reader that stops reading cannot hold up a
  /// stop) and writes the WAV header when there is one; false when that failed.
  private func begin(_ fd: Int32) -> Bool {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    guard format == .wav else { return true }
    return Self.wavHeader(sampleRate: sampleRate).withUnsafeBytes { write(fd, $0) } == .ok
  }

  /// Opens the destination: standard output, a FIFO (with `waiting`, polling until a reader
  /// opens it or until stopped; else one try) or a file (created or truncated). Nil after
  /// reporting a failure, a stop, or (one try) no reader yet.
  private func open(fifo: Bool, waiting: Bool) -> Int32? {
    if path == "-" { return 1 }
    if !fifo {
      let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
      if fd < 0 { fail("it cannot be opened (\(String(cString: strerror(errno))))") }
      return fd >= 0 ? fd : nil
    }
    while !stopRequested.load(ordering: .acquiring) {
      let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 { return fd }
      guard errno == ENXIO || errno == EINTR else {
        fail("the FIFO cannot be opened (\(String(cString: strerror(errno))))")
        return nil
      }
      if !waiting { return nil }
      usleep(50_000)  // no reader yet
    }
    return nil
  }

  /// Writes all of `bytes`, waiting while the reader is slow; says when the reader went away
  /// (EPIPE), the write failed (reported) or a stop came while the reader does not read.
  private func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Sent {
    guard let base = bytes.baseAddress else { return .ok }
    var sent = 0
    while sent < bytes.count {
      let n = Glibc.write(fd, base + sent, bytes.count - sent)
      if n > 0 {
        sent += n
        continue
      }
      if n < 0 && errno == EINTR { continue }
      if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
        if stopRequested.load(ordering: .acquiring) { return .stopped }
        var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&ready, 1, 50)
        continue
      }
      if n < 0 && errno == EPIPE { return .readerGone }
      fail("a write failed (\(String(cString: strerror(errno))))")
      return .failed
    }
    return .ok
  }

  /// A 46-byte WAV header for 32-bit float stereo (an 18-byte `fmt ` chunk, as
  /// WAVE_FORMAT_IEEE_FLOAT wants) whose lengths say "unknown" (0xFFFFFFFF), as streaming readers
  /// (ffmpeg, sox) accept.
  static func wavHeader(sampleRate: Int) -> [UInt8] {
    var h: [UInt8] = []
    func u32(_ v: UInt32) { h += withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    func u16(_ v: UInt16) { h += withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    h += Array("RIFF".utf8)
    u32(0xFFFF_FFFF)
    h += Array("WAVEfmt ".utf8)
    u32(18)
    u16(3)  // IEEE float
    u16(2)
    u32(UInt32(sampleRate))
    u32(UInt32(sampleRate * TapConsumer.bytesPerFrame))
    u16(UInt16(TapConsumer.bytesPerFrame))
    u16(32)
    u16(0)  // no extension
    h += Array("data".utf8)
    u32(0xFFFF_FFFF)
    return h
  }
}
