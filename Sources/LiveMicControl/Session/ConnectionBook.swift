import Dispatch
import LiveMicEngine

/// The connections of LiveMic's ports, as last seen: those LiveMic made and those a user made
/// (in qjackctl, with jack_connect…). After a server restart they are made again. A connection
/// whose other port does not exist yet, or that JACK refused (jackd2 refuses to connect a port
/// of a client that has registered it but is not active yet), is pending: it is tried again on
/// every graph change and, while one was refused, on a back-off timer (`nextRetry`).
///
/// Thread: the supervisor.
final class ConnectionBook {
  /// (LiveMic's port short name, the other port's full name, LiveMic's port is an output).
  private struct Connection: Hashable {
    let ours: String
    let theirs: String
    let output: Bool
  }
  private var known: Set<Connection> = []
  private var pending: Set<Connection> = []
  /// Pending connections whose port exists but that JACK refused, already logged: each failure
  /// is logged once, not at every retry.
  private var refused: Set<Connection> = []
  /// The back-off between retries of refused connections: 50 ms, doubling up to 2 s.
  private static let firstRetryMilliseconds = 50
  private static let lastRetryMilliseconds = 2000
  private var retryMilliseconds = ConnectionBook.firstRetryMilliseconds
  /// When the refused connections are to be tried again; nil while none is refused.
  private(set) var nextRetry: DispatchTime?
  /// The book before the last reading that forgot connections, and when that was: a server
  /// dying can tear connections down before it reports its death (PipeWire's libjack does), and
  /// those connections must not count as a user's undoing (`serverLost`).
  private var beforeForgetting: Set<Connection> = []
  private var forgotAt: DispatchTime?
  private(set) var restoredCount = 0
  /// Connections that went while their other port stayed, and when that was read: a user's
  /// undoing, unless that port vanishes within `dropGraceSeconds` (a client or a driver, such
  /// as a NetJACK2 slave's when its link drops, tears its connections down a moment before its
  /// ports, and a reading of the graph can fall in between).
  private var dropped: [Connection: DispatchTime] = [:]
  private static let dropGraceSeconds = 2.0

  var pendingCount: Int { pending.count }

  /// Every connection the book holds, made or pending, by LiveMic's port short name (sorted):
  /// what a session save keeps, also while suspended (when JACK shows none).
  var wanted: [String: [String]] {
    var result: [String: [String]] = [:]
    for c in known.union(pending) { result[c.ours, default: []].append(c.theirs) }
    return result.mapValues { $0.sorted() }
  }

  /// Reads the current connections of the client's ports. `vanished` names the ports
  /// unregistered since the last reading: a connection to one of them that is gone was dropped
  /// with the port (its client restarted it, a NetJACK2 link came back) even when the port is
  /// back already, so it is wanted still and made again at once.
  func record(_ client: JackClient, vanished: Set<String> = []) {
    var now: Set<Connection> = []
    for (full, output) in client.allPortNames {
      let short = String(full.split(separator: ":", maxSplits: 1).last ?? "")
      for other in client.connections(of: full) {
        now.insert(Connection(ours: short, theirs: other, output: output))
      }
    }
    // A connection whose other port vanished (its client quit, the server is stopping) stays
    // wanted and is made again when the port reappears, also when it went a moment before its
    // port; one a user undid is forgotten.
    let readAt = DispatchTime.now()
    let gone = { (c: Connection) in !client.portExists(c.theirs) || vanished.contains(c.theirs) }
    dropped = dropped.filter {
      Double(readAt.uptimeNanoseconds - $0.value.uptimeNanoseconds) < Self.dropGraceSeconds * 1e9
    }
    for (c, _) in dropped where gone(c) {
      pending.insert(c)
      dropped[c] = nil
    }
    for c in known where !now.contains(c) {
      if gone(c) { pending.insert(c) } else if !pending.contains(c) { dropped[c] = readAt }
    }
    pending.subtract(now)
    refused.formIntersection(pending)
    if refused.isEmpty { nextRetry = nil }
    let next = now.union(pending)
    if !known.isSubset(of: next) {
      beforeForgetting = known
      forgotAt = .now()
    }
    known = next
    if !vanished.isEmpty { connectPending(client) }
  }

