import DSP
import Foundation
import Testing

/// Chain assembly errors, latency, and robustness against non-finite input.
@Suite struct ChainTests {
  typealias T = TestSignals

  static func build(_ stages: [StageDescription]) throws(ChainError) -> VoiceChain {
    try ChainAssembly.build(stages, sampleRate: T.sampleRate)
  }

  /// A description is one sentence: non-empty, one line, no trailing whitespace, no sentence
  /// break inside.
  static func isOneSentence(_ s: String) -> Bool {
    !s.isEmpty && !s.contains(where: \.isNewline) && s.last.map { !$0.isWhitespace } == true
      && !s.contains(". ") && s.first.map { !$0.isWhitespace } == true
  }

  // MARK: Errors

  @Test("Unknown unit type")
  func unknownUnit() {
    #expect(throws: ChainError.unknownUnit(id: "fx", type: "flanger")) {
      try Self.build([StageDescription(id: "eq", type: "eq"), StageDescription(id: "fx", type: "flanger")])
    }
    let message = ChainError.unknownUnit(id: "fx", type: "flanger").description
    #expect(Self.isOneSentence(message), "\(message)")
    #expect(message.contains("'flanger'") && message.contains("limiter"), "names the type and the known ones")
  }

  @Test("Unknown parameter")
  func unknownParameter() {
    #expect(
      throws: ChainError.unknownParameter(
        id: "bright", name: "gain_db", known: Equalizer.parameters.map(\.name) + ["bypass"])
    ) {
      try Self.build([StageDescription(id: "bright", type: "eq", values: ["gain_db": 3])])
    }
    do {
      _ = try Self.build([StageDescription(id: "hp", type: "highpass", values: ["cutoff": 100])])
      Issue.record("an unknown parameter was accepted")
    } catch {
      #expect(Self.isOneSentence(error.description), "\(error.description)")
      #expect(error.description.contains("'cutoff'") && error.description.contains("freq_hz"))
    }
  }

  @Test("Duplicate id")
  func duplicateId() {
    #expect(throws: ChainError.duplicateId("eq")) {
      try Self.build([StageDescription(id: "eq", type: "eq"), StageDescription(id: "eq", type: "eq")])
    }
    #expect(Self.isOneSentence(ChainError.duplicateId("eq").description))
    // Different ids for the same type are fine, with separate parameters.
    let chain = try? Self.build([
      StageDescription(id: "eq", type: "eq"), StageDescription(id: "eq2", type: "eq"),
    ])
    #expect(chain?.parameter("eq2.bass_db") != nil)
  }

  @Test("Invalid ids", arguments: ["", "1eq", "_eq", "-eq", "e q", "eq.low", "eq/2", "eq:1", " eq", "eq "])
  func invalidId(id: String) {
    #expect(throws: ChainError.invalidId(id)) {
      try Self.build([StageDescription(id: id, type: "eq")])
    }
    let message = ChainError.invalidId(id).description
    #expect(Self.isOneSentence(message) || id.hasSuffix(" ") || id.hasPrefix(" "), "\(message)")
  }

  @Test("Valid ids", arguments: ["eq", "EQ2", "low_cut", "de-ess", "e"])
  func validId(id: String) throws {
    let chain = try Self.build([StageDescription(id: id, type: "eq")])
    #expect(chain.parameter("\(id).bass_db") != nil)
    #expect(chain.parameter("\(id).bypass") != nil)
  }

  @Test("Every error description is one sentence")
  func descriptions() {
    let errors: [ChainError] = [
      .unknownUnit(id: "a", type: "b"), .unknownParameter(id: "a", name: "b", known: ["c", "d"]),
      .duplicateId("a"), .invalidId("1a"),
    ]
    for e in errors { #expect(Self.isOneSentence(e.description), "\(e.description)") }
  }

  @Test("Parameters: every unit's keys, ranges and sanitizing")
  func parameters() throws {
    let chain = try Self.build(BuiltinUnits.defaultChain)
    for type in BuiltinUnits.types {
      // (Read-only outputs cannot be set: `FeedbackTests` checks that.)
      for spec in type.parameters + [BuiltinUnits.bypassParameter] where spec.kind != .output {
        let key = "\(type.typeName).\(spec.name)"
        #expect(chain.parameter(key)?.spec == spec, "\(key)")
        if spec.kind == .output {
          #expect(chain.set(key, spec.maximum) == nil, "\(key) is read-only")
          continue
        }
        #expect(chain.set(key, spec.maximum + 1000) == spec.maximum)
        #expect(chain.set(key, spec.minimum - 1000) == spec.minimum)
        #expect(chain.set(key, .nan) == spec.defaultValue)
      }
    }
    #expect(chain.set("eq.nonsense", 1) == nil)
    #expect(chain.set("highpass.slope_db", 17) == 12)
    #expect(chain.set("highpass.slope_db", 19) == 24)
  }

  // MARK: Latency

  /// The units with latency (`aec`, `denoise`: 10 ms each, see `SpeexUnitTests`) are left out
  /// here; the default chain declares their sum.
  static let zeroLatencyChain = BuiltinUnits.defaultChain.filter { !["aec", "denoise"].contains($0.type) }

  @Test("Zero latency: an impulse answers at its own frame")
  func zeroLatency() throws {
    #expect(try Self.build(BuiltinUnits.defaultChain).latencyFrames == 960)
    let chain = try Self.build(Self.zeroLatencyChain)
    #expect(chain.latencyFrames == 0)
    #expect(chain.stages.count == BuiltinUnits.types.count - 2)
    for stage in chain.stages { #expect(stage.latencyFrames == 0, "\(stage.id)") }
    let y = T.processMono(chain, T.impulse(frames: 4800))
    #expect(y[0] != 0)
    // Also mid-block: nothing before the impulse, an answer at its frame.
    let chain2 = try Self.build(Self.zeroLatencyChain)
    let z = T.processMono(chain2, T.impulse(frames: 4800, amplitude: 0.5, at: 1000), blockSize: 48)
    #expect(z[0..<1000].allSatisfy { $0 == 0 })
    #expect(z[1000] != 0)
  }

  // MARK: Non-finite input

  @Test("NaN and Inf input: finite output, and the chain recovers")
  func nonFiniteInput() throws {
    let chain = try Self.build(BuiltinUnits.defaultChain)
    chain.set("output.volume", 1)
    let signal = T.sine(hz: 440, amplitude: 0.3, frames: 4800)
    _ = T.processMono(chain, signal)
    var left = T.noise(frames: 512, amplitude: 0.5)
    var right = left
    for i in stride(from: 0, to: 512, by: 7) { left[i] = .nan }
    for i in stride(from: 3, to: 512, by: 11) { right[i] = .infinity }
    left[100] = -.infinity
    right[200] = -.nan
    T.process(chain, left: &left, right: &right, blockSize: 100)
    #expect(left.allSatisfy { $0.isFinite } && right.allSatisfy { $0.isFinite })
    // A whole block of NaN, then normal signal again.
    var bad = [Float](repeating: .nan, count: 256)
    var bad2 = bad
    T.process(chain, left: &bad, right: &bad2)
    #expect(bad.allSatisfy { $0.isFinite } && bad2.allSatisfy { $0.isFinite })
    let after = T.processMono(chain, signal)
    #expect(after.allSatisfy { $0.isFinite })
    #expect(T.peak(after[2400...]) > 0.05, "normal signal passes again")
  }

  /// Finite input so large a unit overflows (+40 dB on 1e37): the stage that went non-finite is
  /// reset and silenced, the output stays finite, and normal signal passes afterwards.
  @Test("Overflow inside a unit is contained")
  func overflow() throws {
    let chain = try Self.build([
      StageDescription(id: "input", type: "input", values: ["gain_db": 40]),
      StageDescription(id: "eq", type: "eq", values: ["bass_db": 20]),
      StageDescription(id: "limiter", type: "limiter"),
    ])
    let huge = [Float](repeating: 1e37, count: 256)
    let y = T.processMono(chain, huge)
    #expect(y.allSatisfy { $0.isFinite })
    let after = T.processMono(chain, T.sine(hz: 440, amplitude: 0.001, frames: 9600))
    #expect(after.allSatisfy { $0.isFinite })
    #expect(T.peak(after[4800...]) > 0.01, "normal signal passes again")
  }

  /// A finite but absurd input (1e37 from a broken client) is clamped to ±1000 at the chain's
  /// input, so +40 dB of input gain on it cannot overflow to Inf (nor the limiter to NaN).
  @Test("A one-frame spike cannot overflow a stateless stage")
  func transientOverflow() throws {
    let chain = try Self.build([
      StageDescription(id: "input", type: "input", values: ["gain_db": 40]),
      StageDescription(id: "limiter", type: "limiter"),
    ])
    var x = [Float](repeating: 0.01, count: 256)
    x[10] = 1e37
    let y = T.processMono(chain, x)
    #expect(y.allSatisfy { $0.isFinite })
    #expect(y.allSatisfy { abs($0) <= 0.9 }, "the limiter's default ceiling holds")
  }
}
