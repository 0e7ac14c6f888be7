import DSP
import Dispatch
import Foundation
import LV2Host
import LiveMicEngine
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
    abandonLearns("the JACK server went away before a MIDI controller moved")
    defer { JackMessages.setQuiet(false) }
    while true {
      if stopRequested.load(ordering: .acquiring) { return nil }
      _ = wake.wait(timeout: nextAttempt)
      if stopRequested.load(ordering: .acquiring) { return nil }
      // The control door stays open while the server is away.
      for request in control?.takeRequests() ?? [] { request.answer(answerWhileAway(request.request)) }
      pollFinishingRecordings()
      guard DispatchTime.now() >= nextAttempt else { continue }
      attempt += 1
      transition(.attempt, reason: "attempt \(attempt)")
      delayMilliseconds = min(delayMilliseconds * 2, 1000)
      nextAttempt = .now() + .milliseconds(delayMilliseconds)
      let opened = openBeside(closing: dead)
      dead = nil
      if stopRequested.load(ordering: .acquiring) {
        opened?.close()
        return nil
      }
      guard let client = opened else { continue }
      if client.sampleRate != chain.sampleRate {
        do {
          let built = try ChainBuilder.build(entries, settings: Self.settings(for: client))
          report(skipped: built.skipped)
          for p in chain.parameters where p.spec.kind != .output {
            built.chain.set(p.key, chain.targets.value(p.index))
          }
          chain = built.chain
          plugins = built.plugins
          Log.info("sample rate is now \(Int(client.sampleRate)) Hz: the chain was re-prepared")
        } catch {
          Log.error("cannot re-prepare the chain at \(Int(client.sampleRate)) Hz: \(error.description)")
          client.close()
          continue
        }
      }
      let state: ProcessState
      do { state = try start(client, chain: chain) } catch {
        Log.error(error.description)
        client.close()
        continue
      }
      transition(.reconnected, reason: "the server is back")
      bindMidi(state)
      if supervisorState.audio.clientActive {
        book.restore(client)
        if let change = route?.apply(client, book: book) { report(change, direction: "output") }
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
          "server": .string(serverLabel), "ms": .double(ms), "sample_rate": .int(Int(client.sampleRate)),
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
    let thread = Thread {
      dead?.close()
      let client = try? JackClient(name: name, server: server, wake: wake)
      result.state.withLock { $0 = (true, client) }
      wake.signal()
    }
    thread.name = "livemic-reconnect"
    thread.start()
    while true {
      let (done, client) = result.state.withLock { $0 }
      if done { return client }
      if stopRequested.load(ordering: .acquiring) { return nil }
      _ = wake.wait(timeout: .now() + .milliseconds(50))
      for request in control?.takeRequests() ?? [] { request.answer(answerWhileAway(request.request)) }
    }
  }

  /// What the thread of `openBeside` hands back: done, and the client it opened (if any).
  final class OpenResult: @unchecked Sendable {
    let state = Locked<(Bool, JackClient?)>((false, nil))
  }

  enum Outcome { case stop, serverLost }

  /// Watches the engine's events until asked to stop or the server goes away.
  func supervise(_ client: JackClient, state: ProcessState) -> Outcome {
    let events = client.events
    var reportedXruns: UInt64 = 0
    var lastXrunReport = DispatchTime(uptimeNanoseconds: 0)
    var bufferFrames = events.bufferFrames.load(ordering: .relaxed)
    var sampleRate = events.sampleRate.load(ordering: .relaxed)
    var freewheel = FreewheelWatch(droppedAtStart: dropCounts)
    // A server that went away freewheeling leaves the writers at their real-time pace.
    defer { if freewheel.on { paceWriters(freewheeling: false) } }
    var nextLivenessProbe = DispatchTime.now()
    xrunHistory.removeAll()  // a new client counts from zero
    graphSettled = nil
    while true {
      var due = min(
        nextWakeTimeout(), book.nextRetry ?? .distantFuture, graphSettled ?? .distantFuture,
        nextFinishingDeadline ?? .distantFuture)
      if !learning.isEmpty { due = min(due, .now() + .milliseconds(5)) }
      // A reload does not wait for its fade: the old chain is collected here (and the swap a
      // later reload left waiting can begin).
      if swapUnderway { due = min(due, .now() + .milliseconds(10)) }
      if suspended { due = min(due, nextLivenessProbe) }
      _ = events.wake.wait(timeout: due)
      // First of all: a freewheel start speeds the writers up at once.
      followFreewheel(&freewheel, events)
      streamMeters(state)
      if stopRequested.load(ordering: .acquiring) {
        transition(.stop, reason: "signal")
        abandonLearns("LiveMic stopped before a MIDI controller moved")
        state.ramp.fadeOut()
        let deadline = DispatchTime.now() + .milliseconds(300)
        while !state.ramp.isSilent && DispatchTime.now() < deadline
          && !events.serverLost.load(ordering: .acquiring)
        {
          usleep(2000)
        }
        client.close()
        Log.info("stopped after \(state.cycles.load(ordering: .relaxed)) cycles; " + stageSummary())
        return .stop
      }
      // Suspended (deactivated) on PipeWire, nothing reports a server loss: ask once a second.
      if suspended && DispatchTime.now() >= nextLivenessProbe {
        nextLivenessProbe = .now() + .seconds(1)
        if !client.serverAnswers() { events.serverLost.store(true, ordering: .releasing) }
      }
      if events.serverLost.load(ordering: .acquiring) { return .serverLost }
      answerSessionSaves(client)
      superviseTapConsumers(audioRunning: !suspended)
      for request in control?.takeRequests() ?? [] {
        if request.request["cmd"]?.string == "learn" {
          startLearn(request, state)
        } else if request.request["cmd"]?.string == "record" && request.request["action"]?.string == "stop" {
          startRecordStop(request)
        } else {
          request.answer(answer(request.request, client: client, state: state))
        }
      }
      pollLearns(state)
      pollFinishingRecordings()
      swapUnderway = state.slot.collect()
      client.applyRequestedLatency()
      // Plugins may report a new latency at any time (a convolver once its impulse is loaded).
      let latency = chain.latencyFrames
      if latency != Int(events.chainLatencyFrames.load(ordering: .relaxed)) {
        client.setChainLatency(frames: latency)
        Log.info("chain latency is now \(latency) frames (reported to JACK)")
      }
      if DispatchTime.now().uptimeNanoseconds > lastHealth.uptimeNanoseconds + 10_000_000_000 {
        lastHealth = .now()
        let xrunsNow = events.xruns.load(ordering: .relaxed)
        stream.emit(
          "health",
          [
            "dsp_load_percent": .double(Double(client.cpuLoadPercent)), "xruns": .int(Int(xrunsNow)),
            "xruns_last_minute": .int(Int(xrunsNow - min(xrunHistory.first?.total ?? xrunsNow, xrunsNow))),
            "cycles": .int(Int(state.cycles.load(ordering: .relaxed))), "stages": .string(stageSummary()),
          ])
      }
      if reloadRequested.exchange(false, ordering: .acquiringAndReleasing) {
        reloadPreset(client, state: state, reason: "SIGHUP")
      } else if options.watch, let path = presetPath, Self.modificationDate(path) != presetModified {
        presetModified = Self.modificationDate(path)
        reloadPreset(client, state: state, reason: "the file changed")
      }
      // Keep the book of connections current (a user may patch in qjackctl), and make the
      // pending connections once their ports appear or their clients are active (graph changes,
      // client registrations, and the book's back-off timer for connections JACK refused).
      // Let the graph settle first (100 ms after the first change, answering requests
      // meanwhile): a client that quits drops its connections a moment before its ports, and
      // that must not read as a user undoing them.
      if events.graphChanged.exchange(false, ordering: .acquiringAndReleasing) && graphSettled == nil {
        graphSettled = .now() + .milliseconds(100)
      }
      if let settled = graphSettled, DispatchTime.now() >= settled {
        graphSettled = nil
        _ = events.graphChanged.exchange(false, ordering: .acquiringAndReleasing)
        if suspended { continue }
        book.connectPending(client)
        followRoutes(client, state)
        book.record(client, vanished: events.takeVanishedPorts())
      }
      if !suspended && book.retryDue { book.connectPending(client) }
      if unmuteRequested.exchange(false, ordering: .acquiringAndReleasing) {
        _ = unmute(client, state)
      }
      let xruns = events.xruns.load(ordering: .relaxed)
      let now = DispatchTime.now()
      // Totals over the last minute, sampled at every wake (at least once a second).
      xrunHistory.append((now, xruns))
      xrunHistory.removeAll { now.uptimeNanoseconds - $0.time.uptimeNanoseconds > 60_000_000_000 }
      if xruns != reportedXruns
        && DispatchTime.now().uptimeNanoseconds > lastXrunReport.uptimeNanoseconds + 1_000_000_000
      {
        // Reported at most once a second (log and stream), with the counts behind it.
        let lastMinute = xruns - min(xrunHistory.first?.total ?? 0, reportedXruns)
        let delay = Float(bitPattern: events.lastXrunMicrosecondsBits.load(ordering: .relaxed))
        let load = client.cpuLoadPercent
        Log.info(
          "xruns: \(xruns - reportedXruns) new, \(xruns) in total, \(lastMinute) in the last minute; last delay "
            + String(format: "%.0f", delay) + " µs; DSP load " + String(format: "%.1f", load) + "%")
        stream.emit(
          "xrun",
          [
            "new": .int(Int(xruns - reportedXruns)), "total": .int(Int(xruns)),
            "last_minute": .int(Int(lastMinute)),
            "delay_us": .double(Double(delay)), "dsp_load_percent": .double(Double(load)),
          ])
        reportedXruns = xruns
        lastXrunReport = now
      }
      for plugin in plugins {
        for line in plugin.drainLog() { Log.info("plugin '\(plugin.id)': \(line)") }
      }
      let frames = events.bufferFrames.load(ordering: .relaxed)
      if frames != bufferFrames {
        bufferFrames = frames
        Log.info("buffer size is now \(frames) frames")
      }
      let rate = events.sampleRate.load(ordering: .relaxed)
      if rate != sampleRate {
        sampleRate = rate
        Log.info("sample rate is now \(rate) Hz")
      }
    }
  }
}
