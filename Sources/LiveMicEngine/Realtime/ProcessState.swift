import CJack
import DSP
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One cycle's buffers, as `ProcessState.run` reads and writes them: fetched from the JACK
/// ports by `process`, or scratch and fake buffers (the warm-up run, tests). Each holds at
/// least the cycle's frames.
///
/// Thread: built and used on the thread that runs the cycle, for one cycle.
struct CycleBuffers {
  /// The dry input; `inputRight` is `inputLeft` for a mono input.
  var inputLeft: UnsafeMutablePointer<Float>
  var inputRight: UnsafeMutablePointer<Float>
  /// The outputs (`out_1`/`out_2`): the chain runs in place there.
  var outputLeft: UnsafeMutablePointer<Float>
  var outputRight: UnsafeMutablePointer<Float>
  /// The music bed's inputs; nil without `--music` (both or neither are used).
  var musicLeft: UnsafeMutablePointer<Float>? = nil
  var musicRight: UnsafeMutablePointer<Float>? = nil
  /// The monitor outputs; nil without `--monitor` (both or neither are used).
  var monitorLeft: UnsafeMutablePointer<Float>? = nil
  var monitorRight: UnsafeMutablePointer<Float>? = nil
  /// The cycle's JACK MIDI buffer (`midi_in`); nil without one.
  var midi: UnsafeMutableRawPointer? = nil
  /// The server's frame time at the start of the cycle, for `missedCycles`; nil when unknown.
  var frameTime: jack_nframes_t? = nil
  /// False for the warm-up run, so the tap consumers (a recording that spans a reconnection)
  /// receive no extra cycle.
  var feedsTaps = true
}

/// Everything the audio thread touches, in one place.
///
/// Created and wired off the audio thread before activation; `process` is the only method the
/// JACK process callback calls. It fetches the port buffers into a `CycleBuffers` and hands
/// them to `run`, which holds the whole cycle (tests call `run` with their own buffers on a
/// state made by `init(chain:sampleRate:taps:)`, which has no ports). Control reaches it
/// through atomics only.
/// Thread: `process` (so `run`) on the audio thread; the atomics from anywhere.
public final class ProcessState: @unchecked Sendable {
  /// The JACK ports, registered before activation and never changed while active.
  struct Ports {
    var input1: OpaquePointer
    var input2: OpaquePointer?
    var output1: OpaquePointer
    var output2: OpaquePointer
    /// The music bed's inputs (`--music`), mixed in after the chain; nil without `--music`.
    var music1: OpaquePointer?
    var music2: OpaquePointer?
    /// The monitor outputs (`--monitor`); nil without `--monitor`.
    var monitor1: OpaquePointer?
    var monitor2: OpaquePointer?
    var midiIn: OpaquePointer?
  }

  /// The ports, registered before activation and never changed while active; nil for a state
  /// driven through `run` by hand (tests): `process` then does nothing.
  let ports: Ports?
  /// Mixes and ducks the music bed.
  let music: MusicMixer
  /// Mixes the monitor outputs.
  let monitor: MonitorMixer

  /// The chain the audio thread runs, swapped atomically.
  public let slot: ChainSlot
  /// The start-quiet / stop / mute ramp at the very end of the chain.
  public let ramp: OutputRamp

  /// Cycles run (audio thread writes, anyone reads).
  public let cycles = Atomic<UInt64>(0)
  /// Frames run, over all cycles (audio thread writes, anyone reads).
  public let framesRun = Atomic<UInt64>(0)
  /// Cycles the server ran without this client: gaps in the frame times of consecutive
  /// process calls. On jackd each is also an xrun; PipeWire's libjack reports no xrun for them.
  public let missedCycles = Atomic<UInt64>(0)
  /// True once the process thread runs with flush-to-zero and denormals-are-zero (set in the
  /// thread-init callback, and checked again every cycle: PipeWire's libjack may run the
  /// callback on another thread, a plugin may clear them).
  public let denormalsFlushed = Atomic<Bool>(false)
  /// The latest of those gaps (`MissedCycle.packed`; 0 before the first).
  public let lastMissedCycle = Atomic<UInt64>(0)
  /// The last few of those gaps, each in its own slot.
  public let recentMissedCycles = MissedCycleHistory()
  /// The client, for `jack_last_frame_time` (nil in tests that drive `process` by hand).
  let client: OpaquePointer?
  /// MIDI control-change mappings applied from `midi_in` every cycle.
  public let midi = MidiMap()

  /// Input and output levels, for `ctl meters`.
  public let meters = Meters()
  /// The consumers of the `input` and `output` taps (recordings, streams); outlives the client.
  public let taps: TapTable
  /// 1 while the microphone is muted before the chain (the `input` mute mode: the music bed,
  /// the monitor mix and the chain's tails go on); the input gain moves linearly over
  /// `crossfadeSeconds`.
  public let inputMuted = Atomic<UInt32>(0)

