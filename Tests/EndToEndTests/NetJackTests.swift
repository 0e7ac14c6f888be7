import Foundation
import Testing

extension EndToEnd {
  /// LiveMic as a client of a NetJACK2 slave server, the way a rig spanning machines runs it,
  /// with both servers on this machine over loopback (`NetJackRig`). The test process's own
  /// clients live on the master only: a generator feeds the slave's `system:capture_1` through
  /// the master's `to_slave_1`, and a capture records what the slave's playback ports send back
  /// on `from_slave_1`/`from_slave_2`. LiveMic runs on the slave between the two.
  @Suite(
    "NetJACK2: LiveMic on a slave server", .serialized,
    .enabled(
      if: NetJackRig.unavailableReason == nil,
      "jackd2's NetJACK2 parts (jack_net.so, netmanager.so, jack_load, jack_unload, jack_lsp) are missing"
    ),
    .enabled(
      if: !TestBackend.isPipeWire,
      "NetJACK2 is jackd2's: the master and the slave are jackd servers, not PipeWire (the jackd run covers it)"
    ))
  struct NetJackTests {
    /// The master's test clients: a frame-code generator and a three-input capture (in_1: the
    /// generator directly, in_2/in_3: `from_slave_1`/`from_slave_2`).
    static func masterClients(_ rig: NetJackRig) throws -> (generator: TestClient, capture: TestClient) {
      let generator = try TestClient(
        name: "lmnetgen", server: rig.masterName, signal: .frameCode, captureChannels: 0)
      let capture = try TestClient(name: "lmnetcap", server: rig.masterName, signal: nil, captureChannels: 3)
      try capture.connect(generator.portName("out"), capture.portName("in_1"))
      try capture.connect(generator.portName("out"), "\(rig.slaveClient):to_slave_1")
      try capture.connect("\(rig.slaveClient):from_slave_1", capture.portName("in_2"))
      try capture.connect("\(rig.slaveClient):from_slave_2", capture.portName("in_3"))
      return (generator, capture)
    }

    /// `livemic -p flat` on the slave, its input from the slave's first capture port and its
    /// outputs to the slave's two playback ports.
    static func startLiveMic(_ rig: NetJackRig) throws -> LiveMicProcess {
      let livemic = try LiveMicProcess([
        "-s", rig.slaveName, "-n", "lmnetclient", "-p", "flat", "--connect-in", "system:capture_1",
        "--connect-out", "system:playback_1,system:playback_2",
        // A dropped link is a lost route, which keeps the output muted by default; these tests
        // measure the link, so LiveMic plays on once the ports are back.
        "--on-route-loss", "continue",
      ])
      guard livemic.waitForLog("latency capture-to-playback") else {
        throw HarnessError("livemic did not start on the slave: \(livemic.log)\n\(rig.logs)")
      }
      return livemic
    }

    /// How a recording matches the generator's frame code sent round the link: the most
    /// common lag (capture frame minus the generator frame whose sample it holds) and the
    /// fraction of samples that are exactly the code at that lag. Samples lost to a dropped
    /// network cycle or an xrun only lower the fraction.
    static func match(_ recording: (times: [UInt32], samples: [Float])) -> (lag: Int, fraction: Double) {
      guard let first = recording.times.first, let last = recording.times.last else { return (0, 0) }
      // Where each code value was generated, over the last two seconds before the recording.
      var frameOf: [UInt32: UInt32] = [:]
      var t = first &- 96000
      while t != last {
        frameOf[TestSignal.frameCode.value(atFrame: t, sampleRate: 48000).bitPattern] = t
        t &+= 1
      }
      var lags: [Int: Int] = [:]
      for i in stride(from: 0, to: recording.samples.count, by: 16) where recording.samples[i] != 0 {
        if let source = frameOf[recording.samples[i].bitPattern] {
          lags[Int(recording.times[i] &- source), default: 0] += 1
        }
      }
      guard let lag = lags.max(by: { $0.value < $1.value })?.key else { return (0, 0) }
      var exact = 0
      for (time, sample) in zip(recording.times, recording.samples)
      where sample.bitPattern
        == TestSignal.frameCode.value(atFrame: time &- UInt32(lag), sampleRate: 48000).bitPattern
      {
        exact += 1
      }
      return (lag, Double(exact) / Double(recording.samples.count))
    }

