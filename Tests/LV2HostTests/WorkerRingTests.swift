import CJack
import Foundation
import Synchronization
import Testing

@testable import LV2Host

/// Message `n` of a stress run: its size (0...max, both ends included often) and bytes (a
/// window of a fixed pattern that starts at an offset derived from `n`, with `n` itself in the
/// first 8 bytes when it fits), so that a torn, lost, repeated or reordered message is seen.
struct NumberedMessages: @unchecked Sendable {
  let maxBytes: Int
  /// `maxBytes + 256` pattern bytes, read-only once built.
  let pattern: UnsafeMutableRawPointer

  init(maxBytes: Int) {
    self.maxBytes = maxBytes
    pattern = .allocate(byteCount: maxBytes + 256, alignment: 16)
    for i in 0..<(maxBytes + 256) {
      pattern.storeBytes(
        of: UInt8(truncatingIfNeeded: i &* 131 &+ (i >> 8) &+ 7), toByteOffset: i, as: UInt8.self)
    }
  }

  func deallocate() { pattern.deallocate() }

  func size(_ n: Int) -> Int {
    switch n % 64 {
    case 0: return 0
    case 1: return maxBytes
    case 2...9: return n % 8  // shorter than the sequence number
    default:
      var h = UInt64(truncatingIfNeeded: n) &* 0x9E37_79B9_7F4A_7C15
      h ^= h >> 29
      return Int(h % UInt64(maxBytes + 1))
    }
  }

  /// Writes message `n` into `buffer` and returns its size.
  func fill(_ buffer: UnsafeMutableRawPointer, _ n: Int) -> Int {
    let size = self.size(n)
    buffer.copyMemory(from: pattern + (n & 255), byteCount: size)
    if size >= 8 { buffer.storeBytes(of: UInt64(n), as: UInt64.self) }
    return size
  }

  /// Whether `buffer` holds exactly message `n`.
  func matches(_ buffer: UnsafeRawPointer, size: Int, _ n: Int) -> Bool {
    guard size == self.size(n) else { return false }
    if size >= 8 {
      return buffer.loadUnaligned(as: UInt64.self) == UInt64(n)
        && memcmp(buffer + 8, pattern + (n & 255) + 8, size - 8) == 0
    }
    return memcmp(buffer, pattern + (n & 255), size) == 0
  }
}

/// What the consumer saw, written by it alone and read after both threads have finished.
final class RingOutcome: @unchecked Sendable {
  var received = 0
  var failure: String?
  var producerStuck = false
}

extension LV2HostStressTests {
  @Suite struct WorkerRingTests {
    static let guardByte: UInt8 = 0xA5

    /// A producer thread writes `count` numbered messages (retrying while the ring is full), a
    /// consumer thread reads them back and checks each one's size and bytes, in order. The
    /// consumer's buffer is as large as the ring, with a guard pattern after `maxMessageBytes`
    /// that must stay untouched.
    func stress(_ ring: WorkerRing, count: Int) -> RingOutcome {
      let messages = NumberedMessages(maxBytes: ring.maxMessageBytes)
      defer { messages.deallocate() }
      let ringBytes = PluginWorker.ringBytes
      let staging = UnsafeSendable(
        UnsafeMutableRawPointer.allocate(byteCount: messages.maxBytes, alignment: 16))
      let buffer = UnsafeSendable(UnsafeMutableRawPointer.allocate(byteCount: ringBytes, alignment: 16))
      defer {
        staging.value.deallocate()
        buffer.value.deallocate()
      }
      buffer.value.initializeMemory(as: UInt8.self, repeating: Self.guardByte, count: ringBytes)
      let outcome = RingOutcome()
      let stop = Counter()  // non-zero: the consumer gave up
      let producer: @Sendable () -> Void = {
        var deadline = Stress.now() + 5
        for n in 0..<count {
          let size = messages.fill(staging.value, n)
          var spins = 0
          while !ring.write(size: UInt32(size), data: staging.value) {
            if stop.value.load(ordering: .relaxed) != 0 { return }
            spins += 1
            if spins & 255 == 0 {
              sched_yield()
              if Stress.now() > deadline { return }
            }
          }
          if n & 4095 == 0 { deadline = Stress.now() + 5 }
        }
      }
      let consumer: @Sendable () -> Void = {
        var n = 0
        var deadline = Stress.now() + 5
        var spins = 0
        while n < count {
          guard let size = ring.read(into: buffer.value) else {
            spins += 1
            if spins & 255 == 0 {
              sched_yield()
              if Stress.now() > deadline {
                outcome.failure = "no message \(n) within 5 s (lost?)"
                break
              }
            }
            continue
          }
          spins = 0
          if n & 4095 == 0 { deadline = Stress.now() + 5 }
          guard Int(size) <= messages.maxBytes else {
            outcome.failure =
              "message \(n): size \(size) > \(messages.maxBytes) (expected \(messages.size(n)))"
            break
          }
          guard messages.matches(buffer.value, size: Int(size), n) else {
            outcome.failure = "message \(n) torn: \(size) bytes (expected \(messages.size(n)))"
            break
          }
          n += 1
        }
        outcome.received = n
        stop.value.store(1, ordering: .relaxed)
      }
      Stress.run([producer, consumer])
      for i in messages.maxBytes..<ringBytes
      where buffer.value.load(fromByteOffset: i, as: UInt8.self) != Self.guardByte {
        outcome.failure = (outcome.failure ?? "") + "; a read wrote past maxMessageBytes (byte \(i))"
        break
      }
      return outcome
    }

