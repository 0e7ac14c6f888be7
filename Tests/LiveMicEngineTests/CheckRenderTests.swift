import CJack
import DSP
import Testing

@testable import LiveMicEngine

/// `CheckRender` (what `livemic plugins check`'s process callback runs) driven without a server:
/// periods of any size until the noise is through, then nothing.
@Suite struct CheckRenderTests {
  typealias E = Engine

  @Test("Periods render the noise through the chain until every frame is through, then signal and stop")
  func rendersUntilThrough() {
    let render = CheckRender(chain: E.chain(gain: 0.5), sampleRate: 48000, seconds: 0.01, maxFrames: 64)
    #expect(render.totalFrames == 480)
    render.warm()
    #expect(render.result == CheckRender.Result(frames: 0, blocks: 0, peak: 0, nonFiniteBlocks: 0))
    // 100 frames a period, in blocks of at most 64: 64 + 36 each.
    for _ in 0..<4 { _ = render.process(frames: 100) }
    #expect(render.finished.wait(timeout: .now()) == .timedOut)
    _ = render.process(frames: 100)
    #expect(render.finished.wait(timeout: .now()) == .success)
    let result = render.result
    #expect(result.frames == 480 && result.blocks == 10 && result.nonFiniteBlocks == 0)
    // Uniform noise of ±0.25, halved by the chain.
    #expect(result.peak > 0.12 && result.peak <= 0.125, "\(result.peak)")
    _ = render.process(frames: 100)
    #expect(render.result.blocks == 10, "a finished render runs nothing more")
  }

  @Test("The noise is the same every run and differs between the channels")
  func deterministicNoise() {
    let a = CheckRender(chain: E.chain(), sampleRate: 48000, seconds: 0.001, maxFrames: 64)
    let b = CheckRender(chain: E.chain(), sampleRate: 48000, seconds: 0.001, maxFrames: 64)
    let frames = a.totalFrames
    #expect((0..<frames).allSatisfy { a.noiseLeft[$0] == b.noiseLeft[$0] })
    #expect((0..<frames).contains { a.noiseLeft[$0] != a.noiseRight[$0] })
    #expect((0..<frames).allSatisfy { abs(a.noiseLeft[$0]) <= 0.25 })
  }
}
