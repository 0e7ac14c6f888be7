import Foundation
import LiveMicPresets
import Testing

/// `JSONValue`, the parser every preset and control message goes through: numbers that no
/// `Double` or `Int` holds are refused in words, never trapped on.
@Suite struct JSONValueTests {
  @Test("A number beyond a double's range is refused in one clause that names where it is")
  func numberBeyondDouble() {
    let error = #expect(throws: JSONParseError.self) {
      try JSONValue.parse(Data(#"{"cmd":"set","key":"output.volume","value":1e400}"#.utf8))
    }
    #expect(
      error?.reason == "the number at 'value' is beyond the range of a double", "\(String(describing: error))"
    )
    let parsed = try? JSONValue.parse(Data(#"{"value":-1e308}"#.utf8))
    #expect(parsed?.object?["value"]?.number == -1e308)
  }

  @Test("`integer` is a whole number an Int holds, and nil for fractions and numbers beyond ±2⁶³")
  func integer() {
    #expect(JSONValue.number(3).integer == 3)
    #expect(JSONValue.number(-7).integer == -7)
    for n in [1.5, 1e23, -1e300, 9.3e18, .infinity, .nan] {
      #expect(JSONValue.number(n).integer == nil, "\(n)")
    }
    #expect(JSONValue.string("3").integer == nil)
  }
}
