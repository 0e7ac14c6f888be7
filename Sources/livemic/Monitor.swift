import Foundation
import LiveMicPresets

#if canImport(Glibc)
  import Glibc
#endif

/// `livemic monitor`: a terminal view of a running LiveMic — level bars for input and output,
/// each compressor/limiter's gain reduction, xruns, DSP load, the preset and the route — with
/// keys for mute (`m`), unmute (`u`), volume (`+`/`-`, 1 dB) and quit (`q`).
///
/// It is only a client of the control socket: one connection follows the meters and events,
/// another polls `status` and `route` once a second and sends the keys' requests. Never
/// real-time.
public enum Monitor {
  /// What the screen shows, updated by the stream reader and the poller.
  struct View {
    var meters = JSONObject()
    var status = JSONObject()
    var route = JSONObject()
    var volume: Double?
    var events: [String] = []
    var message = ""
    var stopped = false
  }

  /// The view, shared by the stream reader and the screen loop.
  final class Store: @unchecked Sendable {
    private let lock = NSLock()
    private var view = View()
    func withLock<T>(_ body: (inout View) -> T) -> T {
      lock.lock()
      defer { lock.unlock() }
      return body(&view)
    }
  }

  /// Runs until `q`, end of input, SIGINT, or LiveMic stopping (returns the exit status).
  public static func run(name: String) throws(ControlClientError) -> Int32 {
    let commands = try ControlConnection(name: name)
    let stream = try ControlConnection(name: name)
    let (subscribed, reason) = ControlClient.human(
      try stream.request(["cmd": "subscribe", "topics": ["meters", "events"]]))
    guard subscribed else { throw .connection("LiveMic '\(name)' refused the subscription: \(reason)") }
    let view = Store()
    let reader = Thread {
      while let line = stream.readLine() {
        guard let object = parse(line) else { continue }
        view.withLock { v in
          if object["stream"]?.string == "meters" {
            v.meters = object
          } else if object["stream"]?.string == "event" {
            v.events.append(ControlClient.eventLine(line))
            if v.events.count > 4 { v.events.removeFirst() }
          }
        }
      }
      view.withLock { $0.stopped = true }
    }
    reader.start()
    let terminal = Terminal()
    defer { terminal.restore() }
    var lastPoll = DispatchTime(uptimeNanoseconds: 0)
    while true {
      if DispatchTime.now().uptimeNanoseconds > lastPoll.uptimeNanoseconds + 1_000_000_000 {
        lastPoll = .now()
        let status = (try? commands.request(["cmd": "status"])).flatMap(parse) ?? [:]
        let route = (try? commands.request(["cmd": "route"])).flatMap(parse) ?? [:]
        let volume = (try? commands.request(["cmd": "get", "key": "output.volume"])).flatMap(parse)
        view.withLock {
          $0.status = status
          $0.route = route
          $0.volume = volume?["values"]?["output.volume"]?.number
        }
      }
      let snapshot = view.withLock { $0 }
      terminal.draw(screen(name: name, snapshot, width: terminal.columns))
      if snapshot.stopped { return 1 }
      guard let key = terminal.key(timeoutMilliseconds: 50) else { continue }
      switch key {
      case Terminal.end, "q", "Q": return 0
      case "m", "M": send(["cmd": "mute"], commands, view)
      case "u", "U": send(["cmd": "unmute"], commands, view)
      case "+", "=", "-", "_":
        let current = snapshot.volume ?? 0.3
        let up = key == "+" || key == "="
        let next = min(max(up ? max(current, 0.001) * pow(10, 1.0 / 20) : current / pow(10, 1.0 / 20), 0), 1)
        send(["cmd": "set", "key": "output.volume", "value": .number(next)], commands, view)
        view.withLock { $0.volume = next }
      default: continue
      }
      lastPoll = DispatchTime(uptimeNanoseconds: 0)  // show the change at once
    }
  }

  private static func send(_ request: JSONObject, _ connection: ControlConnection, _ view: Store) {
    let answer = (try? connection.request(request)).map(ControlClient.human)
    view.withLock {
      $0.message = answer.map { $0.ok ? "\(request["cmd"]?.string ?? ""): ok" : $0.text } ?? "no answer"
    }
  }

  static func parse(_ line: String) -> JSONObject? {
    (try? JSONValue.parse(line))?.object
  }

