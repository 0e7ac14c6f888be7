import DSP
import Foundation

/// The messages of one plugin stage: `patch:Set`/`patch:Get` atoms on their way to the
/// plugin's control input (supervisor → audio thread), and the objects the plugin writes on its
/// atom outputs (audio thread → supervisor), each through a preallocated single-producer,
/// single-consumer ring; and the property values the plugin last reported.
///
/// Thread: `send` and `reported` on any non-real-time thread (serialized by locks the audio
/// thread never touches); `incoming` and `outgoing` are read and written by the audio thread.
final class PluginMessages: @unchecked Sendable {
  /// The largest message either way (a `patch:Set` with a path of up to about 4000 bytes).
  static let maxMessageBytes = 4096
  /// supervisor → audio thread.
  let incoming = WorkerRing(bytes: 32768, maxMessageBytes: maxMessageBytes)
  /// audio thread → supervisor.
  let outgoing = WorkerRing(bytes: 32768, maxMessageBytes: maxMessageBytes)
  /// Where the audio thread gathers a run's incoming messages (each 8-byte aligned) before it
  /// copies them into every control input: room for four of the largest.
  let scratch: UnsafeMutableRawPointer
  static let scratchBytes = 4 * maxMessageBytes
  private let urids: URIDMap
  private let sending = NSLock()
  /// The values the plugin last reported (`patch:Set` on its outputs), by property URID.
  private let values = Locked<[UInt32: PropertyValue]>([:])
  private let reading = NSLock()
  private let readBuffer: UnsafeMutableRawPointer

  init(urids: URIDMap) {
    self.urids = urids
    scratch = .allocate(byteCount: Self.scratchBytes, alignment: 16)
    scratch.initializeMemory(as: UInt8.self, repeating: 0, count: Self.scratchBytes)
    readBuffer = .allocate(byteCount: Self.maxMessageBytes, alignment: 16)
  }

  deinit {
    scratch.deallocate()
    readBuffer.deallocate()
  }

  /// Queues an atom (header and body) for the plugin's next run; false when the ring is full.
  @discardableResult
  func send(_ atom: [UInt8]) -> Bool {
    sending.lock()
    defer { sending.unlock() }
    return atom.withUnsafeBytes { incoming.write(size: UInt32($0.count), data: $0.baseAddress) }
  }

  /// The values the plugin has reported so far, after reading what it wrote since the last call.
  func reported() -> [UInt32: PropertyValue] {
    reading.lock()
    defer { reading.unlock() }
    while let size = outgoing.read(into: readBuffer) {
      let bytes = UnsafeRawBufferPointer(start: readBuffer, count: Int(size))
      if let (property, value) = PatchMessage.parseSet(bytes, urids: urids) {
        values.withLock { $0[property] = value }
      }
    }
    return values.withLock { $0 }
  }
}

extension PluginStage {
  /// The writable property `name` (its short name or URI) of the plugin and `text` read as its
  /// value (a relative path against `folder`; a path must name an existing file).
  static func property(
    _ name: String, text: String, of id: String, info: PluginInfo, folder: String?
  ) throws(PluginError) -> (PropertyInfo, PropertyValue) {
    let writable = info.properties.filter(\.writable)
    guard info.ports.contains(where: { $0.takesMessages }),
      let property = writable.first(where: { $0.name == name || $0.uri == name })
    else {
      throw .unknownProperty(id: id, name: name, known: writable.map(\.name))
    }
    switch PropertyValue.parse(text, range: property.range, relativeTo: folder) {
    case .failure(let reason): throw .badPropertyValue(id: id, name: property.name, reason: reason.text)
    case .success(let value):
      if case .path(let path) = value, !FileManager.default.fileExists(atPath: path) {
        throw .badPropertyValue(
          id: id, name: property.name, reason: "names the file '\(path)', which does not exist")
      }
      return (property, value)
    }
  }

  /// Sets a writable property while the plugin runs: a `patch:Set` for its next run, the
  /// loading left to the plugin (and its worker). Returns the value sent. Off the audio thread.
  @discardableResult
  public func setProperty(_ name: String, text: String) throws(PluginError) -> PropertyValue {
    let (property, value) = try Self.property(name, text: text, of: id, info: info, folder: nil)
    guard
      messages.send(
        PatchMessage.set(property: world.urids.map(property.uri), value: value, urids: world.urids))
    else {
      throw .badPropertyValue(
        id: id, name: property.name, reason: "cannot be sent now: too many messages wait")
    }
    return value
  }

  /// The property values the plugin has reported (its answers to `patch:Get`, and the
  /// `patch:Set` it sends when a property changes), by property name. Off the audio thread.
  public func propertyValues() -> [String: PropertyValue] {
    var result: [String: PropertyValue] = [:]
    for (urid, value) in messages.reported() {
      guard let uri = world.urids.unmap(urid).map({ String(cString: $0) }) else { continue }
      let name = info.properties.first { $0.uri == uri }?.name ?? uri
      result[name] = value
    }
    return result
  }

  /// Asks the plugin for every property's value (a `patch:Get`); the answer comes with its next
  /// runs and shows in `propertyValues`. Off the audio thread.
  public func requestProperties() { messages.send(PatchMessage.get(urids: world.urids)) }
}
