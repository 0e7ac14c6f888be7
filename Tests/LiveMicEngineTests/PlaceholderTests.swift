import Testing

@testable import LiveMicEngine

@Suite struct EnginePlaceholderTests {
  @Test("the engine module loads") func loads() { #expect(ProcessState.crossfadeSeconds > 0) }
}
