import CFFTW
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Serializes FFTW plan creation and destruction: only `fftwf_execute` is thread-safe.
let fftwPlanLock = Locked(())

/// The spectral half of the feedback suppressor: finds sustained narrow-band peaks that behave
/// like acoustic feedback (see docs/feedback.md for the criteria and their reasons).
///
/// Every hop (`size / 8` frames) the last `size` input frames (mono: the mean of both channels)
/// are Hann-windowed and transformed. The analysis is spread over the next blocks
/// (`analysisSteps` steps, ending before the next hop): a 16-frame cycle must not do a whole FFT and a
/// pass over every bin in the one block where the hop completes. The transform is split by
/// decimation in time into two half-size real FFTs (FFTW plans made in `init`, executed on
/// preallocated buffers), one per step, then combined with twiddles (one butterfly per pair of
/// bins) a quarter of the bins per step; the spectrum is the same as one full-size FFT's. Peaks that stand far above their neighbourhood and are not part of a
/// harmonic series are followed from hop to hop as tracks; a track that stays at one frequency
/// and either grows steadily (fast path) or persists (steady path) is reported as feedback.
///
/// Thread: made off the audio thread; `push` and `analyze` on the audio thread.
final class HowlDetector {
  /// Criteria derived from the unit's sensitivity.
  struct Criteria {
    /// Peak power over the mean power 4–8 bins away on both sides (linear power ratio).
    var prominence: Float = 63
    /// Growth (dB) over `fastHops` hops, and over `historyLength` hops times 1.5.
    var growthDecibels: Float = 4
    /// Qualified hops before a growing peak counts as feedback.
    var fastHops = 6
    /// Qualified hops before a steady peak counts as feedback.
    var steadyHops = 47
  }

  /// One followed peak.
  struct Track {
    var hz: Float = 0
    /// The band the track's peak has stayed in since it started: a track whose band grows wider
    /// than `stableBins` starts over (vibrato, speech melody). A band, not a distance from the
    /// first frequency: in a long loop (delay over ~40 ms, modes closer than two bins) a howl is
    /// a few neighbouring modes that beat, and its peak moves about their centre by up to a bin
    /// from hop to hop.
    var lowHz: Float = 0
    var highHz: Float = 0
    /// Where the peak was when it last moved more than `growingBins`, and the qualified hops
    /// since: the growth paths want a peak that stays put (a growing howl is one resolved mode;
    /// a vowel's onset with its pitch gliding is not).
    var anchorHz: Float = 0
    var anchoredHits = 0
    /// Hops the peak was present and qualified (prominent, not harmonic), since the start.
    var hits = 0
    /// Consecutive hops the peak was present but not qualified (more than 8 start it over).
    var rejected = 0
    /// Consecutive hops the peak was absent.
    var absent = 0
    var alive = false
  }

  struct Candidate {
    var bin = 0
    var power: Float = 0
  }

  static let trackCount = 24
  static let candidateCount = 8
  static let historyLength = 16
  /// Hops a track may miss its peak (masked by speech) or see it unqualified in a row and keep
  /// what it has counted (about 0.34 s at 48 kHz).
  static let maskedHops = 32
  /// Widest band (in bins) a feedback track's peak may move in.
  static let stableBins: Float = 1.5
  /// Largest movement (in bins) of a growing feedback track's peak.
  static let growingBins: Float = 0.35
  /// Lowest and highest analysed frequencies.
  static let lowHz: Float = 80
  static let highHz: Float = 16_000
  /// Lowest level (dBFS of a sinusoid) considered.
  static let floorDecibels: Float = -70

