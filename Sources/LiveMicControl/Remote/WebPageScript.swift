/// The page's script (served as `/app.js`).
enum WebPageScript {
  static let text = """
    "use strict";

    """
}
