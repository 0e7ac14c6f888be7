import DSP
import Foundation
import Testing

@testable import livemic

/// The repository, for the documents the references must match.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent()

@Suite("Reference text")
struct ReferenceTests {
  @Test("docs/parameters.md is what 'livemic params --markdown' generates")
  func parametersDocIsGenerated() throws {
    let doc = try String(
      contentsOf: packageRoot.appendingPathComponent("docs/parameters.md"), encoding: .utf8)
    #expect(
      doc == Reference.parameters(markdown: true),
      "regenerate: livemic params --markdown > docs/parameters.md")
  }

  @Test("the README's units table names every unit and each of its parameters")
  func readmeUnitsTable() throws {
    let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    for unit in BuiltinUnits.types {
      let row = readme.split(separator: "\n").first { $0.hasPrefix("| `\(unit.typeName)` |") }
      #expect(row != nil, "README.md has no row for the unit \(unit.typeName)")
      for spec in unit.parameters {
        #expect(
          row?.contains("`\(spec.name)`") == true, "README.md's row of \(unit.typeName) lacks \(spec.name)")
      }
    }
  }

  @Test("every parameter has a summary, a unit-bearing name and a default inside its range")
  func specsAreDocumented() {
    for unit in BuiltinUnits.types {
      for spec in unit.parameters {
        #expect(!spec.summary.isEmpty && spec.summary.hasSuffix("."), "\(unit.typeName).\(spec.name)")
        #expect(
          spec.defaultValue >= spec.minimum && spec.defaultValue <= spec.maximum,
          "\(unit.typeName).\(spec.name)")
      }
    }
  }
}
