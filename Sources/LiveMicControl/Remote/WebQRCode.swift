import CQRencode
import Foundation

/// The web remote's URL as a QR code for a terminal (libqrencode), so a phone can open it: two
/// modules per character cell with the upper and lower half blocks, a quiet zone of four.
///
/// Thread: any.
public enum WebQRCode {
  /// The code's lines (dark modules drawn as light-on-dark, as terminals scan best), ending in a
  /// newline; nil when the text does not encode.
  public static func terminalText(_ text: String) -> String? {
    guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_L, QR_MODE_8, 1) else { return nil }
    defer { QRcode_free(code) }
    let width = Int(code.pointee.width)
    let quiet = 2
    let size = width + 2 * quiet
    func dark(_ x: Int, _ y: Int) -> Bool {
      let (cx, cy) = (x - quiet, y - quiet)
      guard cx >= 0, cy >= 0, cx < width, cy < width else { return false }
      return code.pointee.data[cy * width + cx] & 1 == 1
    }
    var out = ""
    for y in stride(from: 0, to: size, by: 2) {
      for x in 0..<size {
        // A light module is drawn (the terminal's foreground), a dark one left as background.
        switch (!dark(x, y), y + 1 < size ? !dark(x, y + 1) : true) {
        case (true, true): out += "\u{2588}"
        case (true, false): out += "\u{2580}"
        case (false, true): out += "\u{2584}"
        case (false, false): out += " "
        }
      }
      out += "\n"
    }
    return out
  }
}