  /// What only the audio thread reads and writes from one cycle to the next. It lives behind a
  /// pointer: a stored `var` of this class would cost a dynamic exclusivity check
  /// (`swift_beginAccess`) on every access.
  struct CycleState {
    /// The frame time the next cycle should start at; nil before the first.
    var nextFrameTime: jack_nframes_t?
    /// The microphone's gain before the chain (moved by the `input` mute mode).
    var inputGain: Float = 1
    /// A crossfade in progress: the old chain and how far it has faded.
    var fadingOut: Unmanaged<VoiceChain>?
    var fadePosition = 0
    var fadeLinear = false
  }
  let cycle: UnsafeMutablePointer<CycleState> = {
    let state = UnsafeMutablePointer<CycleState>.allocate(capacity: 1)
    state.initialize(to: CycleState())
    return state
  }()

  /// Length of the equal-power crossfade when a new chain (preset) is swapped in.
  public static let crossfadeSeconds = 0.05
  /// The largest block the crossfade handles (JACK's largest period); a larger block swaps at
  /// once.
  static let maxFadeFrames = 8192
  let fadeLeft = UnsafeMutablePointer<Float>.allocate(capacity: maxFadeFrames)
  let fadeRight = UnsafeMutablePointer<Float>.allocate(capacity: maxFadeFrames)
  /// The music bed as mixed into the output, for a chain's echo canceller (`aec.reference`).
  let musicReferenceLeft = UnsafeMutablePointer<Float>.allocate(capacity: maxFadeFrames)
  let musicReferenceRight = UnsafeMutablePointer<Float>.allocate(capacity: maxFadeFrames)
  /// Frames of the chain crossfade and of the input mute's fade.
  let fadeLength: Int

  init(ports: Ports?, chain: VoiceChain, sampleRate: Double, taps: TapTable, client: OpaquePointer?) {
    self.ports = ports
    self.client = client
    self.taps = taps
    monitor = MonitorMixer(sampleRate: sampleRate)
    music = MusicMixer(sampleRate: sampleRate)
    slot = ChainSlot(chain)
    ramp = OutputRamp(sampleRate: sampleRate)
    fadeLength = max(Int(Self.crossfadeSeconds * sampleRate), 1)
  }

  deinit {
    fadeLeft.deallocate()
    fadeRight.deallocate()
    musicReferenceLeft.deallocate()
    musicReferenceRight.deallocate()
    if let old = cycle.pointee.fadingOut { slot.finishSwap(old) }
    cycle.deinitialize(count: 1)
    cycle.deallocate()
  }

  /// One JACK cycle: fetches the port buffers (and the frame time) and runs the cycle on them.
  /// - Realtime: safe
  @inline(__always)
  func process(frames: jack_nframes_t) -> Int32 {
    // Stored only when it changes: the line stays shared with the threads that read it.
    let flushed = livemic_flush_denormals() == 1
    if denormalsFlushed.load(ordering: .relaxed) != flushed {
      denormalsFlushed.store(flushed, ordering: .relaxed)
    }
    guard let ports else { return 0 }
    let frameTime = client.map { jack_last_frame_time($0) }
    guard let in1 = jack_port_get_buffer(ports.input1, frames),
      let out1 = jack_port_get_buffer(ports.output1, frames),
      let out2 = jack_port_get_buffer(ports.output2, frames)
    else {
      if let frameTime { noteFrameTime(frameTime, frames: frames) }
      return 0
    }
    @inline(__always) func floats(_ port: OpaquePointer?) -> UnsafeMutablePointer<Float>? {
      port.flatMap { jack_port_get_buffer($0, frames) }?.assumingMemoryBound(to: Float.self)
    }
    let inL = in1.assumingMemoryBound(to: Float.self)
    // midi_in only while something reads it: a mapping or a learn (`MidiMap.isListening`), or a
    // plugin of the running chain (or of one fading out) that takes MIDI.
    let listening =
      midi.isListening || slot.current()._withUnsafeGuaranteedRef { $0.wantsMidi }
      || cycle.pointee.fadingOut?._withUnsafeGuaranteedRef({ $0.wantsMidi }) ?? false
    let midiBuffer = listening ? ports.midiIn.flatMap { jack_port_get_buffer($0, frames) } : nil
    let io = CycleBuffers(
      inputLeft: inL, inputRight: floats(ports.input2) ?? inL,
      outputLeft: out1.assumingMemoryBound(to: Float.self),
      outputRight: out2.assumingMemoryBound(to: Float.self), musicLeft: floats(ports.music1),
      musicRight: floats(ports.music2), monitorLeft: floats(ports.monitor1),
      monitorRight: floats(ports.monitor2), midi: midiBuffer, frameTime: frameTime)
    run(io, frames: Int(frames))
    return 0
  }