    /// Records half a second on the master and expects both returned channels to carry the
    /// generator's code, bit for bit, at one lag of whole periods within the network latency.
    static func expectSignalReturns(
      _ capture: TestClient, _ rig: NetJackRig, _ label: String,
      sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Int {
      // A take the link or a server spoilt (a gap, an xrun, the generator off, a cycle LiveMic
      // missed, a lost or late packet in the servers' logs) is taken again; a clean take must
      // carry the code bit for bit, every sample.
      let witness = Witness(
        capture: capture, generators: [(0, .frameCode)],
        missedCycles: { Witness.missedCycles(client: "lmnetclient", environment: [:]) },
        missedCyclesOnCaptureClock: false)
      let (direct, left, right) = try retaking("\(label): the code round the link") {
        let troubles = rig.linkTroubles
        let mark = witness.mark()
        try capture.record(frames: 24000)
        let end = capture.frameCount
        let window = (0...2).map { capture.recording(channel: $0, from: mark.frame, to: end) }
        var spoilt = witness.evidence(since: mark, to: end)
        let logged = rig.linkTroubles - troubles
        if logged > 0 {
          spoilt = (spoilt.map { $0 + ", " } ?? "") + "\(logged) lost cycles in the servers' logs"
        }
        return Take((window[0], match(window[1]), match(window[2])), spoilt: spoilt)
      }
      #expect(direct.samples.count >= 24000, sourceLocation: sourceLocation)
      #expect(
        left.fraction == 1 && right.fraction == 1,
        "\(label): \(left.fraction) / \(right.fraction) of the samples are the code at lags \(left.lag) / \(right.lag)",
        sourceLocation: sourceLocation)
      #expect(
        left.lag == right.lag, "\(label): lags \(left.lag) / \(right.lag)", sourceLocation: sourceLocation)
      #expect(
        left.lag > 0 && left.lag % rig.period == 0 && left.lag <= rig.period * (rig.networkLatency + 4),
        "\(label): lag \(left.lag) frames", sourceLocation: sourceLocation)
      return left.lag
    }

    @Test("a known signal goes master → slave → livemic → slave → master, bit for bit")
    func signalRoundTrip() throws {
      let began = Date()
      let rig = try NetJackRig()
      defer { rig.stop() }
      let (generator, capture) = try Self.masterClients(rig)
      defer {
        generator.close()
        capture.close()
      }
      // Nothing comes back while nothing plays on the slave.
      let quiet = capture.frameCount
      try capture.record(frames: 4800)
      #expect(rms(capture.recording(channel: 1, from: quiet).samples[...]) == 0)

      let livemic = try Self.startLiveMic(rig)
      #expect(livemic.log.contains("on server '\(rig.slaveName)'"), "\(livemic.log)")
      #expect(rig.connections(of: "lmnetclient:in_1", on: rig.slaveName) == ["system:capture_1"])
      #expect(rig.connections(of: "lmnetclient:out_2", on: rig.slaveName) == ["system:playback_2"])
      usleep(1_300_000)  // the start ramp
      let lag = try Self.expectSignalReturns(capture, rig, "round trip")
      print("NetJACK2 round trip: lag \(lag) frames (\(lag / rig.period) periods of \(rig.period))")
      #expect(livemic.interrupt() == 0)
      #expect(Date().timeIntervalSince(began) < 30)
    }

    /// The master is killed while LiveMic runs on the slave, then started again: after the
    /// slave noticed (it drops its `system` ports, then registers them again when the master is
    /// back), or at once (`quick`: the slave drops and registers its ports in one go, between
    /// two of LiveMic's looks at the graph). Either way LiveMic stays on the slave, its
    /// connections to the slave's ports come back, and so does the signal.
    @Test(
      "the link drops (master killed) and comes back, slowly or at once: LiveMic stays on the slave and repatches",
      arguments: [false, true])
    func linkDropAndReturn(quick: Bool) throws {
      let rig = try NetJackRig()
      defer { rig.stop() }
      var (generator, capture) = try Self.masterClients(rig)
      let livemic = try Self.startLiveMic(rig)
      usleep(1_300_000)
      _ = try Self.expectSignalReturns(capture, rig, "before the drop")

      generator.close()
      capture.close()
      let dropped = Date()
      try rig.dropLink(waitForSlave: !quick)
      // The slave server stays up with LiveMic's client on it, waiting for a master.
      #expect(rig.ports(on: rig.slaveName)?.contains("lmnetclient:in_1") == true, "\(rig.logs)")
      let down = Date().timeIntervalSince(dropped)
      try rig.restoreLink()
      (generator, capture) = try Self.masterClients(rig)
      defer {
        generator.close()
        capture.close()
      }
      // The slave's system ports came back: LiveMic connects them again.
      #expect(
        NetJackRig.poll(seconds: 10) {
          rig.connections(of: "lmnetclient:in_1", on: rig.slaveName) == ["system:capture_1"]
            && rig.connections(of: "lmnetclient:out_2", on: rig.slaveName) == ["system:playback_2"]
        }, "\(livemic.log)\n\(rig.logs)")
      #expect(livemic.log.contains("(its port appeared)"), "\(livemic.log)")
      #expect(!livemic.log.contains("went away"), "\(livemic.log)")
      // The link's first second back still logs late packets (seen): measured after it.
      usleep(1_000_000)
      _ = try Self.expectSignalReturns(capture, rig, "after the link came back")
      print(
        "NetJACK2 link drop (\(quick ? "back at once" : "slave noticed after \(down) s")): audio back "
          + "\(Date().timeIntervalSince(dropped)) s after the master was killed")
      #expect(livemic.interrupt() == 0)
    }
  }
}
