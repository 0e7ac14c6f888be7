import DSP
import Synchronization

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
/// Thread: `mix` on the audio thread only; `duckDecibels` anywhere.
final class MusicMixer: @unchecked Sendable {
  static let subBlock = 32
  private let sampleRate: Float
  private let volumeAlpha: Float
  private let defaults: UnsafeMutablePointer<Float>
  private static let settingCount = MusicBed.parameters.count + 1  // + bypass
  private var volume: Float = 0
  private var duck: Float = 0
  private var holdLeft = 0
  private var gain: Float = 0
  private var volumeCache = DecibelCache()
  private var thresholdCache = DecibelCache()
  private var duckCache = DecibelCache()
  /// The current dip in dB (0: none), as a Float bit pattern.
  let duckBits = Atomic<UInt32>(0)

  init(sampleRate: Double) {
    self.sampleRate = Float(sampleRate)
    volumeAlpha = Float(1 - exp(-Double(Self.subBlock) / (0.02 * sampleRate)))
    defaults = .allocate(capacity: Self.settingCount)
    for (i, spec) in MusicBed.parameters.enumerated() { defaults[i] = spec.defaultValue }
    defaults[Self.settingCount - 1] = 0
  }

  deinit { defaults.deallocate() }

  /// The current dip of the music in dB (0 when not ducking).
  var duckDecibels: Float { Float(bitPattern: duckBits.load(ordering: .relaxed)) }

  /// Adds the music (`musicLeft`/`musicRight`) to the processed voice in `left`/`right`, whose
  /// level drives the ducker.
  /// - Realtime: safe
  func mix(
    _ musicLeft: UnsafeMutablePointer<Float>, _ musicRight: UnsafeMutablePointer<Float>,
    into left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, frames n: Int,
    chain: VoiceChain
  ) {
    let targets = chain.targets
    let base = chain.musicParameterIndex
    @inline(__always) func setting(_ i: Int) -> Float { base.map { targets.value($0 + i) } ?? defaults[i] }
    let volumeDb = setting(0)
    let ducking = setting(1) >= 0.5
    let threshold = thresholdCache.gain(setting(2))
    let depth = setting(3)
    let attackFrames = max(setting(4) * sampleRate / 1000, 1)
    let releaseFrames = max(setting(5) * sampleRate / 1000, 1)
    let holdFrames = Int(setting(6) * sampleRate / 1000)
    let off = setting(7) >= 0.5 || volumeDb <= -60
    let target: Float = off ? 0 : volumeCache.gain(volumeDb)
    var offset = 0
    while offset < n {
      let m = min(Self.subBlock, n - offset)
      let (l, r) = (left + offset, right + offset)
      var peak: Float = 0
      for f in 0..<m { peak = max(peak, abs(l[f]), abs(r[f])) }
      holdLeft = peak > threshold ? holdFrames : max(holdLeft - m, 0)
      let goal: Float = ducking && (peak > threshold || holdLeft > 0) ? depth : 0
      let rate = max(depth, 1) * Float(m)
      if duck < goal {
        duck = min(duck + rate / attackFrames, goal)
      } else if duck > goal {
        duck = max(duck - rate / releaseFrames, goal)
      }
      let difference = target - volume
      let next = volume + difference * volumeAlpha * Float(m) / Float(Self.subBlock)
      volume = abs(difference) < 1e-6 || next == volume ? target : next
      let to = volume * duckCache.gain(-duck)
      let from = gain
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
      gain = to
      offset += m
    }
    duckBits.store(duck.bitPattern, ordering: .relaxed)
  }
}

/// A decibel value and its linear gain, recomputed only when the value changes.
struct DecibelCache {
  private var decibels: Float = .nan
  private var linear: Float = 0

  /// - Realtime: safe
  @inline(__always)
  mutating func gain(_ db: Float) -> Float {
    if db != decibels {
      decibels = db
      linear = DSPMath.gain(decibels: db)
    }
    return linear
  }
}

/// A gain in dB smoothed towards its target once per sub-block (one-pole, 20 ms time constant,
/// snapping to the target once settled), interpolated linearly within the sub-block.
struct SmoothedGain {
  private var value: Float = 0
  private var cache = DecibelCache()

  /// The gain at the start and end of the next `frames` (at most a sub-block); -60 dB or less is
  /// silent.
  /// - Realtime: safe
  @inline(__always)
  mutating func next(decibels: Float, frames: Int, alpha: Float) -> (from: Float, to: Float) {
    let target: Float = decibels <= -60 ? 0 : cache.gain(decibels)
    let from = value
    let difference = target - value
    let next = value + difference * alpha * Float(frames) / Float(MusicMixer.subBlock)
    value = abs(difference) < 1e-6 || next == value ? target : next
    return (from, value)
  }
}
