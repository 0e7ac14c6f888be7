import CJack

// The C callbacks JACK calls. Each reaches its object through an `Unmanaged` context pointer
// and does only what its thread allows.

/// The JACK process callback.
/// - Realtime: safe
func livemicProcess(frames: jack_nframes_t, context: UnsafeMutableRawPointer?) -> Int32 {
  guard let context else { return 0 }
  // No retain/release pair per cycle: the state outlives activation.
  return Unmanaged<ProcessState>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.process(frames: frames) }
}

/// Notes what a callback saw in the engine's events (through `context`, unretained), then
/// wakes the supervisor.
@inline(__always)
private func notify(_ context: UnsafeMutableRawPointer?, _ note: (EngineEvents) -> Void) {
  guard let context else { return }
  let events = Unmanaged<EngineEvents>.fromOpaque(context).takeUnretainedValue()
  note(events)
  events.wake.signal()
}

/// Server shutdown: set a flag and wake the supervisor; nothing else is allowed here.
func livemicShutdown(code: jack_status_t, reason: UnsafePointer<CChar>?, context: UnsafeMutableRawPointer?) {
  notify(context) { $0.serverLost.store(true, ordering: .releasing) }
}

/// Xrun: count it and keep the delay JACK measured.
func livemicXrun(context: UnsafeMutableRawPointer?) -> Int32 {
  notify(context) { events in
    events.xruns.add(1, ordering: .relaxed)
    if let client = events.clientHandle {
      events.lastXrunMicrosecondsBits.store(
        jack_get_xrun_delayed_usecs(client).bitPattern, ordering: .relaxed)
    }
  }
  return 0
}

/// Buffer size change. The chain works in fixed sub-blocks, so nothing needs re-preparing.
func livemicBufferSize(frames: jack_nframes_t, context: UnsafeMutableRawPointer?) -> Int32 {
  notify(context) { $0.bufferFrames.store(frames, ordering: .relaxed) }
  return 0
}

/// Sample-rate change: recorded for the supervisor.
func livemicSampleRate(rate: jack_nframes_t, context: UnsafeMutableRawPointer?) -> Int32 {
  notify(context) { $0.sampleRate.store(rate, ordering: .relaxed) }
  return 0
}

/// Ports registered or unregistered, or connections changed: the supervisor re-reads the graph.
func livemicGraphChanged(context: UnsafeMutableRawPointer?) {
  notify(context) { $0.graphChanged.store(true, ordering: .releasing) }
}

/// A client opened or closed: the supervisor re-reads the graph and retries the pending
/// connections (jackd2 refuses to connect a client's ports until it is active; its activation
/// may bring no port registration, but a graph order change or another client's arrival does).
func livemicClientRegistration(context: UnsafeMutableRawPointer?) {
  livemicGraphChanged(context: context)
}

/// The graph's processing order changed (a client activated or deactivated, a connection
/// changed): as `livemicGraphChanged`.
func livemicGraphOrder(context: UnsafeMutableRawPointer?) -> Int32 {
  livemicGraphChanged(context: context)
  return 0
}

/// A port registered or unregistered: an unregistered port's name is noted for the supervisor
/// (its connections went with it), then the graph is re-read. Runs on libjack's notification
/// thread, never on the process thread.
func livemicPortRegistration(id: jack_port_id_t, registered: Int32, context: UnsafeMutableRawPointer?) {
  guard let context else { return }
  let events = Unmanaged<EngineEvents>.fromOpaque(context).takeUnretainedValue()
  if registered == 0, let handle = events.clientHandle, let port = jack_port_by_id(handle, id),
    let name = jack_port_name(port)
  {
    events.portVanished(String(cString: name))
  }
  livemicGraphChanged(context: context)
}

/// Freewheel mode on or off: noted, with the cycles and frames run so far, for the supervisor
/// (the chain runs the same either way; the supervisor paces the tap writers).
func livemicFreewheel(starting: Int32, context: UnsafeMutableRawPointer?) {
  notify(context) { $0.noteFreewheel(starting != 0) }
}
