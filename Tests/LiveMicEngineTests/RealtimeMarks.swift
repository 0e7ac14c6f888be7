import Foundation

/// A source check of the real-time marks: every function that a function marked
/// `- Realtime: safe` calls, and that the project itself declares, is marked too; the entry
/// points the audio thread enters from C (`roots`) are marked. Starting from the marked JACK
/// process callback, every project function the audio thread can reach therefore carries the
/// mark. Calls into the standard library and C are outside it: the real-time guard (the
/// preloaded counter of allocator, lock, wait, I/O and sleep calls) checks what they do.
///
/// The call graph comes from the sources, without the compiler: comments and string literals
/// are blanked, function bodies found by their braces, and a call `name(`, `x.name(`,
/// `Type.name(` or `Type(` resolved by name. A bare call (or `self.name(`) resolves within its
/// own type when that type declares the name; a call through a value resolves to every
/// function of that name in the audio-path modules (protocol dispatch: every conformer). So the
/// graph over-approximates: a name shared with a function the audio thread never calls makes
/// that function a callee too; `exempt` names those edges, each with a reason. Functions
/// nested in a body belong to it (its mark covers them). Computed properties are not followed.
struct RealtimeMarks {
  /// A function, initializer or protocol requirement declared in the sources.
  struct Declaration: Hashable {
    var name: String
    /// The innermost type or extension around it (nil for a global function).
    var type: String?
    var file: String
    var line: Int
    var marked: Bool
    /// Declared inside another function's body.
    var nested: Bool
    /// The body's byte range in the blanked code (nil for a requirement without a body).
    var body: Range<Int>?
    /// Its parameters' argument labels ("_" for none), and whether each has a default.
    var parameters: [Parameter] = []
    /// `private` or `fileprivate`: callable from its own file only.
    var isFilePrivate = false
    var qualifiedName: String { type.map { "\($0).\(name)" } ?? name }
    var location: String { "\(file):\(line)" }
  }

  /// A parameter as a call sees it.
  struct Parameter: Hashable {
    var label: String
    var hasDefault: Bool
    var isVariadic: Bool
  }

  /// One call from a marked function to an unmarked one.
  struct Violation: CustomStringConvertible {
    var caller: Declaration
    var callee: Declaration
    var description: String {
      "\(callee.qualifiedName) (\(callee.location)) is called by \(caller.qualifiedName) (\(caller.location)), "
        + "which is marked '- Realtime: safe', but is not marked itself"
    }
  }

  /// The functions the audio thread enters from C: the JACK process callbacks (LiveMic's and
  /// `plugins check`'s), and the LV2 worker's `schedule`, which a plugin calls from its `run`.
  static let roots = ["livemicProcess", "livemicCheckProcess", "PluginWorker.schedule"]

  static let mark = "- Realtime: safe"

  private(set) var declarations: [Declaration] = []
  private var codeByFile: [String: [UInt8]] = [:]

  /// Reads `sources` (file name → text).
  init(sources: [String: String]) {
    for (file, text) in sources.sorted(by: { $0.key < $1.key }) {
      let original = Array(text.utf8)
      let code = Self.blank(original)
      codeByFile[file] = code
      declarations += Self.declarations(in: code, original: original, file: file)
    }
  }

  /// Reads every Swift file under `folders`.
  init(folders: [URL]) throws { self.init(sources: try Self.sources(in: folders)) }

  /// Every Swift file under `folders`, by its name from the folder on (`DSP/Biquad.swift`).
  static func sources(in folders: [URL]) throws -> [String: String] {
    var sources: [String: String] = [:]
    for folder in folders {
      guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
        continue
      }
      for case let url as URL in files where url.pathExtension == "swift" {
        let name = folder.lastPathComponent + "/" + url.path.dropFirst(folder.path.count + 1)
        sources[name] = try String(contentsOf: url, encoding: .utf8)
      }
    }
    return sources
  }

  /// The calls from marked functions to unmarked project functions, less `exempt` (callee
  /// qualified names), and the roots that are missing or unmarked.
  func violations(exempt: Set<String> = []) -> (calls: [Violation], roots: [String]) {
    var calls: [Violation] = []
    for caller in declarations where caller.marked && !caller.nested {
      for callee in callees(of: caller) where !callee.marked && !exempt.contains(callee.qualifiedName) {
        calls.append(Violation(caller: caller, callee: callee))
      }
    }
    let roots = Self.roots.filter { root in
      !declarations.contains { !$0.nested && $0.qualifiedName == root && $0.marked }
    }
    return (calls, roots)
  }

  /// The project functions `caller`'s body may call.
  func callees(of caller: Declaration) -> [Declaration] {
    guard let body = caller.body, let code = codeByFile[caller.file] else { return [] }
    var found: [Declaration] = []
    let candidates = declarations.filter { !$0.nested }
    for call in Self.calls(in: code, range: body) {
      let named = candidates.filter {
        $0.name == call.name && (!$0.isFilePrivate || $0.file == caller.file)
          && Self.accepts($0.parameters, call.labels, trailingClosure: call.hasTrailingClosure)
      }
      var targets: [Declaration]
      switch call.receiver {
      case .bare:
        let own = named.filter { $0.type != nil && $0.type == caller.type }
        let global = named.filter { $0.type == nil }
        targets = !own.isEmpty ? own : !global.isEmpty ? global : named
      case .selfValue:
        let own = named.filter { $0.type == caller.type }
        targets = own.isEmpty ? named.filter { $0.type != nil } : own
      case .type(let type):
        if call.name == "init" || call.isConstruction {
          targets = candidates.filter {
            $0.name == "init" && $0.type == type
              && Self.accepts($0.parameters, call.labels, trailingClosure: call.hasTrailingClosure)
          }
        } else if Self.modules.contains(type) {
          targets = named.filter { $0.type == nil }
        } else {
          targets = named.filter { $0.type == type }
        }
      case .value:
        targets = named.filter { $0.type != nil }
      }
      for target in targets where target != caller && !found.contains(target) { found.append(target) }
    }
    return found
  }

  /// Whether a call with argument `labels` can call a function with `parameters`: each label
  /// in order, parameters with defaults skipped, trailing parameters left to a trailing closure.
  static func accepts(_ parameters: [Parameter], _ labels: [String], trailingClosure: Bool) -> Bool {
    var j = 0
    for parameter in parameters {
      if j < labels.count && labels[j] == parameter.label {
        j += 1
        while parameter.isVariadic && j < labels.count && labels[j] == "_" { j += 1 }
      } else if parameter.hasDefault {
        continue
      } else if trailingClosure && j == labels.count {
        continue
      } else {
        return false
      }
    }
    return j == labels.count
  }

  /// The audio path's modules (a call `DSP.name(` is a global function's).
  static let modules: Set<String> = ["DSP", "LiveMicEngine", "LV2Host"]
}
