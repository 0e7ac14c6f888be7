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
