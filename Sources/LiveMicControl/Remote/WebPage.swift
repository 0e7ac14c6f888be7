/// The web remote's page, shipped inside the binary: the shell (`html`), its style
/// (WebPageStyle.swift) and its script (WebPageScript.swift), and the login form served without
/// the token.
enum WebPage {
  /// The form shown to a browser without the token: nothing of the rig in it.
  static let login = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>LiveMic</title><link rel="stylesheet" href="/app.css"></head>
    <body class="login"><main>
    <h1>LiveMic</h1>
    <p>This LiveMic needs its web token. Open the address it printed at start, or ask it on its
    machine with <code>livemic web token</code>.</p>
    <form method="get" action="/"><label>Token <input name="token" autocomplete="off" required></label>
    <button type="submit">Open</button></form>
    </main></body></html>

    """

  static let html = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>LiveMic</title><link rel="stylesheet" href="/app.css"></head>
    <body><main id="app"><p id="banner" class="banner">connecting to LiveMic…</p></main>
    <script src="/app.js"></script></body></html>

    """

  static let style = WebPageStyle.text
  static let script = WebPageScript.text
}
