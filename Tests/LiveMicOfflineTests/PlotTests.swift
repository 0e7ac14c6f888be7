import DSP
import Foundation
import FoundationXML
import LV2Host
import TestSupport
import Testing

@testable import LiveMicControl
@testable import LiveMicOffline
@testable import LiveMicPresets

@Suite struct PlotTests {
  static func unit(_ type: String, _ values: [String: Float] = [:], bypassed: Bool = false) -> ChainEntry {
    .unit(StageDescription(id: type, type: type, values: values, bypassed: bypassed))
  }

  @Test func onlyStaticStagesAreMeasured() {
    let entries = [
      Self.unit("input"), Self.unit("highpass"), Self.unit("gate"), Self.unit("eq"),
      Self.unit("compressor"), Self.unit("echo"), Self.unit("reverb"), Self.unit("limiter"),
      Self.unit("eq", bypassed: true), Self.unit("output"),
      .plugin(PluginDescription(id: "amp", uri: Installed.amp)),
    ]
    #expect(ResponsePlot.staticEntries(entries).map(\.id) == ["highpass", "eq", "amp"])
  }

  @Test func highPassIsThreeDecibelsDownAtItsCutoff() throws {
    let r = try ResponsePlot.measure([Self.unit("highpass", ["freq_hz": 80, "slope_db": 12])], name: "hp")
    #expect(abs(r.decibels(at: 80) + 3.01) < 0.5)
    #expect(r.decibels(at: 20) < -20)
    #expect(abs(r.decibels(at: 1000)) < 0.1)
    #expect(abs(r.decibels(at: 10000)) < 0.1)
  }

  @Test func bassShelfLiftsTheLowEnd() throws {
    let r = try ResponsePlot.measure([Self.unit("eq", ["bass_db": 6])], name: "eq")
    #expect(abs(r.decibels(at: 20) - 6) < 0.5)
    #expect(r.decibels(at: 30) > 5)
    #expect(abs(r.decibels(at: 5000)) < 0.2)
  }

  @Test func stagesAddUpToTheTotal() throws {
    let entries = [Self.unit("highpass", ["freq_hz": 100]), Self.unit("eq", ["mid_db": 6, "mid_hz": 2000])]
    let r = try ResponsePlot.measure(entries, name: "both")
    #expect(r.stages.map(\.id) == ["highpass", "eq"])
    for i in stride(from: 0, to: r.frequencies.count, by: 20) {
      #expect(abs(r.total[i] - r.stages[0].decibels[i] - r.stages[1].decibels[i]) < 0.05)
    }
    #expect(abs(r.decibels(at: 2000) - 6) < 0.3)
  }

  /// A plugin entry for `uri`.
  static func plugin(_ id: String, _ uri: String, values: [String: Float] = [:]) -> ChainEntry {
    .plugin(PluginDescription(id: id, uri: uri, values: values))
  }

  /// Whether `entry` builds here (its plugin installed).
  static func builds(_ entry: ChainEntry) -> Bool {
    let settings = HostSettings(
      sampleRate: 48000, maxBlockFrames: 256, nominalBlockFrames: 256, fixedBlocks: false)
    return (try? ChainBuilder.build([entry], settings: settings, strict: true)) != nil
  }

  @Test func pluginIsMeasuredByImpulse() throws {
    guard Self.builds(Self.plugin("amp", Installed.amp)) else {
      Issue.record("eg-amp is not installed (scripts/setup --test installs lv2-examples)")
      return
    }
    let r = try ResponsePlot.measure(
      [Self.plugin("amp", Installed.amp, values: ["gain": -6])], name: "amp")
    #expect(r.skipped.isEmpty)
    for db in r.total { #expect(abs(db + 6) < 0.05) }
  }

  @Test func filterPluginIsMeasuredByImpulse() throws {
    guard Self.builds(Self.plugin("fil4", Installed.fil4)) else {
      Issue.record("x42 fil4 is not installed (scripts/setup --test installs x42-plugins)")
      return
    }
    // fil4's own high-pass on, everything else at its defaults: the low end must fall.
    let r = try ResponsePlot.measure(
      [Self.plugin("fil4", Installed.fil4, values: ["HighPass": 1, "HPQ": 0.7, "HPfreq": 200])],
      name: "fil4")
    #expect(r.skipped.isEmpty)
    #expect(r.decibels(at: 30) < r.decibels(at: 2000) - 12)
  }

  @Test func voiceSVGIsValidXMLWithACurve() throws {
    var options = PlotOptions()
    options.preset = "voice"
    let r = try ResponsePlot.measure(options)
    #expect(r.stages.map(\.id) == ["highpass", "eq"])
    let text = ResponsePlot.svg(r)
    let doc = try XMLDocument(xmlString: text, options: [])
    let root = try #require(doc.rootElement())
    #expect(root.name == "svg")
    func polylines(_ node: XMLNode) -> [XMLElement] {
      let here = (node as? XMLElement).map { $0.localName == "polyline" ? [$0] : [] } ?? []
      return here + (node.children ?? []).flatMap(polylines)
    }
    let lines = polylines(root)
    // (FoundationXML's attribute(forName:) misses attributes under a default namespace.)
    func attribute(_ e: XMLElement, _ name: String) -> String? {
      e.attributes?.first { $0.localName == name || $0.name == name }?.stringValue
    }
    let element = try #require(lines.first { attribute($0, "class") == "total" })
    let points = attribute(element, "points")?.split(separator: " ") ?? []
    #expect(lines.count == 3)
    #expect(points.count == 400)
    #expect(text.contains("preset voice"))
    #expect(text.contains(">highpass<") && text.contains(">eq<"))
    for label in [">100<", ">1k<", ">10k<", ">-6<", ">0<"] { #expect(text.contains(label)) }
  }

  @Test func writesFilesAndRefusesOrMakesPNG() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-plot-test-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    var options = PlotOptions()
    options.preset = "voice"
    options.outputPath = dir.appendingPathComponent("v.svg").path
    try ResponsePlot.run(options)
    let svg = try String(contentsOfFile: options.outputPath!, encoding: .utf8)
    _ = try XMLDocument(xmlString: svg, options: [])

    options.outputPath = dir.appendingPathComponent("v.png").path
    if ResponsePlot.converterPath() == nil {
      #expect(throws: PlotError.self) { try ResponsePlot.run(options) }
      do { try ResponsePlot.run(options) } catch { #expect(error.description.contains("rsvg-convert")) }
      #expect(!FileManager.default.fileExists(atPath: options.outputPath!))
    } else {
      try ResponsePlot.run(options)
      let data = try Data(contentsOf: URL(fileURLWithPath: options.outputPath!))
      #expect(data.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
    }

    options.outputPath = dir.appendingPathComponent("v.txt").path
    #expect(throws: PlotError.self) { try ResponsePlot.run(options) }
    #expect(ResponsePlot.defaultOutput(for: "voice") == "voice.svg")
    #expect(ResponsePlot.defaultOutput(for: "/a/b/mine.json") == "mine.svg")
  }
}
