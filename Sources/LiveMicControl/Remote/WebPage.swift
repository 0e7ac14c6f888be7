/// The web remote's page, shipped inside the binary (no CDN, no build step, works offline):
/// the shell (`html`), its style (WebPageStyle.swift) and its script (WebPageScript.swift),
/// and the login form, the one page served without the token.
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

  /// The page: every part is filled in by the script from `status`, `get` and the feed.
  static let html = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="color-scheme" content="dark">
    <title>LiveMic</title><link rel="stylesheet" href="/app.css"></head>
    <body>
    <header id="banner" class="banner" data-state="connecting"><span id="banner-text">connecting to LiveMic…</span>
    <span id="preset-name" class="preset-name"></span></header>
    <main>
    <section class="card mute-card">
      <button id="mute" class="mute" type="button">MUTE</button>
      <label class="mode">mute mode <select id="mute-mode">
        <option value="ramp">ramp (fade the output)</option><option value="input">input (mic only)</option>
        <option value="suspend">suspend (stop the client)</option></select></label>
    </section>
    <section class="card meters-card"><h2>Meters</h2>
      <div id="meters" class="meters"></div>
      <div id="reductions" class="reductions"></div>
      <p id="figures" class="figures"></p>
    </section>
    <section class="card"><h2>Levels</h2><div id="levels" class="controls"></div></section>
    <section class="card"><h2>Preset</h2>
      <div class="row"><select id="preset-list" aria-label="preset"></select>
      <button id="preset-load" type="button">Load</button></div>
    </section>
    <section class="card"><h2>Recording and stream</h2>
      <div class="row"><button id="record" type="button">Start recording</button></div>
      <ul id="recordings" class="list"></ul><p id="stream" class="figures"></p>
    </section>
    <section class="card"><h2>Route</h2>
      <p id="route-effective" class="figures"></p>
      <div class="row"><select id="route-candidates" aria-label="route target"></select>
      <button id="route-override" type="button">Override</button>
      <button id="route-clear" type="button">Clear</button></div>
    </section>
    <section class="card stages-card"><h2>Stages</h2><div id="stages"></div></section>
    </main>
    <script src="/app.js"></script></body></html>

    """

  static let style = WebPageStyle.text
  static let script = WebPageScript.text
}
