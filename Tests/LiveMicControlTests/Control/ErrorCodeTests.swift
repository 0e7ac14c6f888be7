import DSP
import Foundation
import LV2Host
import LiveMicEngine
import Testing

@testable import LiveMicControl
@testable import LiveMicOffline
@testable import LiveMicPresets

/// Every error type names its reason with a stable `subsystem.reason` code, one per case, and
/// an error that wraps another carries the inner one's code.
@Suite struct ErrorCodeTests {
  static let samples: [any CodedError] = [
    PluginError.unknownURI("x"), PluginError.unsupported(uri: "x", reason: "r"),
    PluginError.instantiation(uri: "x"),
    PluginError.unknownPreset(uri: "x", preset: "p", available: []),
    PluginError.unknownControl(id: "a", symbol: "s", known: []),
    PluginError.outOfRange(id: "a", symbol: "s", value: 2, range: 0...1),
    PluginError.unreadableState(path: "p"),
    ChainError.unknownUnit(id: "a", type: "t"), ChainError.unknownParameter(id: "a", name: "n", known: []),
    ChainError.duplicateId("a"), ChainError.invalidId("a"),
    EngineError.serverUnavailable(server: "s", status: 0), EngineError.portRegistration("p"),
    EngineError.activation,
    EngineError.connection(from: "a", to: "b", code: 1), EngineError.noSuchPort("p"),
    PresetError.notFound(name: "n", searched: []), PresetError.unreadable(path: "p", reason: "r"),
    PresetError.invalid(path: "p", key: "k", reason: "r"), OverrideError.malformed("m"),
    OverrideError.badValue(key: "k", value: "v"), OverrideError.unknownKey("k"),
    OverrideError.unknownStage(key: "k", stage: "s", stages: []),
    OverrideError.outOfRange(key: "k", value: 2, range: 0...1),
    ModeError.noPluginInstalled(id: "a", tried: []),
    ModeError.modesNotSupported(unit: "u"), ModeError.noWebRTC(unit: "u"), SessionError.events(path: "p"),
    AutoloadError.unreadable(path: "p"), AutoloadError.invalid(path: "p", reason: "r"),
    SessionError.control(path: "p", reason: "r"), SessionError.osc(reason: "r"),
    RenderError.openInput(path: "p", reason: "r"), RenderError.openOutput(path: "p", reason: "r"),
    RenderError.unknownFormat(path: "p"), PlotError.unknownFormat(path: "p"), PlotError.noConverter,
    PlotError.write(path: "p", reason: "r"), PlotError.convert(reason: "r"),
  ]

  @Test("codes are subsystem.reason, lower case with hyphens, and no two cases share one")
  func codesAreStableNames() {
    let codes = Self.samples.map(\.code)
    for code in codes {
      #expect(code.wholeMatch(of: /[a-z]+\.[a-z]+(-[a-z]+)*/) != nil, "\(code)")
    }
    #expect(Set(codes).count == codes.count, "\(codes.sorted())")
    for error in Self.samples { #expect(!error.description.isEmpty, "\(error.code)") }
  }

  @Test("a wrapping error has the wrapped one's code")
  func wrappedCodes() {
    let plugin = PluginError.unknownURI("x")
    #expect(SessionError.plugin(id: "a", plugin).code == "plugin.unknown-uri")
    #expect(SessionError(BuildError.plugin(id: "a", plugin)).code == "plugin.unknown-uri")
    #expect(SessionError.preset(.notFound(name: "n", searched: [])).code == "preset.not-found")
    #expect(RenderError.request(.override(.unknownKey("k"))).code == "override.unknown-key")
    #expect(PlotError.build(.chain(.duplicateId("a"))).code == "chain.duplicate-id")
    #expect(
      ControlError(plugin).code == "plugin.unknown-uri" && ControlError(plugin).message == plugin.description)
    #expect(ControlError("no").code == "control.refused")
    #expect(SessionError.autoload(.invalid(path: "p", reason: "r")).code == "autoload.invalid")
  }

  @Test("the control protocol names every command the server dispatches, and the socket's place")
  func controlProtocol() {
    #expect(
      ControlProtocol.commandList
        == "status, get, set, preset, mode, mute, unmute, route, connections, meters, learn, record, loudness, stream, subscribe, unsubscribe"
    )
    #expect(ControlProtocol.topics == ControlServer.topics)
    let path = ControlProtocol.socketPath(name: "lm")
    let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? ""
    #expect(path == (runtime.isEmpty ? "/tmp/livemic-\(getuid())" : runtime + "/livemic") + "/lm.sock")
    #expect(ControlServer.socketPath(name: "lm") == path)
  }
}
