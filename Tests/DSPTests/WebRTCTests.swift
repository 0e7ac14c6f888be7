import CWebRTC
import Foundation
import Testing

@testable import DSP

/// WebRTC's engines of `denoise`, `aec` and `leveler` (offline: processed inline), beside the
/// built-in units' figures in `SpeexUnitTests` and `HeldNoteTests`.
@Suite struct WebRTCTests {
  typealias T = TestSignals

  @Test(
    "The WebRTC units declare their latency (two frames and WebRTC's own delay), and speech arrives then",
    arguments: ["webrtc-denoise", "webrtc-aec", "webrtc-leveler"])
  func latency(_ type: String) throws {
    guard let speech = Speech.samples else { return }
    let chain = T.chain(type)
    #expect(chain.latencyFrames > 960, "\(type)")
    let y = T.processMono(chain, speech + [Float](repeating: 0, count: 4000))
    // The lag at which the output correlates best with the input, within 200 frames of the
    // declared one (every eighth sample: cheap enough for the sanitizer runs).
    var best = (lag: 0, sum: -Double.infinity)
    let declared = chain.latencyFrames
    y.withUnsafeBufferPointer { out in
      speech.withUnsafeBufferPointer { input in
        for lag in max(declared - 200, 0)..<(declared + 200) {
          // A plain loop: in a debug build under TSan, generic `stride` iteration took locks.
          var (sum, i) = (0.0, 0)
          while i < input.count - 2000 {
            sum += Double(input[i]) * Double(out[i + lag])
            i += 8
          }
          if sum > best.sum { best = (lag, sum) }
        }
      }
    }
    T.measured("\(type): declares \(chain.latencyFrames) frames; speech correlates best at \(best.lag)")
    #expect(
      abs(best.lag - chain.latencyFrames) <= 2, "\(type): declared \(chain.latencyFrames), found \(best.lag)")
  }

  @Test(
    "the context a chain is prepared with reaches its WebRTC units: live at a 2048-frame period, more latency than offline"
  )
  func contextReachesUnits() throws {
    let stage = [StageDescription(id: "denoise", type: "webrtc-denoise")]
    let offline = try ChainAssembly.build(stage, sampleRate: 48000)
    let live = try ChainAssembly.build(
      stage, sampleRate: 48000, context: .live(helperPriority: 0, hostPeriodFrames: 2048))
    #expect(offline.context == .offline && live.context.hostPeriodFrames == 2048)
    // Offline: two 10 ms frames and WebRTC's own; live, a whole period instead of the second.
    #expect(
      live.latencyFrames - offline.latencyFrames == 2048 - 480,
      "\(offline.latencyFrames) → \(live.latencyFrames)")
    #expect(ProcessingContext.offline.helperLatencyChanges(toPeriod: 256, sampleRate: 48000) == false)
    #expect(live.context.helperLatencyChanges(toPeriod: 256, sampleRate: 48000))
  }

  @Test(
    "A helper fed faster than real time: the frames it did not finish are played dry (the input, delayed as processed audio is), counted in late_frames"
  )
  func lateFramesArePlayedDryAndCounted() throws {
    var core = WebRTCUnitCore()
    core.prepare(
      sampleRate: 48000, maxFrames: 256, features: Int32(LIVEMIC_WEBRTC_NOISE),
      context: .live(helperPriority: 0, hostPeriodFrames: 0))
    let latency = core.latencyFrames
    #expect(core.lateFrames == 0)
    // 5 s of a tone in blocks of 256 frames (copied in and out whole), as fast as this thread
    // can push them: no helper processes 500 of WebRTC's 10 ms frames in the few milliseconds
    // that takes, so most are late.
    let frames = 5 * 48000
    let (input, output, left, right) = (
      UnsafeMutablePointer<Float>.allocate(capacity: frames),
      UnsafeMutablePointer<Float>.allocate(capacity: frames),
      UnsafeMutablePointer<Float>.allocate(capacity: 256), UnsafeMutablePointer<Float>.allocate(capacity: 256)
    )
    defer { for p in [input, output, left, right] { p.deallocate() } }
    for f in 0..<frames { input[f] = 0.25 * sinf(2 * .pi * 440 * Float(f) / 48000) }
    var at = 0
    while at < frames {
      let n = min(256, frames - at)
      left.update(from: input + at, count: n)
      right.update(from: input + at, count: n)
      core.run(StereoBlock(left: left, right: right, frames: n), setting: SIMD2(2, 0)) {
        livemic_webrtc_set_noise_level($0, $1[0])
      }
      (output + at).update(from: left, count: n)
      at += n
    }
    let late = Int(core.lateFrames)
    // The samples that are the input `latency` frames earlier: played dry. Each late frame is
    // played dry whole (480 samples), none in part (a processed sample is never the input): all
    // but the first frame's first samples, which fall before the input's start (WebRTC's own
    // delay, under 480 frames). Before the fix, a frame the helper finished while it was being
    // played switched to the processed signal halfway: 400–7,400 samples fewer here.
    let dry = (latency..<frames).count { output[$0] == input[$0 - latency] }
    T.measured("a helper outrun: \(late) of \((frames - latency) / 480) frames late, \(dry) samples dry")
    #expect(late > 100, "\(late) late frames")
    #expect(
      dry <= late * 480 && dry > late * 480 - 480,
      "\(dry) samples dry, \(late) frames counted late (\(late * 480) samples)")
  }

  @Test("webrtc-denoise improves the SNR of speech in white noise")
  func denoiseImprovesSNR() throws {
    guard let speech = Speech.samples else { return }
    let lead = 48_000
    let clean = [Float](repeating: 0, count: lead) + speech
    let cleanRMS = (Speech.energy(speech) / Double(speech.count)).squareRoot()
    let noise = T.noise(
      frames: clean.count, amplitude: Float(cleanRMS / pow(10, 5.0 / 20) * 3.0.squareRoot()), seed: 42)
    let noisy = zip(clean, noise).map { $0 + $1 }
    let (before, after, _) = Speech.denoised(
      T.chain("webrtc-denoise"), noisy: noisy, clean: clean, lead: lead)
    T.measured(
      "webrtc-denoise: SI-SNR " + String(format: "%.1f → %.1f dB (%+.1f)", before, after, after - before))
    #expect(after - before >= 2, "SNR improvement \(after - before) dB")
  }

  @Test("webrtc-aec cancels a simulated echo path (ERLE after convergence)")
  func aecERLE() {
    let frames = 6 * 48_000
    let (echo, output, latency) = SpeexUnitTests.singleTalk(WebRTCEchoCanceller.self, frames: frames)
    let erle = SpeexUnitTests.erle(
      echo, output, latency: latency, over: (frames - 2 * 48_000)..<(frames - latency))
    T.measured("webrtc-aec: ERLE " + String(format: "%.1f dB over the last 2 s", erle))
    #expect(erle >= 15, "ERLE \(erle) dB")
  }

  @Test("webrtc-leveler raises quiet speech towards its target")
  func levelerRaisesQuietSpeech() throws {
    guard let speech = Speech.samples else { return }
    let quiet = speech.map { $0 * 0.05 } + speech.map { $0 * 0.05 }
    let chain = T.chain("webrtc-leveler")
    let y = T.processMono(chain, quiet)
    let half = quiet.count / 2
    let gain = 10 * log10(Speech.energy(y[half...]) / max(Speech.energy(quiet[half...]), 1e-20))
    T.measured("webrtc-leveler: quiet speech (-26 dB) raised by " + String(format: "%.1f dB", gain))
    #expect(gain > 3, "gain \(gain) dB")
  }

  @Test("A sung note through webrtc-denoise (measured beside the built-in unit's)")
  func sungNote() {
    let drop = HeldNoteTests.drop(HeldNoteTests.sungNote, through: T.chain("webrtc-denoise"))
    T.measured("webrtc-denoise, sung note: " + String(format: "%.1f dB lost", drop))
    #expect(drop.isFinite)
  }
}
