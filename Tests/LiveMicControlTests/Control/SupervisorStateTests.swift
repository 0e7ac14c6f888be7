import Testing

@testable import LiveMicControl

/// The supervisor's transition table, walked whole: every state (link × user mode × route mute)
/// under every event, against the rules written out here once more; then a reconnection with
/// mutes and unmutes while the server is away.
@Suite struct SupervisorStateTests {
  typealias S = SupervisorState

  static let links: [S.Link] = [.live, .reconnecting(attempt: 2, lostNanoseconds: 7), .stopping]
  static let modes: [MuteMode?] = [nil, .ramp, .input, .suspend]
  static let events: [S.Event] =
    MuteMode.allCases.map { .mute($0) } + [
      .unmute, .routeLost, .routeContinued, .serverLost, .attempt, .reconnected, .stop,
    ]

  static var states: [S] {
    links.flatMap { link in
      modes.flatMap { mode in [false, true].map { S(link: link, muteMode: mode, routeMuted: $0) } }
    }
  }

  /// The expected state after `event`, or nil when it is refused.
  static func expected(_ s: S, _ event: S.Event) -> S? {
    if s.link == .stopping { return nil }
    var n = s
    switch event {
    case .mute(let m): n.muteMode = m
    case .unmute: (n.muteMode, n.routeMuted) = (nil, false)
    case .routeLost:
      if s.link != .live || s.muteMode == .suspend { return nil }
      n.routeMuted = true
    case .routeContinued: n.routeMuted = false
    case .serverLost:
      if s.link != .live { return nil }
      n.link = .reconnecting(attempt: 0, lostNanoseconds: 99)
    case .attempt:
      guard case .reconnecting(let a, let t) = s.link else { return nil }
      n.link = .reconnecting(attempt: a + 1, lostNanoseconds: t)
    case .reconnected:
      guard case .reconnecting = s.link else { return nil }
      n.link = .live
      n.reconnections += 1
    case .stop: n.link = .stopping
    }
    return n
  }

  @Test("Every state under every event goes where the table says, or is refused", arguments: events)
  func table(event: S.Event) {
    for s in Self.states {
      let got = try? s.applying(event, nowNanoseconds: 99)
      #expect(got == Self.expected(s, event), "\(s) under \(event)")
    }
  }

  @Test("A state's name and audio")
  func namesAndAudio() {
    let rows: [(S, String, String, S.Audio)] = [
      (S(), "running", "none", .init(outputSilent: false, inputMuted: false, clientActive: true)),
      (S(muteMode: .ramp), "muted", "ramp", .init(outputSilent: true, inputMuted: false, clientActive: true)),
      (
        S(muteMode: .input), "muted", "input",
        .init(outputSilent: false, inputMuted: true, clientActive: true)
      ),
      (
        S(muteMode: .suspend), "suspended", "suspend",
        .init(outputSilent: true, inputMuted: false, clientActive: false)
      ),
      (
        S(routeMuted: true), "muted", "ramp", .init(outputSilent: true, inputMuted: false, clientActive: true)
      ),
      (
        S(muteMode: .input, routeMuted: true), "muted", "input",
        .init(outputSilent: true, inputMuted: true, clientActive: true)
      ),
      (
        S(link: .reconnecting(attempt: 1, lostNanoseconds: 0), muteMode: .suspend), "reconnecting", "suspend",
        .init(outputSilent: true, inputMuted: false, clientActive: false)
      ),
      (
        S(link: .stopping, muteMode: .input), "stopping", "input",
        .init(outputSilent: false, inputMuted: true, clientActive: true)
      ),
    ]
    for (state, name, mode, audio) in rows {
      #expect(state.name == name && state.muteModeName == mode && state.audio == audio, "\(state)")
      #expect(state.isMuted == (mode != "none"))
    }
  }

  @Test("A reconnection: mutes while away hold for the new client; nothing after stop")
  func reconnection() throws {
    var s = try S().applying(.mute(.input))
    s = try s.applying(.serverLost, nowNanoseconds: 5)
    #expect(s.name == "reconnecting" && s.link == .reconnecting(attempt: 0, lostNanoseconds: 5))
    #expect(throws: S.Refusal.notNow(event: "route lost", state: "reconnecting")) {
      try s.applying(.routeLost)
    }
    #expect(throws: S.Refusal.notNow(event: "server lost", state: "reconnecting")) {
      try s.applying(.serverLost)
    }
    s = try s.applying(.attempt).applying(.mute(.suspend)).applying(.attempt)
    #expect(s.link == .reconnecting(attempt: 2, lostNanoseconds: 5) && s.muteMode == .suspend)
    s = try s.applying(.unmute).applying(.mute(.ramp)).applying(.reconnected)
    var expected = S(muteMode: .ramp)
    expected.reconnections = 1
    #expect(s == expected && s.audio.outputSilent && s.audio.clientActive)
    #expect(throws: S.Refusal.notNow(event: "reconnected", state: "muted")) { try s.applying(.reconnected) }
    s = try s.applying(.stop)
    for event in Self.events { #expect(throws: S.Refusal.stopping) { try s.applying(event) } }
  }

  @Test("The route's mute and the user's mode are separate: continue lifts only the route's")
  func routeAndUser() throws {
    var s = try S().applying(.mute(.ramp)).applying(.routeLost)
    s = try s.applying(.routeContinued)
    #expect(s == S(muteMode: .ramp) && s.audio.outputSilent)
    s = try S().applying(.routeLost)
    #expect(s.name == "muted" && s.audio.outputSilent)
    #expect(try s.applying(.routeContinued) == S())
    #expect(try s.applying(.unmute) == S())
    #expect(throws: S.Refusal.notNow(event: "route lost", state: "suspended")) {
      try S(muteMode: .suspend).applying(.routeLost)
    }
  }
}
