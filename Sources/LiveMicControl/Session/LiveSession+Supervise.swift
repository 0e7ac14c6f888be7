import DSP
import Dispatch
import Foundation
import LV2Host
import LiveMicEngine
import LiveMicPresets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The supervisor's loop and its reconnection after a server loss. Thread: the supervisor.
extension LiveSession {
  /// Reopens the client under the same name once a server of the same name accepts clients
  /// again (retrying after 20 ms, backing off to 1 s), re-prepares the chain if the sample rate
  /// changed (keeping every parameter value), restarts audio with the start-quiet ramp and
  /// restores every connection the ports had. Nil when asked to stop meanwhile.
  func reconnect(closing dead: JackClient) -> (JackClient, ProcessState)? {
    let lostAt = DispatchTime.now()
    var dead: JackClient? = dead
    book.serverLost()
    var delayMilliseconds = 20
    var nextAttempt = DispatchTime.now() + .milliseconds(delayMilliseconds)
    var attempt = 0
    midiLearn.abandon("the JACK server went away before a MIDI controller moved")
    defer { JackMessages.setQuiet(false) }
    while true {
      if signals.stopRequested { return nil }
      _ = wake.wait(timeout: nextAttempt)
      if signals.stopRequested { return nil }
      // The control door stays open while the server is away.
      answerWhileAway()
      recorder.pollFinishingRecordings()
      guard DispatchTime.now() >= nextAttempt else { continue }
      attempt += 1
      transition(.attempt, reason: "attempt \(attempt)")
      delayMilliseconds = min(delayMilliseconds * 2, 1000)
      nextAttempt = .now() + .milliseconds(delayMilliseconds)
      let opened = openBeside(closing: dead)
      dead = nil
      if signals.stopRequested {
        opened?.close()
        return nil
      }
      guard let client = opened else { continue }
      let newPeriod =
        running.dependsOnPeriod
        && running.chain.context.helperLatencyChanges(
          toPeriod: client.bufferFrames, sampleRate: client.sampleRate)
      if client.sampleRate != running.chain.sampleRate || newPeriod {
        do {
          report(skipped: try running.reprepare(settings: settings(for: client)))
          Log.info(
            "\(Int(client.sampleRate)) Hz, \(client.bufferFrames) frames per period: the chain was re-prepared"
          )
        } catch {
          Log.error("cannot re-prepare the chain at \(Int(client.sampleRate)) Hz: \(error.description)")
          client.close()
          continue
        }
      }
      let state: ProcessState
      do { state = try start(client, chain: running.chain) } catch {
        Log.error(error.description)
        client.close()
        continue
      }
      transition(.reconnected, reason: "the server is back")
      bindMidi(state)
      if supervisorState.audio.clientActive {
        book.restore(client)
        if let route {
          let change = route.apply(client, book: book, afterServerLoss: true)
          if let change, change.mute {
            // The target did not come back, another did: a loss, muted before it is connected
            // (a loss the server's end interrupted goes on into this one).
            follow(change, route, client, state)
          } else {
            if let change { report(change, direction: "output") }
            endRouteLoss(route, client, state)  // a loss the server's end interrupted
          }
        }
        followAutoload(client, state)
        if let change = inputRoute?.apply(client, book: book) { report(change, direction: "input") }
      } else {
        // A new client starts active (and silent): suspended again, as it was; the book keeps
        // the connections for the unmute.
        client.deactivate()
      }
      let ms = Double(DispatchTime.now().uptimeNanoseconds - lostAt.uptimeNanoseconds) / 1e6
      stream.emit(
        "reconnected",
        [
          "server": .string(serverLabel), "ms": .number(ms), "sample_rate": .int(Int(client.sampleRate)),
          "buffer_frames": .int(client.bufferFrames), "restored": .int(book.restoredCount),
          "waiting": .int(book.pendingCount),
        ])
      Log.info(
        "reconnected to '\(serverLabel)' after " + String(format: "%.0f", ms) + " ms: "
          + "\(Int(client.sampleRate)) Hz, \(client.bufferFrames) frames per period, "
          + "\(book.restoredCount) connection(s) restored"
          + (book.pendingCount > 0 ? ", \(book.pendingCount) waiting for their ports or clients" : ""))
      return (client, state)
    }
  }

  /// Closes `dead` (when given) and opens a new client on a thread beside the request loop,
  /// answering requests meanwhile: either can take seconds on a server that is going away. Nil
  /// when the open failed, or (the thread then finishes alone) when a stop was requested.
  func openBeside(closing dead: JackClient?) -> JackClient? {
    let result = OpenResult()
    let (name, server, wake) = (options.clientName, options.serverName, wake)
    Thread.startOwn("livemic-reconnect") {
      dead?.close()
      let client = try? JackClient(name: name, server: server, wake: wake)
      result.state.withLock { $0 = (true, client) }
      wake.signal()
    }
    while true {
      let (done, client) = result.state.withLock { $0 }
      if done { return client }
      if signals.stopRequested { return nil }
      _ = wake.wait(timeout: .now() + .milliseconds(50))
      answerWhileAway()
    }
  }

