import Testing

@testable import LV2Host

@Suite struct LV2HostPlaceholderTests {
  @Test("the LV2 host module loads") func loads() { #expect(PluginWorker.maxMessageBytes > 0) }
}
