import Foundation

// The scanner behind `RealtimeMarks`: blanking comments and strings, finding declarations,
// their bodies and parameters, and the calls in a body.
extension RealtimeMarks {
  enum Receiver: Equatable {
    /// `name(`.
    case bare
    case selfValue
    case type(String)
    case value
  }

  struct Call {
    var name: String
    var receiver: Receiver
    /// `Type(…)`: an initializer call.
    var isConstruction = false
    /// The arguments' labels ("_" for none).
    var labels: [String] = []
    var hasTrailingClosure = false
  }

  static let keywords: Set<String> = [
    "if", "guard", "while", "for", "switch", "return", "catch", "repeat", "do", "else", "defer",
    "super", "self", "Self", "func", "in", "where", "case", "let", "var", "throw", "throws", "try",
    "await", "as", "is", "get", "set", "willSet", "didSet", "some", "any", "init", "deinit",
    "inout", "static", "private", "fileprivate", "public", "internal", "mutating", "nonmutating",
    "typealias", "associatedtype", "import", "struct", "class", "enum", "extension", "protocol",
    "actor", "subscript", "operator", "default", "break", "continue", "fallthrough", "nil",
    "true", "false", "unsafe",
  ]

  /// A pattern of the scanner's own (a bad one is a bug in this file).
  static func regex(_ pattern: String) -> NSRegularExpression {
    do { return try NSRegularExpression(pattern: pattern) } catch {
      fatalError("the scanner's pattern \(pattern) is invalid: \(error)")
    }
  }

  /// Calls in `code[range]`: an identifier followed by `(` (a call with a trailing closure and
  /// no parentheses is not seen).
  static func calls(in code: [UInt8], range: Range<Int>) -> [Call] {
    var calls: [Call] = []
    var i = range.lowerBound
    while i < range.upperBound {
      guard isIdentifierStart(code[i]), i == 0 || !isIdentifierByte(code[i - 1]) else {
        i += 1
        continue
      }
      var end = i
      while end < range.upperBound && isIdentifierByte(code[end]) { end += 1 }
      let name = String(decoding: code[i..<end], as: UTF8.self)
      defer { i = end }
      guard end < range.upperBound, code[end] == UInt8(ascii: "(") else { continue }
      let (labels, trailing) = arguments(in: code, open: end)
      // What stands before it: `.` (a member), and before the dot, a name.
      var before = i - 1
      while before >= range.lowerBound && (code[before] == 0x20 || code[before] == 0x09) { before -= 1 }
      let isMember = before >= range.lowerBound && code[before] == UInt8(ascii: ".")
      if !isMember {
        // `func name(` of a nested function is a declaration, not a call.
        var word = before
        while word >= range.lowerBound && isIdentifierByte(code[word]) { word -= 1 }
        let previous = String(decoding: code[(word + 1)..<(before + 1)], as: UTF8.self)
        if previous == "func" || keywords.contains(name) { continue }
        if let first = name.unicodeScalars.first, CharacterSet.uppercaseLetters.contains(first) {
          calls.append(
            Call(
              name: "init", receiver: .type(name), isConstruction: true, labels: labels,
              hasTrailingClosure: trailing))
        } else {
          calls.append(Call(name: name, receiver: .bare, labels: labels, hasTrailingClosure: trailing))
        }
        continue
      }
      var start = before - 1
      while start >= range.lowerBound && isIdentifierByte(code[start]) { start -= 1 }
      let receiver = String(decoding: code[(start + 1)..<before], as: UTF8.self)
      let precededByDot = start >= range.lowerBound && code[start] == UInt8(ascii: ".")
      if receiver.isEmpty && code[before - 1] != UInt8(ascii: ")") && code[before - 1] != UInt8(ascii: "]")
        && code[before - 1] != UInt8(ascii: "?") && code[before - 1] != UInt8(ascii: "!")
      {
        // `.name(`: an implicit member (an enum case or a static of the inferred type).
        if name != "init" {
          calls.append(Call(name: name, receiver: .value, labels: labels, hasTrailingClosure: trailing))
        }
      } else if (receiver == "self" || receiver == "Self") && !precededByDot {
        calls.append(Call(name: name, receiver: .selfValue, labels: labels, hasTrailingClosure: trailing))
      } else if let first = receiver.unicodeScalars.first, CharacterSet.uppercaseLetters.contains(first),
        !precededByDot || modules.contains(receiver)
      {
        calls.append(
          Call(name: name, receiver: .type(receiver), labels: labels, hasTrailingClosure: trailing))
      } else {
        calls.append(Call(name: name, receiver: .value, labels: labels, hasTrailingClosure: trailing))
      }
    }
    return calls
  }

