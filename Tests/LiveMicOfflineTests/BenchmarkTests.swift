import DSP
import Foundation
import TestSupport
import Testing

/// `livemic bench`, run as users run it: the built binary (its sox comparison runs the binary's
/// own `render`). The figures are this machine's; the tests check that every table is there and
/// whole, not how fast anything is (docs/performance.md has the figures).
@Suite("livemic bench")
struct BenchmarkTests {
  /// The numbers in a Markdown table row's cells after the first (`1.23`, `860×`).
  static func figures(_ row: Substring) -> [Double] {
    row.split(separator: "|").dropFirst().compactMap {
      Double($0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "×", with: ""))
    }
  }

  @Test(
    "bench --seconds 1: a row for every built-in unit and the voice chain, the denormal table, and sox against render with the ratio",
    .enabled(if: Programs.releaseLivemic != nil))
  func tablesAreWhole() throws {
    let binary = try #require(Programs.releaseLivemic)
    let (status, out, err) = try Programs.run(binary, ["bench", "--seconds", "1"])
    #expect(status == 0, "\(err)")
    let lines = out.split(separator: "\n")
    #expect(lines.first == "LiveMic benchmark: 1 s of stereo audio at 48 kHz, blocks of 256 frames", "\(out)")
    let names = BuiltinUnits.types.map { $0.typeName } + ["whole voice chain"]
    for name in names {
      let row = lines.first { $0.hasPrefix("| \(name) |") }
      let values = row.map(Self.figures) ?? []
      #expect(values.count == 2 && values.allSatisfy { $0 > 0 && $0.isFinite }, "\(name): \(row ?? "no row")")
    }
    // Denormals: both floating-point modes measured (x86-64 and AArch64 have both).
    for mode in ["| IEEE subnormals", "| flush-to-zero + denormals-are-zero"] {
      let row = lines.first { $0.hasPrefix(mode) }
      #expect(row.map(Self.figures)?.count == 3, "\(mode): \(row ?? "no row")")
    }
    if Programs.tool("sox") != nil {
      let commands = lines.filter {
        $0.hasPrefix("| `sox in.wav") || $0.hasPrefix("| `livemic render -p voice")
      }
      #expect(commands.count == 2 && commands.allSatisfy { Self.figures($0).count == 2 }, "\(out)")
      let ratio = lines.first { $0.hasPrefix("Ratio sox / livemic render: ") }
      #expect(ratio?.hasSuffix("(goal: at least 2×)") == true, "\(out)")
    } else {
      #expect(out.contains("sox is not installed: no comparison"), "\(out)")
    }
  }

  @Test(
    "bench refuses a length outside 1…3600 s in one sentence, and --no-sox leaves the comparison out",
    .enabled(if: Programs.releaseLivemic != nil))
  func arguments() throws {
    let binary = try #require(Programs.releaseLivemic)
    for bad in ["0", "3601", "abc"] {
      let (status, out, err) = try Programs.run(binary, ["bench", "--seconds", bad])
      #expect(status != 0 && out.isEmpty, "--seconds \(bad)")
      let sentence = "livemic: error: --seconds takes a whole number from 1 to 3600, not '\(bad)'"
      #expect(err == sentence + "; see 'livemic --help'\n", "\(err)")
    }
    let (status, out, _) = try Programs.run(binary, ["bench", "--seconds", "1", "--no-sox"])
    #expect(status == 0 && out.contains("| whole voice chain |") && !out.contains("Ratio sox"), "\(out)")
  }
}
