import Dispatch
import LiveMicEngine

/// The connections of LiveMic's ports, as last seen: those LiveMic made and those a user made
/// (in qjackctl, with jack_connect…). After a server restart they are made again; a connection
/// whose other port does not exist yet waits until that port appears.
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
  /// The book before the last reading that forgot connections, and when that was: a server
  /// dying can tear connections down before it reports its death (PipeWire's libjack does), and
  /// those connections must not count as a user's undoing (`serverLost`).
  private var beforeForgetting: Set<Connection> = []
  private var forgotAt: DispatchTime?
  private(set) var restoredCount = 0

  var pendingCount: Int { pending.count }

  /// Reads the current connections of the client's ports. `vanished` names the ports
  /// unregistered since the last reading: a connection to one of them that is gone was dropped
  /// with the port (its client restarted it, a NetJACK2 link came back) even when the port is
  /// back already, so it is wanted still and made again at once.
  func record(_ client: JackClient, vanished: Set<String> = []) {
    var now: Set<Connection> = []
    for (full, output) in client.inputPortNames.map({ ($0, false) })
      + client.outputPortNames.map({ ($0, true) })
    {
      let short = String(full.split(separator: ":", maxSplits: 1).last ?? "")
      for other in client.connections(of: full) {
        now.insert(Connection(ours: short, theirs: other, output: output))
      }
    }
    // A connection whose other port vanished (its client quit, the server is stopping) stays
    // wanted and is made again when the port reappears; one a user undid is forgotten.
    for c in known where !now.contains(c) && (!client.portExists(c.theirs) || vanished.contains(c.theirs)) {
      pending.insert(c)
    }
    pending.subtract(now)
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
  /// when the other port does not exist yet, the connection waits for it (reported once).
  func want(_ ours: String, _ theirs: String, output: Bool, client: JackClient) {
    let c = Connection(ours: ours, theirs: theirs, output: output)
    known.insert(c)
    guard client.portExists(theirs) else {
      pending.insert(c)
      Log.info("'\(theirs)' does not exist yet: LiveMic connects to it when it appears")
      return
    }
    let full = "\(client.name):\(ours)"
    do {
      if output { try client.connect(full, theirs) } else { try client.connect(theirs, full) }
    } catch {
      Log.error(error.description)
    }
  }

  /// Makes every known connection on a new client; those whose port is missing wait.
  func restore(_ client: JackClient) {
    restoredCount = 0
    pending = []
    for c in known {
      if connect(c, client) { restoredCount += 1 } else { pending.insert(c) }
    }
  }

  /// Makes the waiting connections whose ports now exist.
  func connectPending(_ client: JackClient) {
    for c in pending where connect(c, client) {
      pending.remove(c)
      Log.info(
        "connected \(c.output ? "\(client.name):\(c.ours) → \(c.theirs)" : "\(c.theirs) → \(client.name):\(c.ours)") (its port appeared)"
      )
    }
  }

  private func connect(_ c: Connection, _ client: JackClient) -> Bool {
    guard client.portExists(c.theirs) else { return false }
    let ours = "\(client.name):\(c.ours)"
    do {
      if c.output { try client.connect(ours, c.theirs) } else { try client.connect(c.theirs, ours) }
      return true
    } catch {
      return false
    }
  }
}