  /// What the thread of `openBeside` hands back: done, and the client it opened (if any).
  final class OpenResult: @unchecked Sendable {
    let state = Locked<(Bool, JackClient?)>((false, nil))
  }

  enum Outcome { case stop, serverLost }

  /// Watches the engine's events until asked to stop or the server goes away: each wake runs
  /// the steps below in turn.
  func supervise(_ connection: LiveConnection) -> Outcome {
    let (client, state, events) = (connection.client, connection.state, connection.client.events)
    // A server that went away freewheeling leaves the writers at their real-time pace.
    defer { if connection.watch.freewheel.on { recorder.paceWriters(freewheeling: false) } }
    // What the old client's graph left to settle is stale, except a route loss whose ramp is
    // still fading (the reconnection's own route step): looked at again at once.
    routing.graphSettled = route?.loss != nil ? .now() : nil
    while true {
      _ = events.wake.wait(timeout: nextWake(connection.watch))
      // First of all: a freewheel start speeds the writers up at once.
      recorder.followFreewheel(&connection.watch.freewheel, events)
      streamMeters(state)
      if signals.stopRequested { return stop(connection) }
      // Suspended (deactivated) on PipeWire, nothing reports a server loss: ask once a second.
      if suspended && DispatchTime.now() >= connection.watch.nextLivenessProbe {
        connection.watch.nextLivenessProbe = .now() + .seconds(1)
        if !client.serverAnswers() { events.serverLost.store(true, ordering: .releasing) }
      }
      // Taken first, so a callback that comes during the check is seen at the next wake.
      if events.serverLost.exchange(false, ordering: .acquiringAndReleasing) {
        guard !suspended && connection.shutdownWasAnError() else {
          events.serverLost.store(true, ordering: .releasing)
          // A suspend that was still fading out: the next client starts suspended (`run`).
          suspendFadeDeadline = nil
          return .serverLost
        }
        Log.error(
          "PipeWire's libjack reported a shutdown while its daemon is still there and the audio runs on "
            + "(an error it reports that way, not a loss): LiveMic goes on")
      }
      answerSessionSaves(client)
      recorder.superviseTapConsumers(audioRunning: !suspended)
      answerRequests(connection)
      finishSuspend(client, state)
      pollLearns(state)
      recorder.pollFinishingRecordings()
      running.swapUnderway = state.slot.collect()
      client.applyRequestedLatency()
      followLatency(client)
      emitHealthEvery10Seconds(connection)
      followPresetFile(connection)
      followGraph(connection)
      if signals.takeUnmute() { _ = unmute(client, state) }
      reportXruns(connection)
      for line in running.drainPluginLogs() { Log.info(line) }
      if connection.reportFormatChanges() { followPeriod(client, state) }
    }
  }

  /// When the supervisor must wake at the latest: its timers, faster while a MIDI learn waits
  /// or a suspend fades out (5 ms), a swap is collected (10 ms) or a suspended client's server is probed.
  private func nextWake(_ watch: LiveConnection.Watch) -> DispatchTime {
    var due = min(
      doors.meters.nextWake(followed: metersFollowed), book.nextRetry ?? .distantFuture,
      routing.graphSettled ?? .distantFuture,
      recorder.nextFinishingDeadline ?? .distantFuture)
    if midiLearn.isWaiting { due = min(due, .now() + .milliseconds(5)) }
    // A reload does not wait for its fade: the old chain is collected here (and the swap a
    // later reload left waiting can begin).
    if running.swapUnderway { due = min(due, .now() + .milliseconds(10)) }
    if suspended { due = min(due, watch.nextLivenessProbe) }
    if suspendFadeDeadline != nil { due = min(due, .now() + .milliseconds(5)) }
    return due
  }

  /// Stops on a signal: fades the output out (at most 300 ms), closes the client, logs.
  private func stop(_ connection: LiveConnection) -> Outcome {
    let (client, state) = (connection.client, connection.state)
    transition(.stop, reason: "signal")
    suspendFadeDeadline = nil
    midiLearn.abandon("LiveMic stopped before a MIDI controller moved")
    state.ramp.fadeOut()
    _ = waitUntilSilent(state) { client.events.serverLost.load(ordering: .acquiring) }
    client.close()
    Log.info("stopped after \(state.cycles.load(ordering: .relaxed)) cycles; " + running.stageSummary())
    return .stop
  }

  /// Answers the `learn` requests whose controller moved (mapping it on the running chain)
  /// or whose wait is over.
  private func pollLearns(_ state: ProcessState) {
    midiLearn.poll(state.midi) { cc, channel, key in
      running.learn(cc: cc, channel: channel - 1, key: key)
      bindMidi(state)
      Log.info("MIDI CC \(cc) on channel \(channel) now sets '\(key)'")
    }
  }

