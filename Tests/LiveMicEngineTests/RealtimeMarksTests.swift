import Foundation
import Testing

/// Every project function the audio thread can reach carries `- Realtime: safe`
/// (`RealtimeMarks`: a source check of the call graph from the JACK process callback).
@Suite struct RealtimeMarksTests {
  /// The package's root, from this file's path.
  static var root: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
  }

  /// Edges of the name-based graph that are not real calls of the audio thread: a callee named
  /// like a real-time function but never reached from one. Each with its reason.
  static let exempt: [String: String] = [
    "VoiceChain.set":
      "the audio thread sets parameters by index, ParameterTargets.set(_:_:); VoiceChain.set(_:_:) looks a key up, for the control thread",
    "TapConsumer.read":
      "the tap writer threads read their rings; the worker's responses.read(into:) on the audio thread is WorkerRing.read",
    "MidiMap.clear":
      "the control thread's; the clear() calls on the audio thread are the de-esser's filters'",
  ]

  @Test("Every project function a marked function calls is marked; the entry points from C are marked")
  func sourcesAreMarked() throws {
    let folders = ["DSP", "LiveMicEngine", "LV2Host"].map {
      Self.root.appendingPathComponent("Sources").appendingPathComponent($0)
    }
    let sources = try RealtimeMarks.sources(in: folders)
    let marks = RealtimeMarks(sources: sources)
    let marked = marks.declarations.filter(\.marked).count
    print("[measured] real-time marks: \(marks.declarations.count) functions, \(marked) marked")
    #expect(marked > 100, "the sources were not found under \(Self.root.path)")
    let (calls, roots) = marks.violations(exempt: Set(Self.exempt.keys))
    #expect(roots.isEmpty, "entry points from C missing or unmarked: \(roots)")
    #expect(
      calls.isEmpty, "\(calls.count) unmarked callees:\n\(calls.map(\.description).joined(separator: "\n"))")
    // Without the mark on the high-pass's coefficient update (a private helper its process
    // calls), the check names it.
    let file = "DSP/Units/HighPass.swift"
    let unmarked = try #require(sources[file]).replacingOccurrences(
      of: "  /// - Realtime: safe\n  private mutating func update(", with: "  private mutating func update(")
    #expect(unmarked != sources[file], "HighPass.update is no longer marked where this test expects it")
    var changed = sources
    changed[file] = unmarked
    let found = RealtimeMarks(sources: changed).violations(exempt: Set(Self.exempt.keys)).calls
    #expect(found.map(\.callee.qualifiedName) == ["HighPass.update"], "\(found)")
  }

  @Test("A deliberately unmarked callee is caught, through a bare call, a method and an initializer")
  func catchesAnUnmarkedCallee() {
    let source = """
      /// The JACK process callback.
      /// - Realtime: safe
      func livemicProcess() {
        helper()  // a call in a comment: helperInComment()
        let s = "a call in a string: fromString()"
        var unit = Unit()
        unit.reset()
        func local() {}
        local()
      }
      func helper() {}
      func helperInComment() {}
      func fromString() {}
      struct Unit {
        init() {}
        /// - Realtime: safe
        mutating func process() { reset() }
        mutating func reset() {}
      }
      final class PluginWorker {
        /// - Realtime: safe
        func schedule() {}
      }
      /// - Realtime: safe
      func livemicCheckProcess() {}
      """
    let marks = RealtimeMarks(sources: ["Test.swift": source])
    let (calls, roots) = marks.violations()
    let found = Set(calls.map { "\($0.caller.qualifiedName) -> \($0.callee.qualifiedName)" })
    #expect(
      found == [
        "livemicProcess -> helper", "livemicProcess -> Unit.init", "livemicProcess -> Unit.reset",
        "Unit.process -> Unit.reset",
      ], "\(found)")
    #expect(roots.isEmpty, "\(roots)")
    // Marking them clears it.
    let fixed = source.replacingOccurrences(of: "func helper()", with: "/// - Realtime: safe\nfunc helper()")
      .replacingOccurrences(of: "  init() {}", with: "  /// - Realtime: safe\n  init() {}")
      .replacingOccurrences(
        of: "  mutating func reset()", with: "  /// - Realtime: safe\n  mutating func reset()")
    #expect(RealtimeMarks(sources: ["Test.swift": fixed]).violations().calls.isEmpty)
    // An unmarked root is named.
    let unmarkedRoot = source.replacingOccurrences(
      of: "  /// - Realtime: safe\n  func schedule", with: "  func schedule")
    #expect(
      RealtimeMarks(sources: ["Test.swift": unmarkedRoot]).violations().roots == ["PluginWorker.schedule"])
  }
}