  /// The server went away: connections forgotten in the `graceSeconds` before were torn down by
  /// the dying server, not by a user, and are wanted again.
  func serverLost(graceSeconds: Double = 2) {
    guard let forgotAt,
      DispatchTime.now().uptimeNanoseconds - forgotAt.uptimeNanoseconds
        < UInt64(graceSeconds * 1e9)
    else { return }
    known.formUnion(beforeForgetting)
    self.forgotAt = nil
  }

  /// Connects one of LiveMic's ports (short name) as asked on the command line or by default;
  /// when the other port does not exist yet (reported once) or JACK refuses the connection
  /// (logged once), the connection is pending and made later.
  func want(_ ours: String, _ theirs: String, output: Bool, client: JackClient) {
    let c = Connection(ours: ours, theirs: theirs, output: output)
    known.insert(c)
    guard client.portExists(theirs) else {
      pending.insert(c)
      Log.info("'\(theirs)' does not exist yet: LiveMic connects to it when it appears")
      return
    }
    if let error = attempt(c, client) {
      pending.insert(c)
      refuse(c, error)
    }
  }

  /// Makes every known connection on a new client; those whose port is missing or that JACK
  /// refuses are pending.
  func restore(_ client: JackClient) {
    restoredCount = 0
    pending = []
    dropped = [:]
    refused = []
    nextRetry = nil
    for c in known {
      guard client.portExists(c.theirs) else {
        pending.insert(c)
        continue
      }
      if let error = attempt(c, client) {
        pending.insert(c)
        refuse(c, error)
      } else {
        restoredCount += 1
      }
    }
  }

  private func forget(_ c: Connection) {
    known.remove(c)
    pending.remove(c)
    refused.remove(c)
    beforeForgetting.remove(c)
    dropped[c] = nil
    if refused.isEmpty { nextRetry = nil }
  }

  /// Whether the back-off timer says to try the refused connections again now.
  var retryDue: Bool {
    guard let nextRetry else { return false }
    return DispatchTime.now() >= nextRetry
  }

  /// Makes the pending connections whose ports now exist; one JACK refuses stays pending (its
  /// first refusal is logged) and is tried again on the back-off timer.
  func connectPending(_ client: JackClient) {
    let due = retryDue
    for c in pending where client.portExists(c.theirs) {
      if let error = attempt(c, client) {
        refuse(c, error)
        continue
      }
      pending.remove(c)
      let wasRefused = refused.remove(c) != nil
      Log.info(
        "connected \(describe(c, client)) ("
          + (wasRefused ? "JACK accepted it on a later try" : "its port appeared")
          + ")")
    }
    if refused.isEmpty {
      nextRetry = nil
    } else if due || nextRetry == nil {
      if due { retryMilliseconds = min(retryMilliseconds * 2, Self.lastRetryMilliseconds) }
      nextRetry = .now() + .milliseconds(retryMilliseconds)
    }
  }

  /// Notes that JACK refused a pending connection: the first refusal is logged and starts the
  /// back-off timer from its shortest interval.
  private func refuse(_ c: Connection, _ error: EngineError) {
    guard refused.insert(c).inserted else { return }
    Log.error(error.description + "; LiveMic keeps trying (the other client may not be active yet)")
    retryMilliseconds = Self.firstRetryMilliseconds
    nextRetry = .now() + .milliseconds(retryMilliseconds)
  }

  private func describe(_ c: Connection, _ client: JackClient) -> String {
    c.output ? "\(client.name):\(c.ours) → \(c.theirs)" : "\(c.theirs) → \(client.name):\(c.ours)"
  }

  /// Connects `c`; nil when it is made (or was there), else JACK's refusal.
  private func attempt(_ c: Connection, _ client: JackClient) -> EngineError? {
    let ours = "\(client.name):\(c.ours)"
    do throws(EngineError) {
      if c.output { try client.connect(ours, c.theirs) } else { try client.connect(c.theirs, ours) }
      return nil
    } catch {
      return error
    }
  }
}

extension ConnectionBook {
  /// Forgets a connection a route moved away from (LiveMic's port short name, the other port),
  /// so it is not made again when that port reappears: the route decides where it goes.
  func forget(_ ours: String, _ theirs: String) {
    for output in [false, true] { forget(Connection(ours: ours, theirs: theirs, output: output)) }
  }
}