  /// Answers the control requests that arrived; `learn` and `record stop` answer later.
  private func answerRequests(_ connection: LiveConnection) {
    let (client, state) = (connection.client, connection.state)
    for request in control?.takeRequests() ?? [] {
      if request.request["cmd"]?.string == ControlProtocol.Command.learn.rawValue {
        midiLearn.start(request, chain: running.chain, midi: state.midi)
      } else if request.request["cmd"]?.string == ControlProtocol.Command.record.rawValue
        && request.request["action"]?.string == ControlProtocol.RecordAction.stop.rawValue
      {
        recorder.startRecordStop(request, audioRunning: !suspended)
      } else {
        request.answer(answer(request.request, client: client, state: state))
      }
    }
  }

  /// Reports the chain's latency to JACK when it changed (plugins may report a new one at any
  /// time: a convolver once its impulse is loaded).
  private func followLatency(_ client: JackClient) {
    let latency = running.chain.latencyFrames
    if latency != Int(client.events.chainLatencyFrames.load(ordering: .relaxed)) {
      client.setChainLatency(frames: latency)
      Log.info("chain latency is now \(latency) frames (reported to JACK)")
    }
  }

  /// The `health` event, every 10 s: DSP load, xruns, cycles, stage times.
  private func emitHealthEvery10Seconds(_ connection: LiveConnection) {
    let (client, state) = (connection.client, connection.state)
    guard
      DispatchTime.now().uptimeNanoseconds > connection.watch.lastHealth.uptimeNanoseconds + 10_000_000_000
    else { return }
    connection.watch.lastHealth = .now()
    let xrunsNow = client.events.xruns.load(ordering: .relaxed)
    stream.emit(
      "health",
      [
        "dsp_load_percent": .number(Double(client.cpuLoadPercent)), "xruns": .int(Int(xrunsNow)),
        "xruns_last_minute": .int(Int(connection.watch.xrunHistory.lastMinute(total: xrunsNow))),
        "cycles": .int(Int(state.cycles.load(ordering: .relaxed))), "stages": .string(running.stageSummary()),
      ])
  }

  /// Reloads the preset on SIGHUP, or with `--watch` when its file changed.
  private func followPresetFile(_ connection: LiveConnection) {
    let (client, state) = (connection.client, connection.state)
    if signals.takeReload() {
      reloadPreset(client, state: state, reason: "SIGHUP")
    } else if options.watch, running.presetFileChanged() {
      reloadPreset(client, state: state, reason: "the file changed")
    }
  }

  /// Keeps the book of connections current (a user may patch in qjackctl) and makes the
  /// pending connections once their ports appear or their clients are active (graph changes,
  /// client registrations, and the book's back-off timer for connections JACK refused). The
  /// graph settles first (100 ms after the first change, answering requests meanwhile): a
  /// client that quits drops its connections a moment before its ports, and that must not read
  /// as a user undoing them.
  private func followGraph(_ connection: LiveConnection) {
    let (client, state, events) = (connection.client, connection.state, connection.client.events)
    if events.graphChanged.exchange(false, ordering: .acquiringAndReleasing) && routing.graphSettled == nil {
      routing.graphSettled = .now() + .milliseconds(100)
    }
    if let settled = routing.graphSettled, DispatchTime.now() >= settled {
      routing.graphSettled = nil
      _ = events.graphChanged.exchange(false, ordering: .acquiringAndReleasing)
      if suspended { return }
      book.connectPending(client)
      followRoutes(client, state)
      book.record(client, vanished: events.takeVanishedPorts())
    }
    if !suspended && book.retryDue { book.connectPending(client) }
  }

  /// Keeps the last minute of xrun totals (sampled at every wake, at least once a second) and
  /// reports new xruns at most once a second, in the log and the stream, with the counts
  /// behind them.
  private func reportXruns(_ connection: LiveConnection) {
    let (client, events) = (connection.client, connection.client.events)
    let xruns = events.xruns.load(ordering: .relaxed)
    let now = DispatchTime.now()
    connection.watch.xrunHistory.record(xruns, at: now)
    guard xruns != connection.watch.reportedXruns,
      now.uptimeNanoseconds > connection.watch.lastXrunReport.uptimeNanoseconds + 1_000_000_000
    else { return }
    let lastMinute =
      xruns - min(connection.watch.xrunHistory.oldestTotal ?? 0, connection.watch.reportedXruns)
    let delay = Float(bitPattern: events.lastXrunMicrosecondsBits.load(ordering: .relaxed))
    let load = client.cpuLoadPercent
    Log.info(
      "xruns: \(xruns - connection.watch.reportedXruns) new, \(xruns) in total, \(lastMinute) in the last minute; last delay "
        + String(format: "%.0f", delay) + " µs; DSP load " + String(format: "%.1f", load) + "%")
    stream.emit(
      "xrun",
      [
        "new": .int(Int(xruns - connection.watch.reportedXruns)), "total": .int(Int(xruns)),
        "last_minute": .int(Int(lastMinute)),
        "delay_us": .number(Double(delay)), "dsp_load_percent": .number(Double(load)),
      ])
    connection.watch.reportedXruns = xruns
    connection.watch.lastXrunReport = now
  }
}
