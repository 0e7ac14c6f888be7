import Foundation

/// Debian's headless Chromium driven through Selenium (`Tests/Support/web/browser.py`, in the
/// venv `scripts/web-venv` makes under .build): the page as a user's browser runs it.
final class Browser {
  private let process = Process()
  private let input = Pipe()
  private let output = Pipe()
  private var buffered = Data()

  /// A browser; `phone`: it stands for a device of its own (a phone on the LAN), so it runs
  /// under SCHED_IDLE and takes only the CPU the rig's machine leaves over (three Chromiums
  /// rendering six pages' meters otherwise take both of CI's cores from LiveMic, and what is
  /// measured is the machine's saturation).
  init(phone: Bool = false) throws {
    let venv = try runToEnd(
      Paths.root.appendingPathComponent("scripts/web-venv"), [], environment: Paths.childEnvironment())
    guard venv.status == 0 else { throw HarnessError("scripts/web-venv failed: \(venv.stderr)") }
    process.executableURL = URL(fileURLWithPath: venv.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    process.arguments = [Paths.root.appendingPathComponent("Tests/Support/web/browser.py").path]
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    var environment = Paths.childEnvironment()
    if phone { environment["LIVEMIC_BROWSER_IDLE"] = "1" }
    process.environment = environment
    try process.run()
    guard (try? answer(timeout: 60)) as? String == "ready" else {
      throw HarnessError(
        "the headless browser did not start (chromium, chromium-driver: scripts/setup --test)")
    }
  }

  deinit {
    _ = try? request(["cmd": "quit"])
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
  }

  /// Sends one request and returns its result.
  @discardableResult
  func request(_ fields: [String: Any], timeout: Double = 30) throws -> Any? {
    let data = try JSONSerialization.data(withJSONObject: fields)
    input.fileHandleForWriting.write(data + Data("\n".utf8))
    return try answer(timeout: timeout)
  }

  private func answer(timeout: Double) throws -> Any? {
    let deadline = Date().addingTimeInterval(timeout)
    while !buffered.contains(10) {
      // availableData blocks until something comes: wait for it with the deadline first, so a
      // browser that hangs without a word fails the test instead of holding the suite.
      var ready = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
      let remainingMilliseconds = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
      guard process.isRunning, poll(&ready, 1, remainingMilliseconds) > 0 else {
        throw HarnessError("the browser did not answer within \(Int(timeout)) s")
      }
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { throw HarnessError("the browser closed its output") }
      buffered += chunk
    }
    let newline = buffered.firstIndex(of: 10) ?? buffered.endIndex
    let line = buffered[buffered.startIndex..<newline]
    buffered = Data(buffered[buffered.index(after: newline)...])
    let object = jsonObject(String(decoding: line, as: UTF8.self))
    guard object["ok"] as? Bool == true else {
      throw HarnessError("browser: \(object["error"] as? String ?? String(decoding: line, as: UTF8.self))")
    }
    return object["result"]
  }

  /// Opens `url` in a new tab; its number.
  func open(_ url: String) throws -> Int { try request(["cmd": "open", "url": url]) as? Int ?? -1 }

  /// Runs `script` (a function body: `return …`) in page `page`.
  func js(_ page: Int, _ script: String) throws -> Any? {
    try request(["cmd": "js", "page": page, "script": script])
  }

  /// A real click on the element `css` of page `page`.
  func click(_ page: Int, _ css: String) throws { try request(["cmd": "click", "page": page, "css": css]) }

  /// Waits until `script` is truthy in page `page`; the seconds waited.
  @discardableResult
  func wait(_ page: Int, _ script: String, timeout: Double = 10) throws -> Double {
    try request(["cmd": "wait", "page": page, "script": script, "timeout": timeout], timeout: timeout + 10)
      as? Double ?? -1
  }

  func size(width: Int, height: Int) throws {
    try request(["cmd": "size", "width": width, "height": height])
  }

  func screenshot(_ page: Int, to path: String) throws {
    try request(["cmd": "screenshot", "page": page, "path": path])
  }

  /// The banner's state (`running`, `muted`, `reconnecting`, `lost` …) and text on page `page`.
  func banner(_ page: Int) throws -> (state: String, text: String) {
    let state = try js(page, "return document.getElementById('banner').dataset.state") as? String ?? ""
    let text = try js(page, "return document.getElementById('banner-text').textContent") as? String ?? ""
    return (state, text)
  }
}