  /// The lines of one screen.
  static func screen(name: String, _ v: View, width: Int) -> [String] {
    let s = v.status
    let number = { (key: String) in s[key]?.number ?? 0 }
    let rate = number("sample_rate")
    let latency = number("latency_frames")
    var lines = [
      "LiveMic '\(name)' on server '\(s["server"]?.string ?? "?")' — \(Int(rate)) Hz, "
        + "\(Int(number("buffer_frames"))) frames, chain latency \(Int(latency)) frames — preset '\(s["preset"]?.string ?? "?")'",
      "",
    ]
    let barWidth = max(min(width - 34, 60), 10)
    for (side, label) in [("input", "in "), ("output", "out")] {
      let channels = v.meters[side]?.array ?? []
      for (i, channel) in channels.enumerated() {
        let peak = channel["peak_dbfs"]?.number ?? -200
        let rms = channel["rms_dbfs"]?.number ?? -200
        lines.append(
          "\(label) \(i == 0 ? "L" : "R") " + bar(rms: rms, peak: peak, width: barWidth)
            + String(format: " %6.1f pk %6.1f rms", max(peak, -99.9), max(rms, -99.9)))
      }
    }
    let reductions = ControlClient.numbers(v.meters["gain_reduction_db"]).sorted { $0.key < $1.key }
    for (id, db) in reductions {
      // Clamped both ways: a negative count would trap in `String(repeating:count:)`.
      let filled = Int((max(min(db, 24), 0) / 24 * Double(barWidth)).rounded())
      lines.append(
        "GR  " + "[" + String(repeating: "#", count: filled)
          + String(repeating: " ", count: barWidth - filled)
          + "]" + String(format: " %5.1f dB ", db) + id)
    }
    if let loudness = v.meters["loudness"].map(ControlClient.numbers) {
      lines.append(
        "R128" + ControlClient.loudnessLine(loudness)
          + String(format: "  LRA %.1f LU", loudness["range_lu"] ?? 0))
    }
    lines.append("")
    let muted = (s["muted"]?.bool ?? false) ? "MUTED (\(s["mute_mode"]?.string ?? ""))" : "live"
    let volume = v.volume.map { $0 > 0 ? String(format: "%.1f dB (%.3f)", 20 * log10($0), $0) : "off" } ?? "?"
    lines.append(
      "\(muted)   volume \(volume)   xruns \(Int(number("xruns")))   DSP load "
        + String(format: "%.1f %%", number("dsp_load_percent")))
    let targets = (v.route["targets"]?.array ?? []).compactMap(\.string)
    let connections = v.route["connections"]?.object ?? [:]
    let outs = connections.filter { $0.key.contains(":out_") }.sorted { $0.key < $1.key }
      .map {
        "\($0.key.split(separator: ":").last ?? "")→"
          + ($0.value.array ?? []).compactMap(\.string).joined(separator: ",")
      }
    lines.append(
      "route: " + (targets.isEmpty ? outs.joined(separator: "  ") : targets.joined(separator: ", ")))
    lines += tapLines(s)
    lines.append("")
    lines.append("recent events:")
    lines += v.events.isEmpty ? ["  (none)"] : v.events.map { "  " + $0 }
    lines.append("")
    lines.append("keys: m mute   u unmute   +/- volume 1 dB   q quit   " + v.message)
    return lines.map { String($0.prefix(max(width, 20))) }
  }

  /// One line per recording and one for the stream, from `status`.
  static func tapLines(_ status: JSONObject) -> [String] {
    let int = { (o: JSONValue, k: String) in o[k]?.number.map { Int($0) } ?? 0 }
    var lines = (status["recordings"]?.array ?? []).map { r in
      "REC \(int(r, "id")) \(r["tap"]?.string ?? "?") \(r["format"]?.string ?? "?") "
        + String(format: "%.1f s", r["seconds"]?.number ?? 0)
        + "  dropped \(int(r, "dropped_frames"))  \(r["path"]?.string ?? "")"
    }
    if let st = status["stream"], st.object != nil {
      lines.append(
        "stream \(st["format"]?.string ?? "?") → \(st["path"]?.string ?? "?")"
          + ((st["open"]?.bool ?? false) ? "" : " (waiting for a reader)")
          + "  \(int(st, "frames")) frames, dropped \(int(st, "dropped_frames"))")
    }
    return lines
  }

  /// `[=====|    ]`: RMS filled, peak marked, -60 to 0 dBFS.
  static func bar(rms: Double, peak: Double, width: Int) -> String {
    let position = { (db: Double) in Int(((max(min(db, 0), -60) + 60) / 60 * Double(width)).rounded()) }
    var cells = Array(repeating: Character(" "), count: width)
    for i in 0..<position(rms) { cells[i] = "=" }
    let p = position(peak)
    if p > 0 { cells[p - 1] = peak > -1 ? "!" : "|" }
    return "[" + String(cells) + "]"
  }
}

/// The terminal: raw keys when standard input is a terminal (restored on exit), plain lines
/// when it is not (so `livemic monitor < keys` works in scripts and tests).
final class Terminal {
  /// The key `key` returns at the end of input.
  static let end: Character = "\u{4}"

  private var saved = termios()
  private let raw: Bool
  private let ansi: Bool

  init() {
    raw = isatty(0) == 1 && tcgetattr(0, &saved) == 0
    ansi = isatty(1) == 1
    if raw {
      var t = saved
      t.c_lflag &= ~tcflag_t(ICANON | ECHO)
      tcsetattr(0, TCSANOW, &t)
    }
    if ansi { FileHandle.standardOutput.write(Data("\u{1B}[?25l\u{1B}[2J".utf8)) }
  }

  func restore() {
    if raw { tcsetattr(0, TCSANOW, &saved) }
    if ansi { FileHandle.standardOutput.write(Data("\u{1B}[?25h\n".utf8)) }
  }

  var columns: Int {
    var size = winsize()
    return ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 200
  }

  private var lastPlainDraw = DispatchTime(uptimeNanoseconds: 0)

  /// Draws a screen: in place on a terminal; otherwise as a block of lines, at most twice a
  /// second.
  func draw(_ lines: [String]) {
    if !ansi {
      guard DispatchTime.now().uptimeNanoseconds > lastPlainDraw.uptimeNanoseconds + 500_000_000 else {
        return
      }
      lastPlainDraw = .now()
    }
    let text =
      ansi
      ? "\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J"
      : lines.joined(separator: "\n") + "\n\n"
    FileHandle.standardOutput.write(Data(text.utf8))
  }

  /// The next key within the timeout: nil when none came, `Terminal.end` at the end of input.
  func key(timeoutMilliseconds: Int32) -> Character? {
    var fds = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
    guard poll(&fds, 1, timeoutMilliseconds) > 0 else { return nil }
    var byte: UInt8 = 0
    let n = read(0, &byte, 1)
    if n == 0 { return Self.end }
    guard n == 1 else { return nil }
    return Character(Unicode.Scalar(byte))
  }
}
