import CLV2Support
import CLilv
import Foundation
import Synchronization
import Testing

/// Line `seq` of producer `k`: "P<k> <seq, 8 hex digits> " then `seq % 200` letters derived from
/// `seq`, so that a torn, mixed or truncated line is seen.
enum NumberedLines {
  static let maxFiller = 200
  static let hex: [CChar] = Array("0123456789abcdef".utf8CString)

  /// Writes the line into `text` (at least 256 bytes, NUL-terminated).
  static func fill(_ text: UnsafeMutablePointer<CChar>, producer k: Int, seq: Int) {
    text[0] = CChar(UInt8(ascii: "P"))
    text[1] = CChar(UInt8(ascii: "0") + UInt8(k))
    text[2] = CChar(UInt8(ascii: " "))
    for d in 0..<8 { text[3 + d] = hex[(seq >> (28 - 4 * d)) & 15] }
    text[11] = CChar(UInt8(ascii: " "))
    let filler = seq % maxFiller
    for i in 0..<filler { text[12 + i] = CChar(UInt8(ascii: "a") + UInt8((seq + i) % 26)) }
    text[12 + filler] = 0
  }

  /// The producer and sequence number of a well-formed line, nil for any other text.
  static func parse(_ text: UnsafePointer<CChar>) -> (producer: Int, seq: Int)? {
    guard text[0] == CChar(UInt8(ascii: "P")), text[2] == CChar(UInt8(ascii: " ")),
      text[11] == CChar(UInt8(ascii: " "))
    else { return nil }
    let k = Int(text[1]) - Int(UInt8(ascii: "0"))
    guard k >= 0 && k < 10 else { return nil }
    var seq = 0
    for d in 0..<8 {
      let c = Int(text[3 + d])
      let v =
        c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1
      guard v >= 0 else { return nil }
      seq = seq << 4 | v
    }
    let filler = seq % maxFiller
    for i in 0..<filler where text[12 + i] != CChar(UInt8(ascii: "a") + UInt8((seq + i) % 26)) { return nil }
    guard text[12 + filler] == 0 else { return nil }
    return (k, seq)
  }

  static func type(producer k: Int, seq: Int) -> UInt32 { UInt32(1000 * (k + 1) + seq % 7) }
}

/// Per-producer flags: which lines the queue accepted (written by the producer) and which the
/// consumer received; compared after all threads have finished.
final class LineLedger: @unchecked Sendable {
  let producers: Int
  let lines: Int
  let accepted: UnsafeMutablePointer<UInt8>
  let received: UnsafeMutablePointer<UInt8>
  /// Lines each producer saw refused, one slot per producer (each written by its own thread:
  /// a Swift array here was one variable both producers modified, a race TSan caught once).
  let dropped: UnsafeMutablePointer<Int>
  var failure: String?
  var duplicates = 0

  init(producers: Int, lines: Int) {
    self.producers = producers
    self.lines = lines
    accepted = .allocate(capacity: producers * lines)
    accepted.initialize(repeating: 0, count: producers * lines)
    received = .allocate(capacity: producers * lines)
    received.initialize(repeating: 0, count: producers * lines)
    dropped = .allocate(capacity: producers)
    dropped.initialize(repeating: 0, count: producers)
  }

  deinit {
    dropped.deallocate()
    accepted.deallocate()
    received.deallocate()
  }
}

extension LV2HostStressTests {
  @Suite struct LogQueueTests {
    static let lines = Stress.count(500_000, sanitized: 150_000)