  /// The labels of the arguments in the parentheses opening at `open`, and whether a trailing
  /// closure follows them.
  static func arguments(in code: [UInt8], open: Int) -> (labels: [String], trailingClosure: Bool) {
    let close = matchingParen(in: code, open: open)
    var next = close
    while next < code.count && (code[next] == 0x20 || code[next] == 0x09) { next += 1 }
    let trailing = next < code.count && code[next] == UInt8(ascii: "{")
    let labels = topLevelItems(in: code, from: open + 1, to: close - 1, angleBrackets: false).map {
      item -> String in
      var end = 0
      while end < item.count && isIdentifierByte(item[end]) { end += 1 }
      var colon = end
      while colon < item.count && (item[colon] == 0x20 || item[colon] == 0x09) { colon += 1 }
      let isLabel =
        end > 0 && isIdentifierStart(item[0]) && colon < item.count && item[colon] == UInt8(ascii: ":")
        && (colon + 1 >= item.count || item[colon + 1] != UInt8(ascii: ":"))
      return isLabel ? String(decoding: item[0..<end], as: UTF8.self) : "_"
    }
    return (labels, trailing)
  }

  /// The parameters of a declaration whose parentheses open at `open`.
  static func parameters(in code: [UInt8], open: Int) -> [Parameter] {
    let close = matchingParen(in: code, open: open)
    return topLevelItems(in: code, from: open + 1, to: close - 1, angleBrackets: true).map { item in
      let text = String(decoding: item, as: UTF8.self)
      let head = text.split(separator: ":", maxSplits: 1).first.map(String.init) ?? text
      let names = head.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
        .filter { !$0.hasPrefix("@") }
      let type = text.split(separator: ":", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
      return Parameter(
        label: names.first.map(String.init) ?? "_", hasDefault: type.contains("="),
        isVariadic: type.replacingOccurrences(of: " ", with: "").hasSuffix("..."))
    }
  }

  /// The comma-separated items of `code[from..<to]` at depth 0, trimmed (none when empty);
  /// `angleBrackets`: `<` and `>` nest too (in types, not in expressions).
  static func topLevelItems(in code: [UInt8], from: Int, to: Int, angleBrackets: Bool) -> [ArraySlice<UInt8>]
  {
    guard from < to else { return [] }
    var items: [ArraySlice<UInt8>] = []
    var depth = 0
    var start = from
    func add(_ range: Range<Int>) {
      var slice = code[range]
      while let first = slice.first, first == 0x20 || first == 0x09 || first == 0x0A {
        slice = slice.dropFirst()
      }
      while let last = slice.last, last == 0x20 || last == 0x09 || last == 0x0A { slice = slice.dropLast() }
      if !slice.isEmpty { items.append(ArraySlice(Array(slice))) }
    }
    for i in from..<to {
      switch code[i] {
      case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
      case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
      case UInt8(ascii: "<") where angleBrackets: depth += 1
      case UInt8(ascii: ">") where angleBrackets && !(i > 0 && code[i - 1] == UInt8(ascii: "-")):
        depth -= 1  // `->` is not a closing bracket
      case UInt8(ascii: ",") where depth == 0:
        add(start..<i)
        start = i + 1
      default: break
      }
    }
    add(start..<to)
    return items
  }

  /// The functions, initializers and requirements declared in `code`.
  static func declarations(in code: [UInt8], original: [UInt8], file: String) -> [Declaration] {
    let text = String(decoding: code, as: UTF8.self)
    let lineStarts = [0] + code.indices.filter { code[$0] == 0x0A }.map { $0 + 1 }
    func line(of offset: Int) -> Int {
      var low = 0
      var high = lineStarts.count - 1
      while low < high {
        let mid = (low + high + 1) / 2
        if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
      }
      return low + 1
    }
    // Types and extensions, with their bodies.
    var types: [(name: String, body: Range<Int>)] = []
    let typePattern = Self.regex(
      #"(?<![A-Za-z0-9_])(struct|class|enum|extension|actor|protocol)\s+([A-Za-z_][A-Za-z0-9_.]*)"#)
    for match in typePattern.matches(in: text, range: NSRange(location: 0, length: code.count)) {
      guard let nameRange = Range(match.range(at: 2)) else { continue }
      let name = String(decoding: code[nameRange], as: UTF8.self)
      guard !keywords.contains(name), let open = firstBrace(in: code, from: match.range.upperBound) else {
        continue
      }
      types.append(
        (String(name.split(separator: ".").last ?? ""), open..<matchingBrace(in: code, open: open)))
    }
    // Functions and initializers.
    var found:
      [(name: String, offset: Int, body: Range<Int>?, parameters: [Parameter], isFilePrivate: Bool)] = []
    let functionPattern = Self.regex(
      #"(?<![A-Za-z0-9_.])(?:func\s+([A-Za-z_][A-Za-z0-9_]*)|(init)[?!]?)\s*(?:<[^>{]*>)?\s*\("#)
    for match in functionPattern.matches(in: text, range: NSRange(location: 0, length: code.count)) {
      let nameMatch = match.range(at: 1).location != NSNotFound ? match.range(at: 1) : match.range(at: 2)
      guard let nameRange = Range(nameMatch) else { continue }
      let name = String(decoding: code[nameRange], as: UTF8.self)
      let open = match.range.upperBound - 1
      let close = matchingParen(in: code, open: open)
      let lineStart = lineStarts[line(of: match.range.location) - 1]
      let modifiers = String(decoding: code[lineStart..<match.range.location], as: UTF8.self)
      found.append(
        (
          name, match.range.location, bodyAfterSignature(in: code, from: close + 1),
          parameters(in: code, open: open), modifiers.contains("private")
        ))
    }
    return found.map { item in
      let type = types.filter { $0.body.contains(item.offset) }.min { $0.body.count < $1.body.count }?.name
      let nested = found.contains { other in other.body.map { $0.contains(item.offset) } ?? false }
      let declarationLine = line(of: item.offset)
      return Declaration(
        name: item.name, type: type, file: file, line: declarationLine,
        marked: docComment(original: original, lineStarts: lineStarts, line: declarationLine).contains(mark),
        nested: nested, body: item.body, parameters: item.parameters, isFilePrivate: item.isFilePrivate)
    }
  }

  /// The `///` lines directly above line `line` (attributes between them and it allowed).
  static func docComment(original: [UInt8], lineStarts: [Int], line: Int) -> String {
    var lines: [String] = []
    var index = line - 2
    while index >= 0 {
      let end = index + 1 < lineStarts.count ? lineStarts[index + 1] : original.count
      let text = String(decoding: original[lineStarts[index]..<end], as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
      if text.hasPrefix("///") {
        lines.append(text)
      } else if !text.hasPrefix("@") {
        break
      }
      index -= 1
    }
    return lines.reversed().joined(separator: "\n")
  }

  /// After a signature's closing parenthesis: the body's range, or nil when the declaration
  /// has none (a protocol requirement). The signature may go on over lines that begin with
  /// `->`, `throws`, `rethrows`, `async` or `where`.
  static func bodyAfterSignature(in code: [UInt8], from start: Int) -> Range<Int>? {
    var i = start
    var depth = 0
    var lineBegins = false
    while i < code.count {
      let c = code[i]
      if c == UInt8(ascii: "(") || c == UInt8(ascii: "[") {
        depth += 1
      } else if c == UInt8(ascii: ")") || c == UInt8(ascii: "]") {
        depth -= 1
      } else if depth == 0 && c == UInt8(ascii: "{") {
        return i..<matchingBrace(in: code, open: i)
      } else if depth == 0 && c == UInt8(ascii: "}") {
        return nil
      } else if c == 0x0A {
        lineBegins = true
      } else if lineBegins && c != 0x20 && c != 0x09 && depth == 0 {
        lineBegins = false
        let rest = String(decoding: code[i..<min(i + 9, code.count)], as: UTF8.self)
        if !["->", "throws", "rethrows", "async", "where", "{"].contains(where: { rest.hasPrefix($0) }) {
          return nil
        }
      }
      i += 1
    }
    return nil
  }

  /// The first `{` after `start` (a type's body, past its conformances and where clause).
  static func firstBrace(in code: [UInt8], from start: Int) -> Int? {
    code[start...].firstIndex(of: UInt8(ascii: "{"))
  }

  static func matchingBrace(in code: [UInt8], open: Int) -> Int { matching(code, open, "{", "}") }
  static func matchingParen(in code: [UInt8], open: Int) -> Int { matching(code, open, "(", ")") }

  fileprivate static func matching(
    _ code: [UInt8], _ open: Int, _ opening: Unicode.Scalar, _ closing: Unicode.Scalar
  )
    -> Int
  {
    var depth = 0
    var i = open
    while i < code.count {
      if code[i] == UInt8(ascii: opening) { depth += 1 }
      if code[i] == UInt8(ascii: closing) {
        depth -= 1
        if depth == 0 { return i + 1 }
      }
      i += 1
    }
    return code.count
  }

  static func isIdentifierStart(_ c: UInt8) -> Bool {
    (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_")
  }

  static func isIdentifierByte(_ c: UInt8) -> Bool { isIdentifierStart(c) || (c >= 0x30 && c <= 0x39) }

  /// `source` with every comment and string literal replaced by spaces (newlines kept), so
  /// offsets and lines stay those of the source.
  static func blank(_ source: [UInt8]) -> [UInt8] {
    var code = source
    var i = 0
    func clear(_ range: Range<Int>) {
      for j in range where code[j] != 0x0A { code[j] = 0x20 }
    }
    func at(_ offset: Int, _ text: String) -> Bool {
      let bytes = Array(text.utf8)
      return offset + bytes.count <= source.count && Array(source[offset..<(offset + bytes.count)]) == bytes
    }
    while i < source.count {
      if at(i, "//") {
        let end = source[i...].firstIndex(of: 0x0A) ?? source.count
        clear(i..<end)
        i = end
      } else if at(i, "/*") {
        var depth = 0
        var j = i
        repeat {
          if at(j, "/*") {
            depth += 1
            j += 2
          } else if at(j, "*/") {
            depth -= 1
            j += 2
          } else {
            j += 1
          }
        } while depth > 0 && j < source.count
        clear(i..<j)
        i = j
      } else if at(i, "\"\"\"") || at(i, "#\"") || source[i] == UInt8(ascii: "\"") {
        let (opening, closing) =
          at(i, "\"\"\"") ? ("\"\"\"", "\"\"\"") : at(i, "#\"") ? ("#\"", "\"#") : ("\"", "\"")
        var j = i + opening.utf8.count
        while j < source.count && !at(j, closing) {
          if source[j] == UInt8(ascii: "\\") && opening != "#\"" { j += 1 }
          if opening == "\"" && source[j] == 0x0A { break }
          j += 1
        }
        j = min(j + closing.utf8.count, source.count)
        clear(i..<j)
        i = j
      } else {
        i += 1
      }
    }
    return code
  }
}
