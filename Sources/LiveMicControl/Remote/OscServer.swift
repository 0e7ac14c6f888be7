import CLo
import DSP
import Foundation
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The OSC door to the control API (off by default; `--osc PORT`): a UDP socket bound to
/// 127.0.0.1 (or `--osc-host`), each datagram decoded with liblo and turned into the same
/// request the control socket takes, answered on the supervisor's thread. The answer goes
/// back to the sender as `/livemic/reply s` (the JSON response line). Undecodable datagrams and
/// unknown paths are ignored (answered with an error reply where the message decoded).
///
/// Paths: `/livemic/set s f`, `/livemic/UNIT/PARAM f` (the key `UNIT.PARAM`), `/livemic/preset s`, `/livemic/mode ss`,
/// `/livemic/mute [s]`, `/livemic/unmute`, `/livemic/status`, and `/livemic/subscribe [s]` /
/// `/livemic/unsubscribe [s]` (topic `meters` or `events`; both when absent): subscribers
/// (at most 8, the oldest dropped) get `/livemic/meters f×9` about 20 times a second and
/// `/livemic/event s s` (name, JSON line). Never real-time.
final class OscServer: @unchecked Sendable {
  /// A subscriber's address and the topics it follows.
  private struct Subscriber {
    var address: sockaddr_storage
    var length: socklen_t
    var topics: Set<String>
    /// The address's bytes, to tell subscribers apart.
    var key: [UInt8] { withUnsafeBytes(of: address) { Array($0.prefix(Int(length))) } }
  }

  private let fd: Int32
  private let control: ControlServer
  private let subscribers = Locked<[Subscriber]>([])
  let port: Int

  init(host: String, port: Int, control: ControlServer) throws(SessionError) {
    self.control = control
    self.port = port
    fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard fd >= 0, inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
      throw .osc(reason: "'\(host)' is not an IPv4 address")
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      close(fd)
      throw .osc(reason: "cannot listen on \(host):\(port) (\(String(cString: strerror(errno))))")
    }
    Thread.startOwn("livemic-osc") { [unowned self] in self.loop() }
  }

  func shutdown() {
    Glibc.shutdown(fd, Int32(SHUT_RDWR))
    close(fd)
  }

  private func loop() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      var sender = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let n = withUnsafeMutablePointer(to: &sender) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(fd, &buffer, buffer.count, 0, $0, &length)
        }
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return }
      guard let request = decode(&buffer, n) else { continue }
      if let command = request["cmd"]?.string, command == "subscribe" || command == "unsubscribe" {
        send(subscription(command, request["topic"]?.string, sender, length), to: &sender, length: length)
        continue
      }
      let reply =
        request.isEmpty ? ControlServer.error("unknown OSC path or arguments") : control.submit(request)
      send(reply, to: &sender, length: length)
    }
  }

  /// The control request an OSC message stands for; nil when the datagram is not OSC, empty
  /// when it is OSC but not a LiveMic message.
  private func decode(_ buffer: inout [UInt8], _ size: Int) -> JSONObject? {
    guard let (path, args) = OscCodec.decode(&buffer, size) else { return nil }
    func arg(_ i: Int) -> JSONValue? { i < args.count ? args[i] : nil }
    let parts = path.split(separator: "/").map(String.init)
    guard parts.first == "livemic", parts.count >= 2 else { return [:] }
    switch (parts[1], parts.count) {
    case ("set", 2):
      guard let key = arg(0)?.string, let value = arg(1), value.number != nil else { return [:] }
      return ["cmd": .string("set"), "key": .string(key), "value": value]
    case ("preset", 2):
      guard let name = arg(0)?.string else { return [:] }
      return ["cmd": .string("preset"), "action": .string("load"), "name": .string(name)]
    case ("mode", 2):
      guard let id = arg(0)?.string, let mode = arg(1)?.string else { return [:] }
      return ["cmd": .string("mode"), "id": .string(id), "mode": .string(mode)]
    case ("mute", 2):
      return ["cmd": .string("mute"), "mode": arg(0) ?? .string("ramp")]
    case ("unmute", 2), ("status", 2):
      return ["cmd": .string(parts[1])]
    case ("subscribe", 2), ("unsubscribe", 2):
      return ["cmd": .string(parts[1]), "topic": arg(0) ?? .null]
    case (_, 3...):
      guard let value = arg(0), value.number != nil else { return [:] }
      return ["cmd": .string("set"), "key": .string(parts[1...].joined(separator: ".")), "value": value]
    default:
      return [:]
    }
  }

  /// Adds or removes the sender's subscription; the reply line lists its topics now.
  private func subscription(
    _ command: String, _ topic: String?, _ sender: sockaddr_storage, _ length: socklen_t
  ) -> String {
    if let topic, !ControlServer.topics.contains(topic) {
      return ControlServer.error("unknown topic '\(topic)' (topics: meters, events)")
    }
    let named = topic.map { Set([$0]) } ?? Set(ControlServer.topics)
    let fresh = Subscriber(address: sender, length: length, topics: [])
    let key = fresh.key
    let now: Set<String> = subscribers.withLock { list in
      var entry = list.first(where: { $0.key == key }) ?? fresh
      list.removeAll(where: { $0.key == key })
      if command == "subscribe" { entry.topics.formUnion(named) } else { entry.topics.subtract(named) }
      if !entry.topics.isEmpty { list.append(entry) }
      if list.count > 8 { list.removeFirst() }
      return entry.topics
    }
    return ControlServer.answer(["topics": JSONValue(now.sorted())])
  }

  /// True when some OSC subscriber follows `topic`.
  func hasSubscribers(_ topic: String) -> Bool {
    subscribers.withLock { $0.contains { $0.topics.contains(topic) } }
  }

  /// Sends `/livemic/meters` (floats) to the meter subscribers. Thread: the supervisor.
  func sendMeters(_ values: [Float]) {
    guard let message = lo_message_new() else { return }
    defer { lo_message_free(message) }
    for v in values { lo_message_add_float(message, v) }
    broadcast("meters", message, path: "/livemic/meters")
  }

  /// Sends `/livemic/event s s` (name, JSON line) to the event subscribers. Thread: the supervisor.
  func sendEvent(_ name: String, _ line: String) {
    guard let message = lo_message_new() else { return }
    defer { lo_message_free(message) }
    lo_message_add_string(message, name)
    lo_message_add_string(message, line)
    broadcast("events", message, path: "/livemic/event")
  }

  private func broadcast(_ topic: String, _ message: lo_message, path: String) {
    var size = 0
    guard let data = lo_message_serialise(message, path, nil, &size) else { return }
    defer { free(data) }
    for var s in subscribers.withLock({ $0.filter { $0.topics.contains(topic) } }) {
      _ = withUnsafePointer(to: &s.address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(fd, data, size, Int32(MSG_DONTWAIT), $0, s.length)
        }
      }
    }
  }

  /// Sends `/livemic/reply s` with the response line back to the sender.
  private func send(_ reply: String, to sender: inout sockaddr_storage, length: socklen_t) {
    guard let message = lo_message_new() else { return }
    defer { lo_message_free(message) }
    lo_message_add_string(message, reply)
    var size = 0
    guard let data = lo_message_serialise(message, "/livemic/reply", nil, &size) else { return }
    defer { free(data) }
    _ = withUnsafePointer(to: &sender) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, data, size, 0, $0, length) }
    }
  }
}
