import Foundation
import Testing

/// A minimal OSC encoder for the tests (strings and 32-bit floats).
enum OSC {
  static func padded(_ s: String) -> [UInt8] {
    var b = Array(s.utf8) + [0]
    while b.count % 4 != 0 { b.append(0) }
    return b
  }

  static func message(_ path: String, _ args: [Any]) -> [UInt8] {
    var tags = ","
    var data: [UInt8] = []
    for a in args {
      if let s = a as? String {
        tags += "s"
        data += padded(s)
      } else if let f = a as? Float {
        tags += "f"
        withUnsafeBytes(of: f.bitPattern.bigEndian) { data += $0 }
      } else if let i = a as? Int32 {
        tags += "i"
        withUnsafeBytes(of: i.bigEndian) { data += $0 }
      }
    }
    return padded(path) + padded(tags) + data
  }

  /// Decodes a message's path and its string, int32 and float arguments (nil: not OSC).
  static func decode(_ bytes: [UInt8]) -> (path: String, args: [Any])? {
    var at = 0
    func string() -> String? {
      guard let end = bytes[at...].firstIndex(of: 0) else { return nil }
      let s = String(decoding: bytes[at..<end], as: UTF8.self)
      at = (end + 4) & ~3
      return s
    }
    func word() -> UInt32? {
      guard at + 4 <= bytes.count else { return nil }
      defer { at += 4 }
      return bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
    guard let path = string(), path.hasPrefix("/"), let tags = string(), tags.hasPrefix(",") else {
      return nil
    }
    var args: [Any] = []
    for tag in tags.dropFirst() {
      switch tag {
      case "s": guard let s = string() else { return nil }; args.append(s)
      case "i": guard let w = word() else { return nil }; args.append(Int32(bitPattern: w))
      case "f": guard let w = word() else { return nil }; args.append(Float(bitPattern: w))
      default: return nil
      }
    }
    return (path, args)
  }

  /// Sends datagrams to 127.0.0.1:port from one socket; returns what came back within `wait`.
  static func send(_ datagrams: [[UInt8]], port: Int, wait seconds: Double = 0) -> [[UInt8]] {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    for d in datagrams {
      _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(fd, d, d.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
    guard seconds > 0 else { return [] }
    var timeout = timeval(tv_sec: Int(seconds), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var replies: [[UInt8]] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {  // a subscription keeps datagrams coming
      let n = recv(fd, &buffer, buffer.count, 0)
      if n <= 0 { break }
      replies.append(Array(buffer[0..<n]))
    }
    return replies
  }
}

extension EndToEnd {
  @Suite("OSC control", .serialized)
  struct OscTests {
    @Test(
      "OSC on loopback only: /livemic/set and /livemic/UNIT/PARAM change the level; junk is ignored")
    func oscControl() throws {
      let port = 17000 + Int(getpid() % 2000)
      let rig = try LiveAudioTests.rig(
        ["-p", "flat", "-c", "input.bypass=0", "--osc", "\(port)"],
        signal: .sine(frequencyHz: 500, amplitude: 0.2))
      defer { rig.stop() }
      let livemic = rig.livemic
      #expect(livemic.waitForLog("OSC on 127.0.0.1:\(port)"), "\(livemic.log)")
      // Bound to the loopback address only (0100007F in /proc/net/udp).
      let udp = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
      let hexPort = String(format: "%04X", port)
      #expect(udp.contains("0100007F:\(hexPort)") && !udp.contains("00000000:\(hexPort)"), "\(udp)")
      // The level relative to the input's (flat: the output is the input at 0 dB), retaken when
      // the server spoilt its window (a gap, an xrun, the generator off, a cycle LiveMic missed).
      let input = 0.2 / 2.squareRoot()
      let witness = LiveAudioTests.witness(rig)
      func level(near db: Double) throws -> Double {
        try retaking("the level near \(db) dB") {
          let take = try witness.take(frames: 4800, channels: [1], settleMicroseconds: 300_000)
          return Take(20 * log10(rms(take.value[0][...]) / input), spoilt: take.spoilt)
        }
      }
      rig.waitForAudio()
      #expect(abs(try level(near: 0)) < 0.05)
      let replies = OSC.send(
        [OSC.message("/livemic/set", ["input.gain_db", Float(-6)])], port: port, wait: 2)
      #expect(replies.first.map { String(decoding: $0, as: UTF8.self).contains("\"ok\":true") } == true)
      #expect(abs(try level(near: -6) - -6) < 0.05)
      _ = OSC.send([OSC.message("/livemic/input/gain_db", [Float(-12)])], port: port, wait: 1)
      #expect(abs(try level(near: -12) - -12) < 0.05)
      // 10,000 random datagrams and malformed messages: ignored or answered with an error.
      var junk: [[UInt8]] = []
      for i in 0..<10_000 {
        if i % 3 == 0 {
          junk.append(OSC.message("/livemic/set", ["no.such_key", Float(i)]))
        } else {
          junk.append((0..<(1 + i % 300)).map { _ in UInt8.random(in: 0...255) })
        }
      }
      for start in stride(from: 0, to: junk.count, by: 500) {
        _ = OSC.send(Array(junk[start..<min(start + 500, junk.count)]), port: port)
        usleep(20_000)
      }
      let ok = OSC.send([OSC.message("/livemic/set", ["input.gain_db", Float(0)])], port: port, wait: 3)
      #expect(
        ok.contains { String(decoding: $0, as: UTF8.self).contains("\"ok\":true") },
        "a valid request after the junk")
      #expect(abs(try level(near: 0)) < 0.05)
      #expect(livemic.process.isRunning)
    }
  }
}