  let size: Int
  let hop: Int
  let binHz: Float
  private let half: Int
  private let lowBin: Int
  private let highBin: Int
  /// The last `2 × size` input frames: a hop's window stays whole while its analysis runs.
  private let ring: UnsafeMutablePointer<Float>
  private let window: UnsafeMutablePointer<Float>
  /// The windowed frames, decimated: `inputs[r][m]` is frame `2m + r` of the window.
  private let inputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
  /// Each decimated part's spectrum (`part / 2 + 1` bins).
  private let spectra: UnsafeMutablePointer<UnsafeMutablePointer<fftwf_complex>>
  /// e^(−2πi·k/size) for k in 0...size/4: the decimation's twiddles.
  private let twiddles: UnsafeMutablePointer<(Float, Float)>
  /// The last analysis's powers (bins 0...size/2; a full-scale sinusoid's peak is 1).
  let power: UnsafeMutablePointer<Float>
  private let plans: [fftwf_plan]
  /// The size of each decimated part's FFT (`size / 2`).
  private let part: Int
  /// Where the window being analysed starts in `ring`, and the next step of its analysis
  /// (`analysisSteps` when none runs).
  private var windowStart = 0
  private var step = HowlDetector.analysisSteps
  /// Steps run per block of the current size (at least 1; enough to end before the next hop).
  private var stepsPerBlock = 1
  private var criteria = Criteria()
  /// Steps of one analysis: 4 of windowing, 2 FFTs, 4 of combining into powers, 2 of finding
  /// candidates, 1 following the tracks.
  static let analysisSteps = 13
  private let tracks: UnsafeMutablePointer<Track>
  /// Per track, its last `historyLength` levels (dB), oldest first after `hits` wraps.
  private let levels: UnsafeMutablePointer<Float>
  private let candidates: UnsafeMutablePointer<Candidate>
  private var candidateTotal = 0
  /// Where the next input frame goes in `ring` (the oldest frame is there).
  private var write = 0
  private var sinceHop = 0
  private let floorPower: Float
  /// Frequencies (Hz) reported by the last `analyze`.
  let detections: UnsafeMutablePointer<Float>
  private(set) var detectionCount = 0

