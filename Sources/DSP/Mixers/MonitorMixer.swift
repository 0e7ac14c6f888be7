#if canImport(Glibc)
  import Glibc
#endif

/// The monitor mix (`--monitor`): writes the processed voice (the chain's output, before the
/// music is added) at `monitor.voice_db`, a reverb of it heard only here (a post-fader send at
/// `monitor.reverb_db`), and the music bed (not ducked) at `monitor.music_db` into
/// `monitor_1`/`monitor_2`. The settings are the parameters of the chain's `monitor` stage
/// (`MonitorMix`); a chain without one uses its defaults.
///
/// The reverb is the built-in `reverb` unit (wet only, full width), owned by the mixer: it
/// outlives chain swaps, so a preset change does not cut its tail, and it runs in sub-blocks of
/// `MusicMixer.subBlock` frames whatever JACK's period. It is skipped while the send is off and
/// its tail has had `tailSeconds` to die away.
///
/// Thread: `mix` on the audio thread only; `init` off it (it allocates).
public final class MonitorMixer: @unchecked Sendable {
  /// How long the reverb keeps running after its send is turned off (its longest decay).
  public static let tailSeconds = 8.0
  private let alpha: Float
  private let defaults: UnsafeMutablePointer<Float>
  /// What `mix` changes from one call to the next, the reverb included, behind a pointer: no
  /// exclusivity check, no copy-on-write check of the reverb's arrays per call.
  private struct State {
    var voice = SmoothedGain()
    var music = SmoothedGain()
    var send = SmoothedGain()
    var reverb = Reverb()
    var silentFrames: Int
  }
  private let state: UnsafeMutablePointer<State>
  /// The reverb's parameters (room, damping, mix, width): the previous and current values.
  private let reverbPrevious: UnsafeMutablePointer<Float>
  private let reverbCurrent: UnsafeMutablePointer<Float>
  /// The reverb's input and output for one sub-block.
  private let wetLeft: UnsafeMutablePointer<Float>
  private let wetRight: UnsafeMutablePointer<Float>
  private let tailFrames: Int

  /// Allocates the mixer and prepares its reverb for `sampleRate`. Not real-time.
  public init(sampleRate: Double) {
    let n = MusicMixer.subBlock
    alpha = Smoothing.alpha(frames: n, sampleRate: sampleRate)
    defaults = .allocate(capacity: MonitorMix.parameters.count)
    for (i, spec) in MonitorMix.parameters.enumerated() { defaults[i] = spec.defaultValue }
    reverbPrevious = .allocate(capacity: Reverb.parameters.count)
    reverbCurrent = .allocate(capacity: Reverb.parameters.count)
    for (i, value) in [defaults[3], defaults[4], 100, 100].enumerated() {
      reverbPrevious[i] = value
      reverbCurrent[i] = value
    }
    wetLeft = .allocate(capacity: n)
    wetRight = .allocate(capacity: n)
    wetLeft.initialize(repeating: 0, count: n)
    wetRight.initialize(repeating: 0, count: n)
    tailFrames = Int(Self.tailSeconds * sampleRate)
    state = .allocate(capacity: 1)
    state.initialize(to: State(silentFrames: tailFrames))
    state.pointee.reverb.prepare(
      sampleRate: sampleRate, maxFrames: n,
      parameters: ParameterValues(previous: reverbPrevious, current: reverbCurrent))
  }

  deinit {
    state.deinitialize(count: 1)
    state.deallocate()
    defaults.deallocate()
    reverbPrevious.deallocate()
    reverbCurrent.deallocate()
    wetLeft.deallocate()
    wetRight.deallocate()
  }

  /// Writes the monitor mix of `frames` frames into `left`/`right`.
  /// - Realtime: safe
  public func mix(
    voiceLeft: UnsafeMutablePointer<Float>, voiceRight: UnsafeMutablePointer<Float>,
    musicLeft: UnsafeMutablePointer<Float>?, musicRight: UnsafeMutablePointer<Float>?,
    into left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames n: Int,
    chain: VoiceChain
  ) {
    let targets = chain.targets
    let base = chain.monitorParameterIndex
    @inline(__always) func setting(_ i: Int) -> Float { base.map { targets.value($0 + i) } ?? defaults[i] }
    let (voiceDb, musicDb, sendDb) = (setting(0), setting(1), setting(2))
    let (room, damping) = (setting(3), setting(4))
    var offset = 0
    while offset < n {
      let m = min(MusicMixer.subBlock, n - offset)
      let v = state.pointee.voice.next(decibels: voiceDb, frames: m, alpha: alpha)
      let vStep = (v.to - v.from) / Float(m)
      let (vl, vr, l, r) = (voiceLeft + offset, voiceRight + offset, left + offset, right + offset)
      for f in 0..<m {
        let g = v.from == v.to ? v.to : v.from + vStep * Float(f + 1)
        let (a, b) = (vl[f], vr[f])
        l[f] = a * g
        r[f] = b * g
      }
      addReverb(l, r, frames: m, sendDecibels: sendDb, room: room, damping: damping)
      let u = state.pointee.music.next(decibels: musicDb, frames: m, alpha: alpha)
      if let musicLeft, let musicRight, u.from != 0 || u.to != 0 {
        let uStep = (u.to - u.from) / Float(m)
        let (ml, mr) = (musicLeft + offset, musicRight + offset)
        for f in 0..<m {
          let g = u.from == u.to ? u.to : u.from + uStep * Float(f + 1)
          let (a, b, x, y) = (l[f], r[f], ml[f], mr[f])
          l[f] = a + x * g
          r[f] = b + y * g
        }
      }
      offset += m
    }
  }

  /// Adds the reverb of `left`/`right` (the monitor's voice, `m` ≤ a sub-block of frames) sent
  /// at `sendDecibels` to them.
  /// - Realtime: safe
  @inline(__always)
  private func addReverb(
    _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames m: Int,
    sendDecibels: Float, room: Float, damping: Float
  ) {
    let s = state.pointee.send.next(decibels: sendDecibels, frames: m, alpha: alpha)
    let silent = s.from == 0 && s.to == 0 ? min(state.pointee.silentFrames + m, tailFrames) : 0
    state.pointee.silentFrames = silent
    guard silent < tailFrames else { return }
    let step = (s.to - s.from) / Float(m)
    for f in 0..<m {
      let g = s.from == s.to ? s.to : s.from + step * Float(f + 1)
      let (a, b) = (left[f], right[f])
      wetLeft[f] = a * g
      wetRight[f] = b * g
    }
    reverbPrevious[0] = reverbCurrent[0]
    reverbPrevious[1] = reverbCurrent[1]
    reverbCurrent[0] = room
    reverbCurrent[1] = damping
    state.pointee.reverb.process(
      StereoBlock(left: wetLeft, right: wetRight, frames: m),
      parameters: ParameterValues(previous: reverbPrevious, current: reverbCurrent))
    for f in 0..<m {
      let (a, b, x, y) = (left[f], right[f], wetLeft[f], wetRight[f])
      left[f] = a + x
      right[f] = b + y
    }
  }
}
