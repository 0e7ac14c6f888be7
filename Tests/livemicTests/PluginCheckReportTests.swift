import Foundation
import Testing

@testable import livemic

/// The parts of `livemic plugins check` that need no server: the guard's line, a child's
/// outcome, the lines and the summary.
@Suite struct PluginCheckReportTests {
  @Test("rtguard's line: counts, clean or unsafe with every counter")
  func guardCounts() throws {
    let clean = try #require(
      GuardCounts(
        line: "cycles=188 malloc=0 free=0 lock=0 wait=0 io=0 sleep=0 first=none us_mean=1.2 us_p99=3"))
    #expect(clean.cycles == 188 && clean.clean && clean.text == "clean")
    let unsafe = try #require(
      GuardCounts(line: "cycles=188 malloc=376 free=376 lock=0 wait=0 io=0 sleep=0 first=malloc us_mean=2"))
    #expect(!unsafe.clean)
    #expect(unsafe.text == "unsafe: malloc=376 free=376 lock=0 wait=0 io=0 sleep=0 (first: malloc)")
    #expect(GuardCounts(line: "") == nil)
  }

  @Test("A child's exit and JSON line make the outcome")
  func outcomes() {
    let rendered = #"{"outcome":"rendered","frames":48000,"blocks":188,"peak":0.25,"nonFiniteBlocks":0}"#
    #expect(
      ChildRun.outcome(status: 0, output: rendered + "\n", errors: "") == .hosted(peakDb: 20 * log10(0.25)))
    let silent = #"{"outcome":"rendered","frames":48000,"blocks":188,"peak":0,"nonFiniteBlocks":0}"#
    #expect(ChildRun.outcome(status: 0, output: silent, errors: "") == .noSound(peakDb: -.infinity))
    let nan = #"{"outcome":"rendered","frames":48000,"blocks":188,"peak":1,"nonFiniteBlocks":3}"#
    #expect(ChildRun.outcome(status: 0, output: nan, errors: "") == .nonFinite(blocks: 3, of: 188))
    let refused =
      #"{"outcome":"refused","reason":"it requires the feature X, which LiveMic cannot provide here"}"#
    #expect(
      ChildRun.outcome(status: 0, output: refused, errors: "")
        == .refused("it requires the feature X, which LiveMic cannot provide here"))
    #expect(
      ChildRun.outcome(
        status: 1, output: "", errors: "a plugin's log\nlivemic: error: cannot open a JACK client\n")
        == .failed("cannot open a JACK client"))
    #expect(
      ChildRun.outcome(status: 3, output: "", errors: "")
        == .failed("the check process exited with status 3 and no result"))
  }

  @Test("One line per plugin, and a summary with every outcome")
  func linesAndSummary() throws {
    let counts = try #require(
      GuardCounts(line: "cycles=188 malloc=2 free=0 lock=0 wait=0 io=0 sleep=0 first=malloc"))
    let entries = [
      CheckEntry(uri: "urn:a", name: "A", outcome: .hosted(peakDb: -12.04), counts: counts, seconds: 1),
      CheckEntry(
        uri: "urn:b", name: "B", outcome: .refused("it has 0 audio input(s)"), counts: nil, seconds: 0),
      CheckEntry(uri: "urn:c", name: "C", outcome: .crashed(signal: 6), counts: counts, seconds: 1),
      CheckEntry(uri: "urn:d", name: "D", outcome: .timedOut(seconds: 10), counts: nil, seconds: 10),
    ]
    #expect(
      entries.map(\.line) == [
        "urn:a — hosted (peak -12.0 dBFS), unsafe: malloc=2 free=0 lock=0 wait=0 io=0 sleep=0 (first: malloc)",
        "urn:b — refused: it has 0 audio input(s)", "urn:c — crashed: signal 6 (Aborted)",
        "urn:d — timed out: no result within 10 s, killed",
      ])
    #expect(
      PluginCheck.summary(entries, seconds: 12.4, guarded: true)
        == "4 plugins checked in 12 s: 1 hosted, 0 no sound, 0 non-finite, 1 refused, 0 failed, 1 crashed, "
        + "1 timed out; of the 1 that ran, 0 clean, 1 unsafe")
  }
}
