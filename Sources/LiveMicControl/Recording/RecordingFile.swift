import CSndfile
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A recording's file on disk, as its writer thread sees it: the descriptor, libsndfile's
/// handle on it, the disk space reserved ahead of the writes, and the file's identity.
///
/// Every file LiveMic leaves opens in a player (docs/recording.md, "Every file opens"):
/// - **Room ahead.** The writer keeps at least `headroomBytes` reserved beyond the file's end
///   (`fallocate` with `FALLOC_FL_KEEP_SIZE`, in steps of `reserveStepBytes`), so a full disk is
///   seen when a reservation fails, while the encoder's last frames and the header still have
///   room: the file is then finalized like any other, holding every frame handed to it. Without
///   the reservation, libsndfile's MP3 writer reports no failure on a full disk at all, and FLAC
///   and OGG lose their last frames and their length. On a file system that cannot reserve, the
///   writer goes on without (a failed write is then the only sign).
/// - **Identity.** A file whose path no longer leads to it (its folder removed, the file deleted
///   or replaced) is a fault the writer reports (`vanished`).
/// - **Empty files.** A file no audio reached is removed when it is closed.
///
/// Thread: created by the supervisor, then used by the writer thread only.
struct RecordingFile {
  /// The room kept reserved beyond the file's end: more than a chunk of writes
  /// (`writerChunkFrames` frames, 32 KiB of float WAV) and whatever an encoder flushes at close
  /// (a FLAC block, an Ogg page, LAME's last frames) with the header rewritten in place.
  static let headroomBytes: Int64 = 256 << 10
  /// How far ahead a reservation reaches when there is room.
  static let reserveStepBytes: Int64 = 512 << 10

  let path: String
  private let fd: Int32
  private let sndfile: OpaquePointer
  /// The end of the space reserved so far (bytes from the file's start); nil when the file
  /// system cannot reserve.
  private var reservedEnd: Int64?
  private let device: UInt64
  private let inode: UInt64

  /// Creates (or truncates) `path`, reserves its first room and opens it with libsndfile.
  init(path: String, format: RecordingFormat, sampleRate: Int) throws(TapWriterError) {
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw TapWriterError("cannot record to '\(path)': \(String(cString: strerror(errno)))")
    }
    var info = stat()
    fstat(fd, &info)
    (self.path, self.fd, device, inode) = (path, fd, UInt64(info.st_dev), UInt64(info.st_ino))
    switch Self.reserve(fd, from: 0, to: Self.reserveStepBytes, atLeast: Self.headroomBytes) {
    case .reserved(let end): reservedEnd = end
    case .unsupported: reservedEnd = nil
    case .failed(let reason):
      close(fd)
      unlink(path)
      throw TapWriterError("cannot record to '\(path)': \(reason)")
    }
    var settings = SF_INFO()
    settings.samplerate = Int32(sampleRate)
    settings.channels = 2
    settings.format = format.sndfileFormat
    guard let handle = sf_open_fd(fd, Int32(SFM_WRITE), &settings, Int32(SF_FALSE)) else {
      let reason = String(cString: sf_strerror(nil))
      close(fd)
      unlink(path)
      throw TapWriterError("cannot record to '\(path)': \(reason)")
    }
    sndfile = handle
  }

  /// What a reservation came to.
  private enum Reservation {
    case reserved(end: Int64)
    case unsupported
    case failed(String)
  }

  /// Reserves up to `end` from `start`, or, when the disk has not that much room, up to
  /// `minimum` (the least the writer needs).
  private static func reserve(_ fd: Int32, from start: Int64, to end: Int64, atLeast minimum: Int64)
    -> Reservation
  {
    var code = livemic_reserve_space(fd, off_t(start), off_t(end - start))
    if code == 0 { return .reserved(end: end) }
    if code == ENOSPC && minimum > start {
      code = livemic_reserve_space(fd, off_t(start), off_t(minimum - start))
      if code == 0 { return .reserved(end: minimum) }
    }
    switch code {
    case EOPNOTSUPP, ENOSYS, EINVAL: return .unsupported
    case ENOSPC: return .failed("the disk is full (\(String(cString: strerror(code))))")
    default: return .failed("no disk space could be reserved (\(String(cString: strerror(code))))")
    }
  }

  /// The file's size now.
  private var size: Int64 {
    var info = stat()
    return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
  }

  /// Before the next chunk is written: keeps `headroomBytes` reserved beyond the file's end.
  /// The one-sentence fault when the disk has no more room (the file then still has its
  /// headroom, enough to be finalized), nil otherwise.
  mutating func makeRoom() -> String? {
    guard let end = reservedEnd else { return nil }
    let needed = size + Self.headroomBytes
    guard needed > end else { return nil }
    switch Self.reserve(fd, from: end, to: needed + Self.reserveStepBytes, atLeast: needed) {
    case .reserved(let newEnd):
      reservedEnd = newEnd
      return nil
    case .unsupported:
      reservedEnd = nil
      return nil
    case .failed(let reason):
      return "recording '\(path)' stopped: \(reason)"
    }
  }

  /// Writes `frames` interleaved stereo frames; the frames written, and the one-sentence fault
  /// when not all were.
  func write(_ buffer: UnsafeMutablePointer<Float>, frames: Int) -> (written: Int, fault: String?) {
    errno = 0
    let written = Int(sf_writef_float(sndfile, buffer, sf_count_t(frames)))
    guard written != frames else { return (written, nil) }
    let reason = errno != 0 ? String(cString: strerror(errno)) : String(cString: sf_strerror(sndfile))
    return (max(written, 0), "recording '\(path)' stopped: the write failed (\(reason))")
  }

  /// Brings a WAV header up to date (the length fields), so a killed process leaves a file that
  /// opens up to this point. (Only WAV: libsndfile's Ogg writer is spoilt by it.)
  func updateHeader() { sf_command(sndfile, Int32(SFC_UPDATE_HEADER_NOW), nil, 0) }

  /// The one-sentence fault when the path no longer leads to this file: its folder is gone, or
  /// the file was removed or replaced; nil while it does.
  var vanished: String? {
    var info = stat()
    if stat(path, &info) == 0 && UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode { return nil }
    let folder = (path as NSString).deletingLastPathComponent
    var folderInfo = stat()
    if !folder.isEmpty && stat(folder, &folderInfo) != 0 {
      return "recording '\(path)' stopped: its folder '\(folder)' vanished"
    }
    return "recording '\(path)' stopped: the file was removed or replaced"
  }

  /// Finalizes the file (the encoder's last frames, the header), gives back the space reserved
  /// beyond its end and closes it; removes it when `empty` (no frame reached it) and the path
  /// still leads to it. Returns whether it was removed and the one-sentence fault, if closing
  /// failed.
  func finalize(empty: Bool) -> (removed: Bool, fault: String?) {
    let closed = sf_close(sndfile)
    // Truncating to its own size gives back the blocks reserved beyond the end (ext4, tmpfs, XFS).
    if reservedEnd != nil { _ = ftruncate(fd, off_t(size)) }
    let stillThere = vanished == nil
    Glibc.close(fd)
    let removed = empty && stillThere && unlink(path) == 0
    guard closed == 0 else {
      return (
        removed, "recording '\(path)' could not be finalized (\(String(cString: sf_error_number(closed))))"
      )
    }
    return (removed, nil)
  }
}
