#if canImport(Glibc)
  import Glibc
#endif

/// The music bed (`--music`): mixes `music_1`/`music_2` into the outputs after the voice chain
/// (bypassing it) at `music.volume_db`, dipped by the ducker while the processed voice is
/// present. Its settings are the parameters of the chain's `music` stage (`MusicBed`), read
/// from the chain's targets every sub-block; a chain without one uses `MusicBed`'s defaults.
///
/// Works in sub-blocks of 32 frames: the voice's peak in the sub-block is compared with the
/// threshold (a hold keeps the duck for `duck_hold_ms` after the last peak above it); the duck
/// moves linearly in dB towards the depth (or back to 0) at `depth / attack_ms` (or
/// `depth / release_ms`), so the full dip takes `duck_attack_ms` and the full recovery
/// `duck_release_ms`. The volume follows its target with a one-pole smoother (20 ms time
/// constant) and snaps to it once settled, so a settled music gain is exact. The gain is
/// interpolated linearly across each sub-block: no zipper noise.
///
/// Thread: made off the audio thread; `mix` then on one thread only (the audio thread).
public final class MusicMixer: @unchecked Sendable {
  /// Frames per sub-block of the mixers (the chain's sub-block).
  public static let subBlock = VoiceChain.subBlockFrames
  private let sampleRate: Float
  private let volumeAlpha: Float
  private let defaults: UnsafeMutablePointer<Float>
  private static let settingCount = MusicBed.parameters.count + 1  // + bypass
  /// What `mix` changes from one call to the next, behind a pointer (no exclusivity check).
  struct State {
    var volume: Float = 0
    var duck: Float = 0
    var holdLeft = 0
    var gain: Float = 0
    var volumeCache = DecibelCache()
    var thresholdCache = DecibelCache()
    var duckCache = DecibelCache()
  }
  let state: UnsafeMutablePointer<State>

  /// Allocates the mixer for `sampleRate`. Not real-time.
  public init(sampleRate: Double) {
    state = .allocate(capacity: 1)
    state.initialize(to: State())
    self.sampleRate = Float(sampleRate)
    volumeAlpha = Smoothing.alpha(frames: Self.subBlock, sampleRate: sampleRate)
    defaults = .allocate(capacity: Self.settingCount)
    for (i, spec) in MusicBed.parameters.enumerated() { defaults[i] = spec.defaultValue }
    defaults[Self.settingCount - 1] = 0
  }

  deinit {
    defaults.deallocate()
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// Adds the music (`musicLeft`/`musicRight`) to the processed voice in `left`/`right`, whose
  /// level drives the ducker.
  /// - Realtime: safe
  public func mix(
    _ musicLeft: UnsafeMutablePointer<Float>, _ musicRight: UnsafeMutablePointer<Float>,
    into left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames n: Int,
    chain: VoiceChain
  ) {
    let targets = chain.targets
    let base = chain.musicParameterIndex
    let s = state
    @inline(__always) func setting(_ i: Int) -> Float { base.map { targets.value($0 + i) } ?? defaults[i] }
    let volumeDb = setting(0)
    let ducking = setting(1) >= 0.5
    let threshold = s.pointee.thresholdCache.gain(setting(2))
    let depth = setting(3)
    let attackFrames = max(setting(4) * sampleRate / 1000, 1)
    let releaseFrames = max(setting(5) * sampleRate / 1000, 1)
    let holdFrames = Int(setting(6) * sampleRate / 1000)
    let off = setting(7) >= 0.5 || volumeDb <= -60
    let target: Float = off ? 0 : s.pointee.volumeCache.gain(volumeDb)
    var offset = 0
    while offset < n {
      let m = min(Self.subBlock, n - offset)
      let (l, r) = (left + offset, right + offset)
      var peak: Float = 0
      for f in 0..<m { peak = max(peak, abs(l[f]), abs(r[f])) }
      s.pointee.holdLeft = peak > threshold ? holdFrames : max(s.pointee.holdLeft - m, 0)
      let goal: Float = ducking && (peak > threshold || s.pointee.holdLeft > 0) ? depth : 0
      let rate = max(depth, 1) * Float(m)
      if s.pointee.duck < goal {
        s.pointee.duck = min(s.pointee.duck + rate / attackFrames, goal)
      } else if s.pointee.duck > goal {
        s.pointee.duck = max(s.pointee.duck - rate / releaseFrames, goal)
      }
      s.pointee.volume = Smoothing.step(
        s.pointee.volume, toward: target, alpha: volumeAlpha * Float(m) / Float(Self.subBlock))
      let to = s.pointee.volume * s.pointee.duckCache.gain(-s.pointee.duck)
      let from = s.pointee.gain
      let (ml, mr) = (musicLeft + offset, musicRight + offset)
      if from == to {
        if to != 0 {
          for f in 0..<m {
            let (a, b, x, y) = (l[f], r[f], ml[f], mr[f])
            l[f] = a + x * to
            r[f] = b + y * to
          }
        }
      } else {
        let step = (to - from) / Float(m)
        for f in 0..<m {
          let g = from + step * Float(f + 1)
          let (a, b, x, y) = (l[f], r[f], ml[f], mr[f])
          l[f] = a + x * g
          r[f] = b + y * g
        }
      }
      s.pointee.gain = to
      offset += m
    }
  }

  /// `mix`, and for a chain with an echo canceller the music as mixed (the output after minus
  /// before, in `scratchLeft`/`scratchRight`, `frames` long at least) handed to it as its
  /// reference (`VoiceChain.receiveMusic`, `aec.reference`).
  /// - Realtime: safe
  public func mix(
    _ musicLeft: UnsafeMutablePointer<Float>, _ musicRight: UnsafeMutablePointer<Float>,
    into left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames n: Int,
    chain: VoiceChain, scratchLeft: UnsafeMutablePointer<Float>, scratchRight: UnsafeMutablePointer<Float>
  ) {
    guard chain.wantsReferences else {
      return mix(musicLeft, musicRight, into: left, right, frames: n, chain: chain)
    }
    scratchLeft.update(from: left, count: n)
    scratchRight.update(from: right, count: n)
    mix(musicLeft, musicRight, into: left, right, frames: n, chain: chain)
    for f in 0..<n {
      scratchLeft[f] = left[f] - scratchLeft[f]
      scratchRight[f] = right[f] - scratchRight[f]
    }
    chain.receiveMusic(left: scratchLeft, right: scratchRight, frames: n)
  }
}
