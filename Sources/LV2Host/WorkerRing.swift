import CJack

/// A single-producer, single-consumer ring of size-prefixed messages (a 4-byte native-endian
/// size, then that many bytes) on a `jack_ringbuffer_t`: the LV2 worker's requests (audio thread
/// to worker thread) and responses (worker thread to audio thread).
///
/// Each message is one transaction: the writer copies header and payload into the ring's free
/// space and publishes both with a single `jack_ringbuffer_write_advance`; the reader peeks the
/// header and consumes nothing until the whole message is readable. So the reader never sees a
/// header without its payload, however the two threads interleave.
///
/// Thread: one producer thread calls `write`, one consumer thread calls `read`.
final class WorkerRing: @unchecked Sendable {
  static let headerBytes = MemoryLayout<UInt32>.size
  /// The largest payload `write` accepts and `read` delivers (the consumer's buffer size).
  let maxMessageBytes: Int
  /// Internal for the tests, which write a corrupt header with it.
  let ring: UnsafeMutablePointer<jack_ringbuffer_t>
  /// The writer's two-segment view of the free space (producer only).
  private let writeVector: UnsafeMutablePointer<jack_ringbuffer_data_t>

  /// A ring of `bytes` (rounded up to a power of two by JACK, which keeps one byte free), locked
  /// in memory. Not real-time.
  init(bytes: Int, maxMessageBytes: Int) {
    precondition(maxMessageBytes + Self.headerBytes < bytes)
    self.maxMessageBytes = maxMessageBytes
    guard let ring = jack_ringbuffer_create(bytes) else {
      preconditionFailure("out of memory for a \(bytes)-byte worker ring")
    }
    self.ring = ring
    jack_ringbuffer_mlock(ring)
    writeVector = .allocate(capacity: 2)
    writeVector.initialize(repeating: jack_ringbuffer_data_t(), count: 2)
  }

  deinit {
    jack_ringbuffer_free(ring)
    writeVector.deallocate()
  }

  /// Writes a size-prefixed message in one transaction, or nothing (false) when it does not
  /// fit, is larger than `maxMessageBytes`, or has a size but no data.
  /// - Realtime: safe
  func write(size: UInt32, data: UnsafeRawPointer?) -> Bool {
    let payload = Int(size)
    guard payload <= maxMessageBytes, payload == 0 || data != nil else { return false }
    let total = Self.headerBytes + payload
    guard jack_ringbuffer_write_space(ring) >= total else { return false }
    jack_ringbuffer_get_write_vector(ring, writeVector)
    guard writeVector[0].len + writeVector[1].len >= total else { return false }
    var header = size
    withUnsafeBytes(of: &header) {
      if let base = $0.baseAddress { copy(base, count: Self.headerBytes, at: 0) }
    }
    if payload > 0, let data { copy(data, count: payload, at: Self.headerBytes) }
    jack_ringbuffer_write_advance(ring, total)
    return true
  }

  /// Copies `count` bytes to `offset` bytes into the free space the write vector describes.
  /// - Realtime: safe
  private func copy(_ source: UnsafeRawPointer, count: Int, at offset: Int) {
    let first = writeVector[0]
    let inFirst = max(0, min(count, first.len - offset))
    if inFirst > 0 {
      UnsafeMutableRawPointer(first.buf + offset).copyMemory(from: source, byteCount: inFirst)
    }
    if inFirst < count {
      let second = writeVector[1]
      let secondOffset = max(0, offset - first.len)
      UnsafeMutableRawPointer(second.buf + secondOffset).copyMemory(
        from: source + inFirst, byteCount: count - inFirst)
    }
  }

  /// Reads one whole message into `buffer` (at least `maxMessageBytes`) and returns its size;
  /// nil when no whole message is readable yet. A header announcing more than `maxMessageBytes`
  /// (never written by `write`) means the framing is lost: the ring's contents are dropped and
  /// nothing is copied into `buffer`.
  /// - Realtime: safe
  func read(into buffer: UnsafeMutableRawPointer) -> UInt32? {
    let available = jack_ringbuffer_read_space(ring)
    guard available >= Self.headerBytes else { return nil }
    var size: UInt32 = 0
    let peeked = withUnsafeMutableBytes(of: &size) {
      guard let base = $0.baseAddress else { return 0 }
      return jack_ringbuffer_peek(ring, base.assumingMemoryBound(to: CChar.self), Self.headerBytes)
    }
    guard peeked == Self.headerBytes else { return nil }
    guard Int(size) <= maxMessageBytes else {
      jack_ringbuffer_read_advance(ring, available)
      return nil
    }
    guard available >= Self.headerBytes + Int(size) else { return nil }
    jack_ringbuffer_read_advance(ring, Self.headerBytes)
    if size > 0 { _ = jack_ringbuffer_read(ring, buffer.assumingMemoryBound(to: CChar.self), Int(size)) }
    return size
  }
}