    /// `producers` threads push `lines` numbered lines each into a queue of `slots` (not
    /// retrying when it is full); one consumer pops until the producers are done and the queue
    /// is empty.
    func stress(slots: UInt32, producers: Int, lines: Int) throws -> (LineLedger, UInt64) {
      let queue = UnsafeSendable(try #require(livemic_log_queue_new(slots)))
      defer { livemic_log_queue_free(queue.value) }
      let ledger = LineLedger(producers: producers, lines: lines)
      let done = Counter()
      var bodies: [@Sendable () -> Void] = []
      for k in 0..<producers {
        bodies.append {
          let text = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
          defer { text.deallocate() }
          var dropped = 0
          for seq in 0..<lines {
            NumberedLines.fill(text, producer: k, seq: seq)
            if livemic_log_queue_push(queue.value, NumberedLines.type(producer: k, seq: seq), text) == 1 {
              ledger.accepted[k * lines + seq] = 1
            } else {
              dropped += 1
            }
            // Now and then give the consumer a moment, so that lines both pass and are dropped.
            if seq % 64 == 63 { sched_yield() }
          }
          ledger.dropped[k] = dropped
          done.value.add(1, ordering: .releasing)
        }
      }
      bodies.append {
        let text = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
        defer { text.deallocate() }
        var last = Array(repeating: -1, count: producers)
        var type: UInt32 = 0
        while true {
          let finished = done.value.load(ordering: .acquiring) == producers
          guard livemic_log_queue_pop(queue.value, text, 256, &type) == 1 else {
            if finished { break }
            continue
          }
          guard ledger.failure == nil else { continue }
          guard let (k, seq) = NumberedLines.parse(text), k < producers, seq < lines else {
            ledger.failure = "torn line: \(String(cString: text))"
            continue
          }
          if seq <= last[k] {
            ledger.failure = "producer \(k): line \(seq) after line \(last[k])"
          } else if type != NumberedLines.type(producer: k, seq: seq) {
            ledger.failure = "producer \(k): line \(seq) with type \(type)"
          }
          last[k] = seq
          if ledger.received[k * lines + seq] != 0 { ledger.duplicates += 1 }
          ledger.received[k * lines + seq] = 1
        }
      }
      Stress.run(bodies)
      return (ledger, livemic_log_queue_dropped(queue.value))
    }

    func check(_ ledger: LineLedger, dropped: UInt64) {
      #expect(ledger.failure == nil)
      #expect(ledger.duplicates == 0)
      var accepted = 0
      var mismatched = 0
      for i in 0..<(ledger.producers * ledger.lines) {
        accepted += Int(ledger.accepted[i])
        if ledger.accepted[i] != ledger.received[i] { mismatched += 1 }
      }
      #expect(mismatched == 0, "lines accepted but not received, or received but dropped")
      #expect(Int(dropped) == (0..<ledger.producers).reduce(0) { $0 + ledger.dropped[$1] })
      #expect(accepted + Int(dropped) == ledger.producers * ledger.lines)
    }

    @Test(
      "two producers × 500k lines through the plugins' 64-slot queue: each accepted line arrives once, in order, whole; drops counted exactly"
    )
    func smallQueue() throws {
      let (ledger, dropped) = try stress(slots: 64, producers: 2, lines: Self.lines)
      check(ledger, dropped: dropped)
      #expect(dropped > 0, "the 64-slot queue should overflow at this rate")
      #expect(Int(dropped) < 2 * Self.lines, "some lines should get through")
    }

    @Test("two producers × 500k lines through a 16k-slot queue, one consumer: nothing torn, lost or repeated")
    func largeQueue() throws {
      let (ledger, dropped) = try stress(slots: 1 << 14, producers: 2, lines: Self.lines)
      check(ledger, dropped: dropped)
    }
  }
}

@Suite struct LogFeatureTests {
  @Test("the log feature strips trailing newlines and truncates long lines to 239 bytes")
  func feature() {
    let queue = livemic_log_queue_new(4)!
    defer { livemic_log_queue_free(queue) }
    let log = livemic_log_feature_new(queue)!.assumingMemoryBound(to: LV2_Log_Log.self)
    defer { free(log) }
    _ = withVaList([CInt(42)]) { log.pointee.vprintf(log.pointee.handle, 7, "value %d\r\n", $0) }
    let long = String(repeating: "x", count: 300)
    _ = long.withCString { s in withVaList([s]) { log.pointee.vprintf(log.pointee.handle, 8, "%s", $0) } }
    var text = [CChar](repeating: 0, count: 256)
    func line() -> String { text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
    var type: UInt32 = 0
    #expect(livemic_log_queue_pop(queue, &text, 256, &type) == 1)
    #expect(line() == "value 42" && type == 7)
    #expect(livemic_log_queue_pop(queue, &text, 256, &type) == 1)
    #expect(line() == String(repeating: "x", count: 239) && type == 8)
    #expect(livemic_log_queue_pop(queue, &text, 256, &type) == 0)
    // Five lines into four slots: one dropped.
    for _ in 0..<5 { _ = livemic_log_queue_push(queue, 1, "line") }
    #expect(livemic_log_queue_dropped(queue) == 1)
  }
}