    /// A million under the sanitizers too (about 3.5 s per ring under TSan, 1 s under ASan).
    static let count = Stress.count(1_000_000, sanitized: 1_000_000)

    @Test("a million requests cross the request ring, none lost or torn")
    func requestRing() {
      // No time limit (a test checks correctness, not speed: under --load this took 7 to 32 s):
      // a stall fails through the consumer's deadline of 5 s per 4096 messages.
      let worker = PluginWorker()
      let outcome = stress(worker.requests, count: Self.count)
      #expect(outcome.failure == nil)
      #expect(outcome.received == Self.count)
    }

    @Test("a million responses cross the response ring, none lost or torn")
    func responseRing() {
      let worker = PluginWorker()
      let outcome = stress(worker.responses, count: Self.count)
      #expect(outcome.failure == nil)
      #expect(outcome.received == Self.count)
    }
  }
}

@Suite struct WorkerRingEdgeTests {
  @Test("messages too large, or with a size but no data, are refused and leave the ring empty")
  func refused() {
    let ring = WorkerRing(bytes: 1 << 12, maxMessageBytes: 256)
    let data = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 16)
    defer { data.deallocate() }
    #expect(!ring.write(size: 257, data: data))
    #expect(!ring.write(size: 1, data: nil))
    #expect(ring.write(size: 0, data: nil))
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
    defer { buffer.deallocate() }
    #expect(ring.read(into: buffer) == 0)
    #expect(ring.read(into: buffer) == nil)
  }

  @Test("a full ring refuses a message whole and takes it once there is room")
  func full() {
    let ring = WorkerRing(bytes: 1 << 10, maxMessageBytes: 200)
    let messages = NumberedMessages(maxBytes: 200)
    defer { messages.deallocate() }
    let staging = UnsafeMutableRawPointer.allocate(byteCount: 200, alignment: 16)
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 200, alignment: 16)
    defer {
      staging.deallocate()
      buffer.deallocate()
    }
    // Many laps of the 1 KB ring so that messages straddle its end at every offset.
    var written = 0
    var read = 0
    for _ in 0..<2000 {
      while ring.write(size: UInt32(messages.fill(staging, written)), data: staging) { written += 1 }
      #expect(jack_ringbuffer_read_space(ring.ring) > 1023 - 204)
      for _ in 0..<3 {
        guard let size = ring.read(into: buffer) else { break }
        #expect(messages.matches(buffer, size: Int(size), read))
        read += 1
      }
    }
    while let size = ring.read(into: buffer) {
      #expect(messages.matches(buffer, size: Int(size), read))
      read += 1
    }
    #expect(read == written)
  }

  @Test("a header announcing more than the buffer holds is never read past it: the ring is dropped")
  func corruptHeader() {
    let ring = WorkerRing(bytes: 1 << 12, maxMessageBytes: 64)
    var header: UInt32 = 65
    let bytes = [UInt8](repeating: 0x5A, count: 65)
    withUnsafeBytes(of: &header) {
      _ = jack_ringbuffer_write(ring.ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 4)
    }
    bytes.withUnsafeBytes {
      _ = jack_ringbuffer_write(ring.ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 65)
    }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    #expect(ring.read(into: buffer) == nil)
    #expect(jack_ringbuffer_read_space(ring.ring) == 0)
    #expect((0..<64).allSatisfy { buffer.load(fromByteOffset: $0, as: UInt8.self) == 0 })
    #expect(ring.write(size: 0, data: nil))
    #expect(ring.read(into: buffer) == 0)
  }
}
