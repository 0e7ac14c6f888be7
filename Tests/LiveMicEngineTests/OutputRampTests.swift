import Testing

@testable import LiveMicEngine

/// The output ramp: start quiet, fade in over 1 s and out within 50 ms along a squared curve.
@Suite struct OutputRampTests {
  static let rate = 48000.0

  /// Runs `frames` of a constant 1 through `ramp` in blocks of `block`; returns the gains.
  static func gains(_ ramp: OutputRamp, frames: Int, block: Int = 256, monitor: Bool = false) -> [Float] {
    var result: [Float] = []
    let (l, r) = (
      UnsafeMutablePointer<Float>.allocate(capacity: block),
      UnsafeMutablePointer<Float>.allocate(capacity: block)
    )
    let (ml, mr) = (
      UnsafeMutablePointer<Float>.allocate(capacity: block),
      UnsafeMutablePointer<Float>.allocate(capacity: block)
    )
    defer { [l, r, ml, mr].forEach { $0.deallocate() } }
    var done = 0
    while done < frames {
      let n = min(block, frames - done)
      for p in [l, r, ml, mr] { p.initialize(repeating: 1, count: n) }
      ramp.apply(left: l, right: r, frames: n, alsoLeft: monitor ? ml : nil, alsoRight: monitor ? mr : nil)
      for f in 0..<n {
        #expect(l[f] == r[f])
        if monitor { #expect(ml[f] == l[f] && mr[f] == l[f], "the monitor pair gets the same gain") }
        result.append(l[f])
      }
      done += n
    }
    return result
  }

  @Test("The ramp starts quiet and opens over 1 s along a squared curve")
  func fadeIn() {
    let ramp = OutputRamp(sampleRate: Self.rate)
    #expect(ramp.isSilent && !ramp.isFullyOpen)
    let g = Self.gains(ramp, frames: 48000 + 512)
    let step = Float(1 / Self.rate)
    #expect(abs(g[0] - step * step) < 1e-12, "the first frame is nearly silent")
    #expect(abs(g[11999] - 0.0625) < 1e-3, "a quarter of the way: (1/4)²")
    #expect(abs(g[23999] - 0.25) < 1e-3, "halfway: (1/2)²")
    #expect(g[47000] < 1 && g[48100] == 1, "full level after 1 s")
    #expect(zip(g, g.dropFirst()).allSatisfy { $0 <= $1 }, "monotonic")
    #expect(ramp.isFullyOpen && !ramp.isSilent)
  }

  @Test("A cut silences the next cycle from full level; a fade-in after it starts from silence")
  func cut() {
    let ramp = OutputRamp(sampleRate: Self.rate)
    _ = Self.gains(ramp, frames: 48000 + 256)
    #expect(ramp.isFullyOpen)
    ramp.cut()
    #expect(Self.gains(ramp, frames: 4096, block: 64, monitor: true).allSatisfy { $0 == 0 })
    #expect(ramp.isSilent)
    // Cut while stalled, then told to go on before the audio thread ran again (the route's
    // `continue` policy): the next cycle starts from silence and ramps up.
    _ = Self.gains(ramp, frames: 0)
    ramp.fadeIn()
    _ = Self.gains(ramp, frames: 48000 + 256)
    ramp.cut()
    ramp.fadeIn()
    let g = Self.gains(ramp, frames: 2400, block: 64)
    let step = Float(1 / Self.rate)
    #expect(abs(g[0] - step * step) < 1e-12, "the first frame after the cut is nearly silent")
    #expect(abs(g[2399] - 0.0025) < 1e-4, "50 ms into the fade-in: (1/20)²")
  }

  @Test("Once open the output is untouched; a fade-out reaches silence within 50 ms and stays there")
  func fadeOut() {
    let ramp = OutputRamp(sampleRate: Self.rate)
    _ = Self.gains(ramp, frames: 48000 + 256)
    #expect(Self.gains(ramp, frames: 1024).allSatisfy { $0 == 1 })
    ramp.fadeOut()
    let g = Self.gains(ramp, frames: 2400 + 256, block: 64)
    #expect(abs(g[1199] - 0.25) < 1e-3, "halfway down: (1/2)²")
    #expect(g[2399] == 0, "silent after 50 ms (2400 frames)")
    #expect(g[2399...].allSatisfy { $0 == 0 })
    #expect(ramp.isSilent)
    #expect(Self.gains(ramp, frames: 512).allSatisfy { $0 == 0 }, "muted blocks are zeroed")
    ramp.fadeIn()
    let up = Self.gains(ramp, frames: 512)
    #expect(up[0] > 0 && up[511] < 0.001, "back up from silence over 1 s")
  }

  @Test("The monitor pair follows the same gains as the outputs")
  func monitorPair() {
    let ramp = OutputRamp(sampleRate: Self.rate)
    _ = Self.gains(ramp, frames: 6000, monitor: true)
    ramp.fadeOut()
    _ = Self.gains(ramp, frames: 3000, monitor: true)
  }

  @Test("Rewind returns the ramp to silence")
  func rewind() {
    let ramp = OutputRamp(sampleRate: Self.rate)
    _ = Self.gains(ramp, frames: 49000)
    #expect(ramp.isFullyOpen)
    ramp.rewind()
    #expect(ramp.isSilent)
    #expect(Self.gains(ramp, frames: 1)[0] < 1e-9)
  }
}
