import DSP
import Foundation
import LV2Host
import LiveMicPresets

/// What `livemic plot` was asked to do.
///
/// Thread: any (value type).
public struct PlotOptions: Sendable {
  public var preset = "voice"
  public var overrides: [ParameterOverride] = []
  /// LV2 plugin URIs appended to the chain (as `--plugin` does for `run`).
  public var plugins: [String] = []
  /// The output file (`.svg` or `.png`), `-` for SVG on standard output, or nil for `PRESET.svg`.
  public var outputPath: String?

  public init() {}
}

/// Why plotting failed. Each message is one sentence.
public enum PlotError: CodedError {
  case request(ChainRequestError)
  case build(BuildError)
  case unknownFormat(path: String)
  case noConverter
  case write(path: String, reason: String)
  case convert(reason: String)

  public var description: String {
    switch self {
    case .request(let e): return e.description
    case .build(let e): return e.description
    case .unknownFormat(let path):
      return "cannot tell the plot format of '\(path)' from its extension (use .svg or .png)"
    case .noConverter:
      return
        "PNG output needs rsvg-convert (Debian package librsvg2-bin), which is not installed; write .svg instead"
    case .write(let path, let reason): return "cannot write '\(path)': \(reason)"
    case .convert(let reason): return "rsvg-convert could not make the PNG: \(reason)"
    }
  }

  public var code: String {
    switch self {
    case .request(let e): return e.code
    case .build(let e): return e.code
    case .unknownFormat: return "plot.unknown-format"
    case .noConverter: return "plot.no-converter"
    case .write: return "plot.unwritable"
    case .convert: return "plot.conversion-failed"
    }
  }
}

/// A measured magnitude response: the whole static chain and each of its stages.
///
/// Thread: any (value type).
public struct MagnitudeResponse: Sendable {
  public var name: String
  /// Frequencies in Hz, ascending, log-spaced.
  public var frequencies: [Double]
  /// The whole static chain's magnitude in dB at each frequency.
  public var total: [Double]
  /// Each included stage's id and its own magnitude in dB.
  public var stages: [(id: String, decibels: [Double])]
  /// One sentence per plugin entry that could not be made (left out of the plot).
  public var skipped: [String]

  /// The total's magnitude in dB at the frequency nearest `hz`.
  public func decibels(at hz: Double) -> Double {
    let i = frequencies.indices.min { abs(log(frequencies[$0] / hz)) < abs(log(frequencies[$1] / hz)) } ?? 0
    return total[i]
  }
}

/// Draws the magnitude response of a preset's static filters (high-pass, EQ, LV2 plugins) by
/// running a unit impulse through them offline. Never real-time.
public enum ResponsePlot {
  public static let sampleRate = 48000.0
  public static let impulseFrames = 65536
  /// Built-in unit types that are linear and time-invariant, so an impulse measures them.
  public static let staticUnits: Set<String> = [HighPass.typeName, Equalizer.typeName]

  /// The entries a plot measures: the static built-in units and every LV2 plugin, unbypassed.
  public static func staticEntries(_ entries: [ChainEntry]) -> [ChainEntry] {
    entries.filter { entry in
      switch entry {
      case .unit(let d): return staticUnits.contains(d.type) && !d.bypassed
      case .plugin(let d): return !d.bypassed
      }
    }
  }

  /// `count` log-spaced frequencies from `low` to `high` Hz.
  public static func logFrequencies(count: Int = 400, from low: Double = 20, to high: Double = 20000)
    -> [Double]
  {
    (0..<count).map { low * pow(high / low, Double($0) / Double(max(1, count - 1))) }
  }

  /// The chain of `entries`' impulse response (left output, both inputs driven), and one
  /// sentence for each plugin that could not be made (left out).
  static func impulseResponse(_ entries: [ChainEntry], frames: Int = impulseFrames)
    throws(PlotError) -> (response: [Float], skipped: [String])
  {
    let block = 256
    let settings = HostSettings(
      sampleRate: sampleRate, maxBlockFrames: block, nominalBlockFrames: block, fixedBlocks: false,
      identicalChannels: true)
    let built: BuiltChain
    do { built = try ChainBuilder.build(entries, settings: settings) } catch { throw .build(error) }
    // Half a second of silence first, so plugins that smooth their controls have settled.
    let settle = Int(sampleRate) / 2
    var left = [Float](repeating: 0, count: settle + frames)
    var right = [Float](repeating: 0, count: settle + frames)
    left[settle] = 1
    right[settle] = 1
    built.chain.process(left: &left, right: &right, blockFrames: block)
    _ = built.plugins.map { $0.drainLog() }
    return (Array(left[settle...]), built.skipped.map { $0.message })
  }