  /// Sizes the FFT for `sampleRate` (4096 points at 44.1 and 48 kHz, about 85 ms) and makes its
  /// plan. Not real-time.
  init(sampleRate: Double) {
    var n = 1024
    while Double(n) < 0.08 * sampleRate { n *= 2 }
    size = n
    hop = n / 8
    half = n / 2
    binHz = Float(sampleRate) / Float(n)
    lowBin = max(Int(Self.lowHz / binHz), 10)
    highBin = min(Int(min(Self.highHz, Float(sampleRate) * 0.45) / binHz), half - 10)
    ring = .allocate(capacity: 2 * n)
    ring.initialize(repeating: 0, count: 2 * n)
    window = .allocate(capacity: n)
    for i in 0..<n { window[i] = Float(0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n))) }
    let q = n / 2
    part = q
    let inputs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2)
    let spectra = UnsafeMutablePointer<UnsafeMutablePointer<fftwf_complex>>.allocate(capacity: 2)
    for r in 0..<2 {
      guard let input = fftwf_alloc_real(q), let spectrum = fftwf_alloc_complex(q / 2 + 1) else {
        preconditionFailure("FFTW could not allocate a \(q)-point transform's buffers")
      }
      input.initialize(repeating: 0, count: q)
      (inputs + r).initialize(to: input)
      (spectra + r).initialize(to: spectrum)
    }
    (self.inputs, self.spectra) = (inputs, spectra)
    twiddles = .allocate(capacity: n / 4 + 1)
    for k in 0...(n / 4) {
      let a = -2 * Double.pi * Double(k) / Double(n)
      twiddles[k] = (Float(cos(a)), Float(sin(a)))
    }
    power = .allocate(capacity: half + 1)
    power.initialize(repeating: 0, count: half + 1)
    // (Plans cross the lock's closure as addresses: an `OpaquePointer` is not Sendable.)
    let pairs = (0..<2).map { (UInt(bitPattern: inputs[$0]), UInt(bitPattern: spectra[$0])) }
    let addresses = fftwPlanLock.withLock { _ in
      pairs.map { i, s in
        UInt(
          bitPattern: UnsafeMutableRawPointer(
            fftwf_plan_dft_r2c_1d(
              Int32(q), UnsafeMutablePointer(bitPattern: i), UnsafeMutablePointer(bitPattern: s),
              UInt32(FFTW_ESTIMATE))))
      }
    }
    plans = addresses.map {
      guard let plan = OpaquePointer(bitPattern: $0) else {
        preconditionFailure("FFTW could not plan a \(q)-point transform")
      }
      return plan
    }
    tracks = .allocate(capacity: Self.trackCount)
    tracks.initialize(repeating: Track(), count: Self.trackCount)
    levels = .allocate(capacity: Self.trackCount * Self.historyLength)
    levels.initialize(repeating: 0, count: Self.trackCount * Self.historyLength)
    candidates = .allocate(capacity: Self.candidateCount)
    candidates.initialize(repeating: Candidate(), count: Self.candidateCount)
    detections = .allocate(capacity: Self.candidateCount)
    detections.initialize(repeating: 0, count: Self.candidateCount)
    // A sinusoid of amplitude A peaks at |X| = A·n/4 through a Hann window: powers are scaled so
    // that a full-scale sinusoid's peak bin is 1 (0 dB).
    floorPower = powf(10, Self.floorDecibels / 10)
  }

  deinit {
    let addresses = plans.map { UInt(bitPattern: UnsafeMutableRawPointer($0)) }
    fftwPlanLock.withLock { _ in for a in addresses { fftwf_destroy_plan(OpaquePointer(bitPattern: a)) } }
    for r in 0..<2 {
      fftwf_free(inputs[r])
      fftwf_free(spectra[r])
    }
    inputs.deallocate()
    spectra.deallocate()
    twiddles.deallocate()
    ring.deallocate()
    window.deallocate()
    power.deallocate()
    tracks.deallocate()
    levels.deallocate()
    candidates.deallocate()
    detections.deallocate()
  }

  /// Forgets the signal and every track.
  /// - Realtime: safe
  func reset() {
    ring.update(repeating: 0, count: 2 * size)
    (write, sinceHop, detectionCount, step) = (0, 0, 0, Self.analysisSteps)
    tracks.update(repeating: Track(), count: Self.trackCount)
  }

  /// Appends a block's mono mix and runs this block's share of the pending analysis (a hop's
  /// analysis starts in the block where the hop completes and ends before the next hop); true
  /// when an analysis ended in this block: `detections` holds its `detectionCount` frequencies.
  /// - Realtime: safe
  func push(_ block: StereoBlock, criteria c: Criteria) -> Bool {
    let mask = 2 * size - 1
    var w = write
    for f in 0..<block.frames {
      ring[w] = 0.5 * (block.left[f] + block.right[f])
      w = (w + 1) & mask
    }
    write = w
    sinceHop += block.frames
    var ended = false
    if sinceHop >= hop {
      sinceHop -= hop
      // A hop shorter than a block's share of steps (blocks over a hop): the last one ends first.
      if step < Self.analysisSteps { ended = finish() }
      begin(c, blockFrames: block.frames)
    }
    guard step < Self.analysisSteps else { return ended }
    for _ in 0..<stepsPerBlock where step < Self.analysisSteps { runStep() }
    return step == Self.analysisSteps || ended
  }

  /// Analyses the last `size` frames at once (off the audio thread, or in tests); fills
  /// `detections` with the frequencies of the tracks that became feedback and returns their
  /// count.
  /// - Realtime: safe
  func analyze(_ c: Criteria) -> Int {
    begin(c, blockFrames: hop)
    _ = finish()
    return detectionCount
  }

  /// Starts the analysis of the `size` frames that end at `write`.
  /// - Realtime: safe
  private func begin(_ c: Criteria, blockFrames: Int) {
    windowStart = (write &+ 2 * size &- size) & (2 * size - 1)
    criteria = c
    step = 0
    // Every step before the next hop: one step per block for blocks up to a 16th of a hop (32
    // frames at 48 kHz).
    let blocks = max(hop / max(blockFrames, 1), 1)
    stepsPerBlock = (Self.analysisSteps + blocks - 1) / blocks
  }

  /// Runs the pending analysis's remaining steps; true when there was one.
  /// - Realtime: safe
  private func finish() -> Bool {
    let pending = step < Self.analysisSteps
    while step < Self.analysisSteps { runStep() }
    return pending
  }

  /// One step of the analysis. Bounded time: a quarter of the window, one half-size FFT, a
  /// quarter of the bins, half of the candidates' search, or the tracks (a few dozen operations
  /// per candidate and track).
  /// - Realtime: safe
  private func runStep() {
    let s = step
    step += 1
    switch s {
    case 0..<4: windowPart(s)
    case 4..<6: fftwf_execute(plans[s - 4])
    case 6..<10: combine(quarter: s - 6)
    case 10:
      candidateTotal = 0
      findCandidates(criteria.prominence, from: lowBin, to: (lowBin + highBin) / 2)
    case 11: findCandidates(criteria.prominence, from: (lowBin + highBin) / 2 + 1, to: highBin)
    default: followTracks(criteria)
    }
  }

  /// A quarter of the window, Hann-weighted, into the decimated inputs.
  /// - Realtime: safe
  private func windowPart(_ quarter: Int) {
    let mask = 2 * size - 1
    let (start, count) = (windowStart, part / 4)
    let (even, odd) = (inputs[0], inputs[1])
    for m in (quarter * count)..<((quarter + 1) * count) {
      let i = 2 * m
      even[m] = ring[(start &+ i) & mask] * window[i]
      odd[m] = ring[(start &+ i &+ 1) & mask] * window[i + 1]
    }
  }

  /// A quarter of the bins, as scaled powers: with E and O the even and odd frames' spectra (a
  /// real FFT's), X[k] = E[k] + W^k·O[k] and X[size/2 − k] = conj(E[k] − W^k·O[k])
  /// (W = e^(−2πi/size)): one twiddle for two bins, k in 0...size/4.
  /// - Realtime: safe
  private func combine(quarter: Int) {
    let pairs = size / 4 + 1
    let (from, to) = (quarter * pairs / 4, (quarter + 1) * pairs / 4)
    let (e, o, w, p) = (spectra[0], spectra[1], twiddles, power)
    let scale = 16 / (Float(size) * Float(size))
    for k in from..<to {
      let (er, ei) = e[k]
      let (or, oi) = o[k]
      let (c, d) = w[k]
      let (tr, ti) = (or * c - oi * d, or * d + oi * c)
      let (xr, xi) = (er + tr, ei + ti)
      let (yr, yi) = (er - tr, ei - ti)
      p[k] = (xr * xr + xi * xi) * scale
      p[half &- k] = (yr * yr + yi * yi) * scale
    }
  }

  /// Follows the candidates found into the tracks and fills `detections`.
  /// - Realtime: safe
  private func followTracks(_ c: Criteria) {
    for t in 0..<Self.trackCount where tracks[t].alive { tracks[t].absent += 1 }
    for i in 0..<candidateTotal { follow(candidates[i]) }
    detectionCount = 0
    for t in 0..<Self.trackCount where tracks[t].alive {
      if tracks[t].absent > Self.maskedHops {
        tracks[t].alive = false
        continue
      }
      if isFeedback(t, c) {
        detections[detectionCount] = tracks[t].hz
        detectionCount += 1
        // Reported once: if the howl goes on (the notch is not deep enough), it is reported again
        // after as many hops.
        (tracks[t].hits, tracks[t].anchoredHits) = (0, 0)
        if detectionCount == Self.candidateCount { break }
      }
    }
  }

  /// The mean power 4–8 bins either side of `k` (outside a Hann window's main lobe).
  /// - Realtime: safe
  @inline(__always)
  private func sidePower(_ k: Int) -> Float {
    var side: Float = 0
    for j in 4...8 { side += power[k - j] + power[k + j] }
    return side * 0.1
  }

  /// Whether bin `k` is the strongest of a howling cluster: in a long loop (delay over ~40 ms)
  /// the modes of a broad resonance are closer than the window's main lobe and ring together, a
  /// band a dozen bins wide that never stands out from its near sides. Such a peak is the
  /// largest within ±8 bins and 6 dB more than `prominence` above the mean power 16–32 bins
  /// (190–375 Hz at 48 kHz) either side.
  /// - Realtime: safe
  @inline(__always)
  private func isClusterPeak(_ k: Int, _ prominence: Float) -> Bool {
    guard k - 32 >= 0, k + 32 <= half else { return false }
    let p = power[k]
    for j in 1...8 where power[k - j] > p || power[k + j] > p { return false }
    var far: Float = 0
    for j in 16...32 { far += power[k - j] + power[k + j] }
    return p >= 4 * prominence * far / 34
  }

  /// The strongest local maxima in bins `from...to` above the floor that are at least
  /// `prominence` times their sides' mean power, added to `candidates` (strongest first).
  /// - Realtime: safe
  private func findCandidates(_ prominence: Float, from: Int, to: Int) {
    guard from <= to else { return }
    for k in from...to {
      let p = power[k]
      if p <= floorPower || p <= power[k - 1] || p < power[k + 1] { continue }
      if candidateTotal == Self.candidateCount && p <= candidates[Self.candidateCount - 1].power { continue }
      if p < prominence * sidePower(k) && !isClusterPeak(k, prominence) { continue }
      // Insertion into the sorted list.
      var i = min(candidateTotal, Self.candidateCount - 1)
      while i > 0 && candidates[i - 1].power < p {
        candidates[i] = candidates[i - 1]
        i -= 1
      }
      candidates[i] = Candidate(bin: k, power: p)
      candidateTotal = min(candidateTotal + 1, Self.candidateCount)
    }
  }

  /// Power in dB, floored.
  /// - Realtime: safe
  @inline(__always)
  private func decibels(_ p: Float) -> Float { 10 * log10f(max(p, 1e-20)) }

  /// Matches a candidate to a track (or starts one) and updates the track.
  /// - Realtime: safe
  private func follow(_ candidate: Candidate) {
    let k = candidate.bin
    // Parabolic interpolation of the log-magnitude peak.
    let (a, b, g) = (decibels(power[k - 1]), decibels(candidate.power), decibels(power[k + 1]))
    let curvature = a - 2 * b + g
    let delta = curvature < 0 ? min(max(0.5 * (a - g) / curvature, -0.5), 0.5) : 0
    let hz = (Float(k) + delta) * binHz
    let level = b - 0.25 * (a - g) * delta
    guard hz.isFinite, level.isFinite else { return }
    let qualified = !isHarmonicPart(k, candidate.power)
    var t = -1
    var free = -1
    // With no free slot, the track that has missed its peak longest (not this hop's) gives way.
    var stalest = -1
    for i in 0..<Self.trackCount {
      if tracks[i].alive {
        // The nearest track whose band, widened by one bin, holds the peak.
        let distance = abs(0.5 * (tracks[i].lowHz + tracks[i].highHz) - hz)
        if hz > tracks[i].lowHz - binHz && hz < tracks[i].highHz + binHz
          && (t < 0 || distance < abs(0.5 * (tracks[t].lowHz + tracks[t].highHz) - hz))
        {
          t = i
        }
        if tracks[i].absent > 1 && (stalest < 0 || tracks[i].absent > tracks[stalest].absent) { stalest = i }
      } else if free < 0 {
        free = i
      }
    }
    if free < 0 { free = stalest }
    if t < 0 {
      guard free >= 0 else { return }
      t = free
      tracks[t] = Track(hz: hz, lowHz: hz, highHz: hz, anchorHz: hz, absent: 1, alive: true)
    }
    var track = tracks[t]
    if track.absent == 0 { return }  // already matched at this hop by a stronger candidate
    track.absent = 0
    track.hz = hz
    (track.lowHz, track.highHz) = (min(track.lowHz, hz), max(track.highHz, hz))
    if track.highHz - track.lowHz > Self.stableBins * binHz {
      // Moved: not feedback (vibrato, melody); start over from here.
      (track.lowHz, track.highHz, track.hits, track.rejected) = (hz, hz, 0, 0)
      (track.anchorHz, track.anchoredHits) = (hz, 0)
    }
    if abs(hz - track.anchorHz) > Self.growingBins * binHz { (track.anchorHz, track.anchoredHits) = (hz, 0) }
    if qualified {
      levels[t * Self.historyLength + track.hits % Self.historyLength] = level
      track.hits += 1
      track.anchoredHits += 1
      track.rejected = 0
    } else {
      track.rejected += 1
      if track.rejected > Self.maskedHops { (track.hits, track.anchoredHits) = (0, 0) }
    }
    tracks[t] = track
  }

  /// The track's level `back` qualified hops before its latest one.
  /// - Realtime: safe
  @inline(__always)
  private func level(_ t: Int, back: Int) -> Float {
    let hits = tracks[t].hits
    return levels[t * Self.historyLength + (hits - 1 - back) % Self.historyLength]
  }

  /// Whether track `t` is feedback now: it grew steadily (about linearly in dB, as a howl grows
  /// exponentially — not a tone's onset filling the window, which slows down) over the last
  /// hops, or it has persisted, prominent, for `steadyHops`.
  /// - Realtime: safe
  private func isFeedback(_ t: Int, _ c: Criteria) -> Bool {
    let track = tracks[t]
    if track.absent > 0 || track.rejected > 0 { return false }
    // Steady: a qualified candidate (prominent) at one frequency for `steadyHops` hops, gaps
    // included (a howl under speech, or chopped by the loop's dropouts, rarely stands out more).
    if track.hits >= c.steadyHops { return true }
    return grew(t, over: c.fastHops, by: c.growthDecibels)
      || grew(t, over: Self.historyLength - 1, by: 1.5 * c.growthDecibels)
  }

  /// Whether track `t`'s level rose by `needed` dB over its last `span` qualified hops, the
  /// second half of the span by at least 0.3 times as much as the first.
  /// - Realtime: safe
  @inline(__always)
  private func grew(_ t: Int, over span: Int, by needed: Float) -> Bool {
    if tracks[t].anchoredHits <= span { return false }
    let now = level(t, back: 0)
    let middle = level(t, back: span / 2)
    let start = level(t, back: span)
    let (first, second) = (middle - start, now - middle)
    return now - start >= needed && second >= 0.3 * first
  }

  /// Whether bin `k` looks like part of a harmonic series: a prominent peak within 12 dB of it at
  /// its octave, at one of its subharmonics, or two such peaks equally spaced around it or below
  /// it (its neighbours in a series of any fundamental from 70 to 500 Hz).
  /// - Realtime: safe
  private func isHarmonicPart(_ k: Int, _ p: Float) -> Bool {
    let minimum = p * 0.063
    let f = Float(k)
    if hasPeak(near: 2 * f, above: minimum) || hasPeak(near: f / 2, above: minimum)
      || hasPeak(near: f / 3, above: minimum)
    {
      return true
    }
    // Equal spacing: peaks at f − d and f + d, or f − d and f − 2d.
    let lowestSpacing = max(Int(70 / binHz), 3)
    let highestSpacing = min(Int(500 / binHz), k - lowBin)
    if lowestSpacing > highestSpacing { return false }
    var d = lowestSpacing
    while d <= highestSpacing {
      if let below = peak(near: k - d, above: minimum) {
        let spacing = k - below
        if hasPeak(near: Float(k + spacing), above: minimum)
          || hasPeak(near: Float(k - 2 * spacing), above: minimum)
        {
          return true
        }
        d = spacing + 2
      } else {
        d += 3
      }
    }
    return false
  }

  /// Whether there is a local maximum within about ±1.5 % (at least ±1 bin) of bin position `x`
  /// with power above `minimum`, at least 4 times its sides' mean power.
  /// - Realtime: safe
  @inline(__always)
  private func hasPeak(near x: Float, above minimum: Float) -> Bool {
    let tolerance = max(Int(0.015 * x), 1)
    let center = Int(x.rounded())
    guard center - tolerance >= 10, center + tolerance <= half - 10 else { return false }
    var best = center - tolerance
    for i in (center - tolerance)...(center + tolerance) where power[i] > power[best] { best = i }
    let q = power[best]
    return q > minimum && q >= power[best - 1] && q >= power[best + 1] && q >= 4 * sidePower(best)
  }

  /// The bin of a peak as `hasPeak` finds it within ±1 bin of `k`, or nil.
  /// - Realtime: safe
  @inline(__always)
  private func peak(near k: Int, above minimum: Float) -> Int? {
    guard k - 1 >= 10, k + 1 <= half - 10 else { return nil }
    var best = k - 1
    for i in k...(k + 1) where power[i] > power[best] { best = i }
    let q = power[best]
    if q > minimum && q >= power[best - 1] && q >= power[best + 1] && q >= 4 * sidePower(best) {
      return best
    }
    return nil
  }
}
