import CJack
import DSP
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

// Setting a `ProcessState` up, off the audio thread: its initializers for a client's ports and
// for tests, the input mute it starts in, and the warm-up run before activation.
extension ProcessState {
  /// A state for a JACK client's ports: one or two inputs, two outputs, optional MIDI, music
  /// (two) and monitor (two) ports; `client` is asked for each cycle's frame time.
  convenience init(
    inputs: [OpaquePointer], outputs: [OpaquePointer], midiIn: OpaquePointer?, chain: VoiceChain,
    sampleRate: Double, taps: TapTable, musicInputs: [OpaquePointer] = [],
    monitorOutputs: [OpaquePointer] = [], client: OpaquePointer? = nil
  ) {
    precondition(musicInputs.isEmpty || musicInputs.count == 2)
    precondition(monitorOutputs.isEmpty || monitorOutputs.count == 2)
    precondition(!inputs.isEmpty && outputs.count == 2)
    let ports = Ports(
      input1: inputs[0], input2: inputs.count > 1 ? inputs[1] : nil, output1: outputs[0],
      output2: outputs[1], music1: musicInputs.first, music2: musicInputs.last,
      monitor1: monitorOutputs.first, monitor2: monitorOutputs.last, midiIn: midiIn)
    self.init(ports: ports, chain: chain, sampleRate: sampleRate, taps: taps, client: client)
  }

  /// A state with no ports and no client, driven by calling `run` with the caller's buffers
  /// (tests); `process` does nothing on it.
  convenience init(chain: VoiceChain, sampleRate: Double, taps: TapTable = TapTable()) {
    self.init(ports: nil, chain: chain, sampleRate: sampleRate, taps: taps, client: nil)
  }

  /// Starts with the microphone already muted (no fade): for a client started in the `input`
  /// mute mode. Thread: setup only, before activation.
  public func startInputMuted() {
    inputMuted.store(1, ordering: .relaxed)
    cycle.pointee.inputGain = 0
  }

  /// Runs the audio thread's own code (`run`, with music and monitor buffers and halfway
  /// through the input mute's fade) once off it on scratch buffers of silence, before
  /// activation (the chain is warm already), so its first-run costs (type metadata, lazily
  /// bound symbols) are paid here. The state the runs leave (ramp, input gain, counters,
  /// meters) is put back; the taps are warmed through a scratch consumer of their own.
  func warm(frames: Int) {
    let n = min(max(frames, 1), Self.maxFadeFrames)
    fadeLeft.update(repeating: 0, count: n)  // fault the pages in now
    fadeRight.update(repeating: 0, count: n)
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 8 * n)
    defer { scratch.deallocate() }
    scratch.initialize(repeating: 0, count: 8 * n)
    let io = CycleBuffers(
      inputLeft: scratch, inputRight: scratch + n, outputLeft: scratch + 2 * n,
      outputRight: scratch + 3 * n, musicLeft: scratch + 4 * n, musicRight: scratch + 5 * n,
      monitorLeft: scratch + 6 * n, monitorRight: scratch + 7 * n, feedsTaps: false)
    let (savedCycles, savedFrames, savedInputGain) = (
      cycles.load(ordering: .relaxed), framesRun.load(ordering: .relaxed), cycle.pointee.inputGain
    )
    cycle.pointee.inputGain = 0.5  // through the chain and `gateInput`
    let metering = meters.isWanted
    meters.setWanted(true)  // through the meters
    run(io, frames: n)
    meters.setWanted(metering)
    cycle.pointee.inputGain = savedInputGain
    ramp.rewind()
    cycles.store(savedCycles, ordering: .relaxed)
    framesRun.store(savedFrames, ordering: .relaxed)
    _ = meters.read()
    taps.warm(frames: n)
    _ = sinf(Float(n)) + cosf(Float(n))  // the crossfade's
  }
}