  /// The magnitude in dB of `response`'s spectrum at each frequency (a direct DFT).
  public static func magnitude(of response: [Float], at frequencies: [Double]) -> [Double] {
    // The tail below -160 dB of the peak changes nothing visible; IIR filters decay long before
    // the end, so this saves most of the work.
    let peak = response.lazy.map { abs($0) }.max() ?? 0
    let end = (response.lastIndex { abs($0) > peak * 1e-8 } ?? 0) + 1
    let response = response[..<end]
    return frequencies.map { hz in
      let w = 2 * Double.pi * hz / sampleRate
      let (cw, sw) = (cos(w), sin(w))
      var (c, s) = (1.0, 0.0)
      var (re, im) = (0.0, 0.0)
      for (n, x) in response.enumerated() {
        if x != 0 {
          re += Double(x) * c
          im -= Double(x) * s
        }
        (c, s) = (c * cw - s * sw, s * cw + c * sw)
        if n & 1023 == 1023 {  // Keep the phasor on the unit circle.
          let k = 1 / (c * c + s * s).squareRoot()
          (c, s) = (c * k, s * k)
        }
      }
      return 10 * log10(max(re * re + im * im, 1e-30))
    }
  }

  /// Measures `entries`' static stages, together and one by one.
  public static func measure(_ entries: [ChainEntry], name: String, frequencies: [Double] = logFrequencies())
    throws(PlotError) -> MagnitudeResponse
  {
    let included = staticEntries(entries)
    let whole = try impulseResponse(included)
    var stages: [(id: String, decibels: [Double])] = []
    if included.count > 1 {
      for entry in included {
        let one = try impulseResponse([entry])
        if one.skipped.isEmpty { stages.append((entry.id, magnitude(of: one.response, at: frequencies))) }
      }
    } else if let entry = included.first, whole.skipped.isEmpty {
      stages.append((entry.id, []))
    }
    return MagnitudeResponse(
      name: name, frequencies: frequencies, total: magnitude(of: whole.response, at: frequencies),
      stages: stages, skipped: whole.skipped)
  }

  /// Measures a preset (with overrides and extra plugins) as `options` names it.
  public static func measure(_ options: PlotOptions) throws(PlotError) -> MagnitudeResponse {
    var request = ChainRequest(preset: options.preset)
    request.overrides = options.overrides
    request.plugins = options.plugins
    let (preset, entries): (Preset, [ChainEntry])
    do { (preset, entries) = try request.stages() } catch { throw .request(error) }
    return try measure(entries, name: preset.name)
  }

  /// The default output file for a preset name or path: `NAME.svg` in the current directory.
  public static func defaultOutput(for preset: String) -> String {
    URL(fileURLWithPath: preset).deletingPathExtension().lastPathComponent + ".svg"
  }

