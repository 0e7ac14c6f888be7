import Foundation
import Testing

@testable import DSP

/// The howl analysis spread over cycles (issue 36): its spectrum is a full-size FFT's, and at
/// small blocks a block runs one step of it, not a whole analysis.
struct HowlAnalysisTests {
  typealias T = TestSignals

  static func block(
    _ samples: inout [Float], _ copy: inout [Float], from: Int, frames: Int, _ body: (StereoBlock) -> Void
  ) {
    samples.withUnsafeMutableBufferPointer { l in
      copy.withUnsafeMutableBufferPointer { r in
        guard let l = l.baseAddress, let r = r.baseAddress else { return }
        body(StereoBlock(left: l + from, right: r + from, frames: frames))
      }
    }
  }

  /// The decimated transform's powers match a direct DFT of the Hann-windowed window.
  @Test func spectrumIsTheFullSizeTransform() {
    let detector = HowlDetector(sampleRate: T.sampleRate)
    let n = detector.size
    var x = T.noise(frames: n, amplitude: 0.3)
    for (i, s) in T.sine(hz: 1234.5, amplitude: 0.5, frames: n).enumerated() { x[i] += s }
    var y = x
    Self.block(&x, &y, from: 0, frames: n) { _ = detector.push($0, criteria: .init()) }
    _ = detector.analyze(.init())
    let scale = 16 / (Double(n) * Double(n))
    for k in [0, 1, 17, 105, 106, 500, 1023, 1024, 1025, 1500, 2047, 2048] {
      var (re, im) = (0.0, 0.0)
      for i in 0..<n {
        let w = 0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n))
        let a = -2 * Double.pi * Double(k) * Double(i) / Double(n)
        re += Double(x[i]) * w * cos(a)
        im += Double(x[i]) * w * sin(a)
      }
      let expected = (re * re + im * im) * scale
      let got = Double(detector.power[k])
      #expect(abs(got - expected) <= 1e-4 * max(expected, 1e-6), "bin \(k): \(got) against \(expected)")
    }
  }

  /// At 16 frames a hop's analysis ends 12 blocks after the block where the hop completes (13
  /// steps, one per block) and before the next hop; at 256 frames it ends within the next block.
  @Test(arguments: [(16, 12), (32, 12), (64, 6), (256, 1)])
  func analysisSpreadsOverBlocks(blockFrames: Int, blocksAfterHop: Int) {
    let detector = HowlDetector(sampleRate: T.sampleRate)
    let hops = 6
    let frames = detector.hop * hops + detector.hop
    var x = T.noise(frames: frames, amplitude: 0.1)
    var y = x
    var ended: [Int] = []
    var hopBlocks: [Int] = []
    var seen = 0
    for b in 0..<(frames / blockFrames) {
      let before = seen / detector.hop
      seen += blockFrames
      if seen / detector.hop > before { hopBlocks.append(b) }
      Self.block(&x, &y, from: b * blockFrames, frames: blockFrames) {
        if detector.push($0, criteria: .init()) { ended.append(b) }
      }
    }
    let expected = hopBlocks.map { $0 + blocksAfterHop }.filter { $0 < frames / blockFrames }
    #expect(ended == expected, "hops completed in blocks \(hopBlocks)")
  }
}
