import CMicroHTTPD
import DSP
import Foundation
import Synchronization

/// One `GET /events` client: the stream lines waiting for it (at most 64; a client too slow to
/// take them misses lines, as a slow socket subscriber does) and what is left of the bytes being
/// written. `offer` runs on the supervisor's thread and never waits; `read` on the connection's.
final class Feed: @unchecked Sendable {
  let topics: Set<String>
  private let waiting = Locked<[String]>([])
  private let ready = DispatchSemaphore(value: 0)
  private let closed = Atomic<Bool>(false)
  /// Bytes formatted but not yet handed to libmicrohttpd (the connection's thread only).
  private var pending = Array("retry: 1000\n: LiveMic\n\n".utf8)
  private var sent = 0

  init(topics: Set<String>) { self.topics = topics }

  func offer(_ line: String) {
    let added = waiting.withLock { lines in
      guard lines.count < 64 else { return false }
      lines.append(line)
      return true
    }
    if added { ready.signal() }
  }

  func close() {
    closed.store(true, ordering: .releasing)
    ready.signal()
  }

  /// Fills `buffer` with up to `capacity` bytes of the feed, waiting for lines (a comment every
  /// 10 s keeps the connection alive and finds a client that left); -1 once the door closes.
  func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
    while sent == pending.count {
      if closed.load(ordering: .acquiring) { return livemic_mhd_end_of_stream }
      let lines = waiting.withLock { lines in
        defer { lines.removeAll(keepingCapacity: true) }
        return lines
      }
      if !lines.isEmpty {
        pending = Array(lines.map { "data: \($0)\n\n" }.joined().utf8)
        sent = 0
      } else if ready.wait(timeout: .now() + .seconds(10)) == .timedOut {
        pending = Array(": alive\n\n".utf8)
        sent = 0
      }
    }
    let count = min(capacity, pending.count - sent)
    pending.withUnsafeBufferPointer { source in
      source.baseAddress.map { base in
        (base + sent).withMemoryRebound(to: CChar.self, capacity: count) {
          buffer.update(from: $0, count: count)
        }
      }
    }
    sent += count
    return count
  }
}

/// What a feed's callbacks reach: the feed and its door.
final class FeedContext {
  let feed: Feed
  let door: WebDoor
  init(feed: Feed, door: WebDoor) { (self.feed, self.door) = (feed, door) }
}

// libmicrohttpd's callbacks: non-capturing C functions reaching the door through their context.

let webAccessHandler: MHD_AccessHandlerCallback = {
  context, connection, url, method, _, upload, uploadSize, requestContext in
  guard let context, let connection, let url, let method, let uploadSize, let requestContext else {
    return .NO
  }
  let door = Unmanaged<WebDoor>.fromOpaque(context).takeUnretainedValue()
  return door.handle(
    connection, url: String(cString: url), method: String(cString: method), upload: upload,
    uploadSize: uploadSize,
    context: requestContext)
}

let webRequestCompleted: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
  guard let requestContext, let raw = requestContext.pointee else { return }
  Unmanaged<WebDoor.Request>.fromOpaque(raw).release()
  requestContext.pointee = nil
}

let webFeedRead: MHD_ContentReaderCallback = { context, _, buffer, capacity in
  guard let context, let buffer else { return livemic_mhd_end_with_error }
  let feed = Unmanaged<FeedContext>.fromOpaque(context).takeUnretainedValue().feed
  return feed.read(into: buffer, capacity: capacity)
}

let webFeedFree: MHD_ContentReaderFreeCallback = { context in
  guard let context else { return }
  let feedContext = Unmanaged<FeedContext>.fromOpaque(context).takeRetainedValue()
  feedContext.door.remove(feedContext.feed)
}