  /// Where `rsvg-convert` is, if it is on the PATH.
  public static func converterPath() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/rsvg-convert" }.first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  /// Measures and writes the plot; returns the path written (`-` for standard output) and
  /// the warnings (plugins left out).
  @discardableResult
  public static func run(_ options: PlotOptions) throws(PlotError) -> (path: String, warnings: [String]) {
    let path = options.outputPath ?? defaultOutput(for: options.preset)
    let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
    guard path == "-" || ext == "svg" || ext == "png" else { throw .unknownFormat(path: path) }
    let converter = converterPath()
    if ext == "png" && converter == nil { throw .noConverter }
    let response = try measure(options)
    let text = svg(response)
    if path == "-" {
      FileHandle.standardOutput.write(Data(text.utf8))
    } else if ext == "svg" {
      do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
        throw .write(path: path, reason: (error as NSError).localizedDescription)
      }
    } else if let converter {
      try convert(text, to: path, with: converter)
    }
    return (path, response.skipped)
  }

  private static func convert(_ text: String, to path: String, with converter: String) throws(PlotError) {
    let temporary = FileManager.default.temporaryDirectory
      .appendingPathComponent("livemic-plot-\(getpid()).svg").path
    defer { try? FileManager.default.removeItem(atPath: temporary) }
    do { try text.write(toFile: temporary, atomically: true, encoding: .utf8) } catch {
      throw .write(path: temporary, reason: (error as NSError).localizedDescription)
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: converter)
    process.arguments = ["-f", "png", "-b", "white", "-o", path, temporary]
    let errors = Pipe()
    process.standardError = errors
    do { try process.run() } catch { throw .convert(reason: (error as NSError).localizedDescription) }
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw .convert(
        reason: message.split(separator: "\n").first.map(String.init)
          ?? "exit status \(process.terminationStatus)")
    }
  }

  // MARK: - SVG

  private static func escape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
      .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
  }

  private static func format(_ x: Double) -> String { String(format: "%.1f", x) }

  /// The response drawn as a standalone SVG: log frequency axis 20 Hz–20 kHz, dB axis with a
  /// grid every 6 dB, the total as a thick curve and each stage as a thin one, and a legend.
  public static func svg(_ r: MagnitudeResponse) -> String {
    let finite = (r.total + r.stages.flatMap { $0.decibels }).filter { $0.isFinite }
    let (lowest, highest) = (finite.min() ?? 0, finite.max() ?? 0)
    let f = PlotFrame(
      yMin: min(-12, max(-60, ((lowest - 1) / 6).rounded(.down) * 6)),
      yMax: max(6, (highest / 6).rounded(.up) * 6))
    var s = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(f.width))" height="\(Int(f.height))" \
      viewBox="0 0 \(Int(f.width)) \(Int(f.height))" font-family="sans-serif" font-size="12">
      <title>\(escape(r.name)): magnitude response of the static filters</title>
      <rect x="0" y="0" width="\(Int(f.width))" height="\(Int(f.height))" fill="white"/>

      """
    s += gridAndLabels(f, name: r.name)
    s += curvesAndLegend(f, r)
    s += "</svg>\n"
    return s
  }

  /// Where the plot goes in the picture, and its axes: pixels from frequency and level.
  private struct PlotFrame {
    let width = 800.0
    let height = 480.0
    let left = 64.0
    let right = 20.0
    let top = 40.0
    let bottom = 50.0
    let fLow = 20.0
    let fHigh = 20000.0
    let yMin: Double
    let yMax: Double
    var plotW: Double { width - left - right }
    var plotH: Double { height - top - bottom }
    func x(_ hz: Double) -> Double { left + plotW * log(hz / fLow) / log(fHigh / fLow) }
    func y(_ db: Double) -> Double { top + plotH * (yMax - min(max(db, yMin), yMax)) / (yMax - yMin) }
  }

  /// The grid (decades labelled 100, 1k, 10k, the other multiples faint; every 6 dB), the axis
  /// labels, the title and the frame.
  private static func gridAndLabels(_ f: PlotFrame, name: String) -> String {
    let (left, top, plotW, plotH) = (f.left, f.top, f.plotW, f.plotH)
    var grid = ""
    var labels = ""
    for decade in [10.0, 100, 1000, 10000] {
      for m in 1...9 {
        let hz = decade * Double(m)
        guard hz >= f.fLow && hz <= f.fHigh else { continue }
        let major = m == 1
        grid +=
          "<line x1=\"\(format(f.x(hz)))\" y1=\"\(top)\" x2=\"\(format(f.x(hz)))\" y2=\"\(top + plotH)\" "
          + "stroke=\"\(major ? "#999" : "#e4e4e4")\" stroke-width=\"1\"/>\n"
      }
    }
    for (hz, text) in [(20.0, "20"), (100, "100"), (1000, "1k"), (10000, "10k"), (20000, "20k")] {
      labels +=
        "<text x=\"\(format(f.x(hz)))\" y=\"\(format(top + plotH + 16))\" text-anchor=\"middle\">\(text)</text>\n"
    }
    var db = f.yMin
    while db <= f.yMax {
      let zero = db == 0
      grid +=
        "<line x1=\"\(left)\" y1=\"\(format(f.y(db)))\" x2=\"\(left + plotW)\" y2=\"\(format(f.y(db)))\" "
        + "stroke=\"\(zero ? "#777" : "#ccc")\" stroke-width=\"1\"/>\n"
      labels +=
        "<text x=\"\(format(left - 6))\" y=\"\(format(f.y(db) + 4))\" text-anchor=\"end\">\(Int(db))</text>\n"
      db += 6
    }
    var s = "<g id=\"grid\">\n" + grid + "</g>\n<g id=\"labels\">\n" + labels
    s +=
      "<text x=\"\(format(left + plotW / 2))\" y=\"\(format(f.height - 12))\" text-anchor=\"middle\">Frequency (Hz)</text>\n"
    s +=
      "<text x=\"16\" y=\"\(format(top + plotH / 2))\" text-anchor=\"middle\" "
      + "transform=\"rotate(-90 16 \(format(top + plotH / 2)))\">Magnitude (dB)</text>\n"
    s +=
      "<text x=\"\(left)\" y=\"24\" font-size=\"15\" font-weight=\"bold\">"
      + "\(escape(name)): static filter response</text>\n</g>\n"
    s +=
      "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotW)\" height=\"\(plotH)\" fill=\"none\" stroke=\"#333\"/>\n"
    return s
  }

  /// The curves (each stage thin and coloured, the total thick and dark) and the legend, top
  /// right.
  private static func curvesAndLegend(_ f: PlotFrame, _ r: MagnitudeResponse) -> String {
    func points(_ decibels: [Double]) -> String {
      zip(r.frequencies, decibels).map { "\(format(f.x($0))),\(format(f.y($1)))" }.joined(separator: " ")
    }
    let colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
    let drawn = r.stages.enumerated().filter { !$0.element.decibels.isEmpty }
    var s = "<g id=\"curves\" fill=\"none\">\n"
    for (i, stage) in drawn {
      s +=
        "<polyline class=\"stage\" data-stage=\"\(escape(stage.id))\" stroke=\"\(colours[i % colours.count])\" "
        + "stroke-width=\"1.2\" stroke-dasharray=\"4 3\" points=\"\(points(stage.decibels))\"/>\n"
    }
    s +=
      "<polyline class=\"total\" stroke=\"#000\" stroke-width=\"2.5\" points=\"\(points(r.total))\"/>\n</g>\n"
    var entries: [(String, String, Bool)] = [("total", "#000", false)]
    for (i, stage) in drawn { entries.append((stage.id, colours[i % colours.count], true)) }
    if r.stages.count == 1, drawn.isEmpty { entries[0].0 = "total (\(r.stages[0].id))" }
    if r.stages.isEmpty { entries[0].0 = "total (no static filters: flat)" }
    let legendW = 220.0
    let legendX = f.left + f.plotW - legendW - 8
    let top = f.top
    s += "<g id=\"legend\">\n"
    s +=
      "<rect x=\"\(format(legendX))\" y=\"\(top + 8)\" width=\"\(legendW)\" "
      + "height=\"\(format(Double(entries.count) * 18 + 26))\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999\"/>\n"
    s +=
      "<text x=\"\(format(legendX + 8))\" y=\"\(top + 26)\" font-weight=\"bold\">preset \(escape(r.name))</text>\n"
    for (i, (label, colour, dashed)) in entries.enumerated() {
      let ly = top + 44 + Double(i) * 18
      s +=
        "<line x1=\"\(format(legendX + 8))\" y1=\"\(format(ly - 4))\" x2=\"\(format(legendX + 36))\" "
        + "y2=\"\(format(ly - 4))\" stroke=\"\(colour)\" stroke-width=\"\(dashed ? "1.2" : "2.5")\""
        + (dashed ? " stroke-dasharray=\"4 3\"" : "") + "/>\n"
      s += "<text x=\"\(format(legendX + 44))\" y=\"\(format(ly))\">\(escape(label))</text>\n"
    }
    s += "</g>\n"
    return s
  }
}