  /// Counts a gap between the previous cycle's end and this cycle's frame time.
  /// - Realtime: safe
  @inline(__always)
  private func noteFrameTime(_ now: jack_nframes_t, frames: jack_nframes_t) {
    if let expected = cycle.pointee.nextFrameTime, now != expected {
      let count = missedCycles.add(1, ordering: .relaxed).newValue
      let missing = now &- expected
      let gap = MissedCycle(
        numberLow16: UInt16(truncatingIfNeeded: count), expectedFrameTime: expected,
        missingFrames: missing > 0xFFFF ? 0xFFFF : UInt16(missing))
      recentMissedCycles.store(gap)
      lastMissedCycle.store(gap.packed, ordering: .relaxed)
    }
    cycle.pointee.nextFrameTime = now &+ frames
  }

  /// The whole cycle: copy the input to the output buffers (a mono input feeds both channels),
  /// run the chain in place there (crossfading from the previous chain after a swap), write
  /// the monitor mix, mix in the music bed
  /// (ducked under the processed voice), apply the output ramp (to the voice, the music and the
  /// monitor); hand the dry input and the final output to the tap consumers' rings.
  /// - Realtime: safe
  @inline(__always)
  func run(_ io: CycleBuffers, frames n: Int) {
    if let now = io.frameTime { noteFrameTime(now, frames: jack_nframes_t(truncatingIfNeeded: n)) }
    let (inL, inR, left, right) = (io.inputLeft, io.inputRight, io.outputLeft, io.outputRight)
    // The chain's input, made safe in the same pass (so the chains below need not).
    VoiceChain.copySanitized(inL, inR, into: left, right, frames: n)
    let inputGoal: Float = inputMuted.load(ordering: .relaxed) == 1 ? 0 : 1
    if cycle.pointee.inputGain != 1 || inputGoal != 1 { gateInput(left, right, n, goal: inputGoal) }
    if let old = cycle.pointee.fadingOut, n > Self.maxFadeFrames {
      // A block larger than the fade buffers (the period grew mid-fade): swap at once.
      cycle.pointee.fadingOut = nil
      slot.finishSwap(old)
    }
    if cycle.pointee.fadingOut == nil, let (old, curve) = slot.beginSwap() {
      if n <= Self.maxFadeFrames {
        cycle.pointee.fadingOut = old
        cycle.pointee.fadePosition = 0
        cycle.pointee.fadeLinear = curve == .linear
      } else {
        slot.finishSwap(old)
      }
    }
    // The chain of this cycle, loaded once (a swap above already happened); its MIDI (and a
    // fading chain's) delivered before either runs.
    let chain = slot.current()
    deliverMidi(io.midi, to: chain, fadingOut: cycle.pointee.fadingOut)
    // The music bed for the stages that read it (a plugin keyed by the music), in both chains.
    chain._withUnsafeGuaranteedRef {
      if $0.wantsMusicFeed { $0.feedMusic(left: io.musicLeft, right: io.musicRight, frames: n) }
    }
    cycle.pointee.fadingOut?._withUnsafeGuaranteedRef {
      if $0.wantsMusicFeed { $0.feedMusic(left: io.musicLeft, right: io.musicRight, frames: n) }
    }
    if let old = cycle.pointee.fadingOut {
      fadeLeft.update(from: left, count: n)  // the input as the chain gets it (input mute)
      fadeRight.update(from: right, count: n)
      old._withUnsafeGuaranteedRef {
        $0.process(left: fadeLeft, right: fadeRight, frames: n, inputSanitized: true)
      }
    }
    let metering = meters.isWanted  // once, so a cycle is metered whole or not at all
    if metering {
      meters.record(0, inL, n)
      meters.record(1, inR, n)
    }
    if io.feedsTaps { taps.write(.input, left: inL, right: inR, frames: n) }
    chain._withUnsafeGuaranteedRef { $0.process(left: left, right: right, frames: n, inputSanitized: true) }
    if let old = cycle.pointee.fadingOut { crossfade(from: old, left: left, right: right, frames: n) }
    var (musicLeft, musicRight) = (io.musicLeft, io.musicRight)
    // A stage that processes the music bed (a plugin `"on": "music"`): its result is the music.
    if musicLeft != nil, n <= SignalFeed.capacity,
      let processed = chain._withUnsafeGuaranteedRef({ $0.processedMusic })
    {
      (musicLeft, musicRight) = (processed.left, processed.right)
    }
    let (monitorLeft, monitorRight) = (io.monitorLeft, io.monitorRight)
    if let monitorLeft, let monitorRight {
      chain._withUnsafeGuaranteedRef {
        monitor.mix(
          voiceLeft: left, voiceRight: right, musicLeft: musicLeft, musicRight: musicRight, into: monitorLeft,
          monitorRight, frames: n, chain: $0)
      }
    }
    if let musicLeft, let musicRight {
      chain._withUnsafeGuaranteedRef {
        // The music as mixed is an echo canceller's reference (up to the scratch's length).
        if n <= Self.maxFadeFrames {
          music.mix(
            musicLeft, musicRight, into: left, right, frames: n, chain: $0, scratchLeft: musicReferenceLeft,
            scratchRight: musicReferenceRight)
        } else {
          music.mix(musicLeft, musicRight, into: left, right, frames: n, chain: $0)
        }
      }
    }
    ramp.apply(left: left, right: right, frames: n, alsoLeft: monitorLeft, alsoRight: monitorRight)
    if metering {
      meters.record(2, left, n)
      meters.record(3, right, n)
      meters.finishCycle(n)
    }
    if io.feedsTaps {
      taps.write(.output, left: left, right: right, frames: n)
      taps.finishCycle()
    }
    // One writer (this thread): a load and a store, not a locked read-modify-write.
    framesRun.store(framesRun.load(ordering: .relaxed) &+ UInt64(n), ordering: .relaxed)
    cycles.store(cycles.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
  }
}

extension ProcessState {
  /// The cycle's MIDI: mapped controllers set their parameters (`MidiMap`), and the rest goes to
  /// the plugins of `chain` and of the chain fading out that take MIDI. A chain that takes MIDI
  /// gets an empty list in a cycle without a MIDI buffer, never the last cycle's events.
  /// - Realtime: safe
  @inline(__always)
  fileprivate func deliverMidi(
    _ buffer: UnsafeMutableRawPointer?, to chain: Unmanaged<VoiceChain>, fadingOut old: Unmanaged<VoiceChain>?
  ) {
    chain._withUnsafeGuaranteedRef { current in
      let events = current.wantsMidi ? current.midiEvents : nil
      let oldEvents = old?._withUnsafeGuaranteedRef { $0.wantsMidi ? $0.midiEvents : nil }
      events?.clear()
      oldEvents?.clear()
      guard let buffer else { return }
      midi.apply(
        buffer, targets: current.targets, count: current.parameterCount, forwardingTo: events, oldEvents)
    }
  }

  /// Moves the microphone's gain (before the chain) towards `goal`, linearly over
  /// `crossfadeSeconds` (the `input` mute mode).
  /// - Realtime: safe
  @inline(__always)
  fileprivate func gateInput(
    _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, _ n: Int, goal: Float
  ) {
    var g = cycle.pointee.inputGain
    if g == goal {
      left.update(repeating: 0, count: n)  // only reached at goal 0
      right.update(repeating: 0, count: n)
      return
    }
    let step = 1 / Float(fadeLength)
    for f in 0..<n {
      g = goal > g ? min(g + step, 1) : max(g - step, 0)
      left[f] *= g
      right[f] *= g
    }
    cycle.pointee.inputGain = g
  }

  /// Mixes the old chain's output (in the fade buffers) into the new one's with equal-power
  /// gains (cos/sin of a quarter turn over `crossfadeSeconds`), or linear ones (`FadeCurve`);
  /// hands the old chain back when the fade is complete.
  /// - Realtime: safe
  @inline(__always)
  fileprivate func crossfade(
    from old: Unmanaged<VoiceChain>, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
    frames: Int
  ) {
    var position = cycle.pointee.fadePosition
    if cycle.pointee.fadeLinear {
      let step = 1 / Float(fadeLength)
      for f in 0..<frames {
        let newGain = Float(min(position, fadeLength)) * step
        left[f] = left[f] * newGain + fadeLeft[f] * (1 - newGain)
        right[f] = right[f] * newGain + fadeRight[f] * (1 - newGain)
        position += 1
      }
      advanceFade(from: old, frames: frames)
      return
    }
    let quarter = Float.pi / 2 / Float(fadeLength)
    for f in 0..<frames {
      let t = Float(min(position, fadeLength)) * quarter
      let (newGain, oldGain) = (sinf(t), cosf(t))
      let (l, r, ol, or) = (left[f], right[f], fadeLeft[f], fadeRight[f])
      left[f] = l * newGain + ol * oldGain
      right[f] = r * newGain + or * oldGain
      position += 1
    }
    advanceFade(from: old, frames: frames)
  }

  /// Moves the chain crossfade on by `frames`; hands the old chain back when it is complete.
  /// - Realtime: safe
  @inline(__always)
  fileprivate func advanceFade(from old: Unmanaged<VoiceChain>, frames: Int) {
    cycle.pointee.fadePosition += frames
    if cycle.pointee.fadePosition >= fadeLength {
      cycle.pointee.fadingOut = nil
      slot.finishSwap(old)
    }
  }
}
