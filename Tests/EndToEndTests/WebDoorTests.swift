import Foundation
import Synchronization
import Testing

extension EndToEnd {
  /// Issue 35, "Safe on a LAN": the web door at the HTTP level against a real LiveMic on a
  /// private dummy jackd. Every route refuses a request without the token, with a wrong Host
  /// (DNS rebinding) or from another site; bodies and rates are limited; malformed requests get
  /// one sentence with a `web.*` code, and the audio goes on; the real-time guard counts zero with
  /// a feed open and meters streaming.
  @Suite("The web door", .serialized)
  struct WebDoorTests {
    /// A web rig: `flat` on a 500 Hz sine, `--web 127.0.0.1:0`, the socket under the rig's
    /// folder; the door's port and its token (made at first start under LiveMic's
    /// XDG_CONFIG_HOME). `guarded` preloads the real-time guard.
    static func rig(
      guarded: Bool = false, arguments: [String] = ["-p", "flat"], web: [String] = ["--web", "127.0.0.1:0"]
    ) throws -> (rig: LiveRig, port: Int, token: String) {
      let rig = try LiveAudioTests.rig(
        arguments + web, signal: .sine(frequencyHz: 500, amplitude: 0.2), period: 256, guarded: guarded)
      let (port, token) = try Self.door(rig.livemic)
      return (rig, port, token)
    }

    /// The port and token of `livemic`'s web door, once it has opened.
    static func door(_ livemic: LiveMicProcess) throws -> (port: Int, token: String) {
      guard livemic.waitForLog("web remote: open "),
        let range = livemic.log.range(
          of: #"web remote on http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression)
      else { throw HarnessError("the web door did not open: \(livemic.log)") }
      let port = Int(livemic.log[range].split(separator: ":").last?.dropLast() ?? "") ?? 0
      let tokenFile = livemic.folder.appendingPathComponent("livemic/web-token")
      let token = try String(contentsOf: tokenFile, encoding: .utf8).trimmingCharacters(
        in: .whitespacesAndNewlines)
      return (port, token)
    }

    /// The output level now (RMS of half a second of output channel 1).
    static func outputLevel(_ capture: TestClient) throws -> Double {
      let start = capture.frameCount
      try capture.record(frames: 24000)
      return rms(capture.recording(channel: 1, from: start).samples[...])
    }

    /// An error answer: refused with `status`, its code, and one sentence.
    static func expectRefusal(
      _ answer: WebClient.Answer?, _ status: Int, _ code: String, _ label: String,
      sourceLocation: SourceLocation = #_sourceLocation
    ) {
      #expect(
        answer?.status == status, "\(label): status \(answer?.status ?? -1)", sourceLocation: sourceLocation)
      let json = answer?.json ?? [:]
      #expect(
        json["ok"] as? Bool == false, "\(label): \(answer?.body ?? "no answer")",
        sourceLocation: sourceLocation)
      #expect(
        json["code"] as? String == code, "\(label): \(answer?.body ?? "no answer")",
        sourceLocation: sourceLocation)
      let sentence = json["error"] as? String ?? ""
      #expect(
        !sentence.isEmpty && !sentence.contains(". ") && !sentence.contains("\n"),
        "\(label): not one sentence: '\(sentence)'", sourceLocation: sourceLocation)
    }

    static let routes: [(String, String)] = [
      ("GET", "/"), ("GET", "/app.js"), ("GET", "/app.css"), ("GET", "/events"), ("POST", "/api"),
      ("GET", "/nope"),
    ]

    @Test("every route refuses a request without the token, or with a wrong one; the token file is 0600")
    func everyRouteNeedsTheToken() throws {
      let (rig, port, token) = try Self.rig()
      defer { rig.stop() }
      let attributes = try FileManager.default.attributesOfItem(
        atPath: rig.livemic.folder.appendingPathComponent("livemic/web-token").path)
      #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(attributes)")
      #expect(token.count >= 40, "a short token: \(token)")
      let client = WebClient(port: port)
      let mute = Data("{\"cmd\":\"mute\"}".utf8)
      for (method, path) in Self.routes {
        for given in [nil, "Bearer nottheone", "Bearer \(token)x"] {
          var headers = ["Content-Type": "application/json"]
          if let given { headers["Authorization"] = given }
          let answer = client.request(method, path, headers: headers, body: method == "POST" ? mute : Data())
          #expect(
            answer?.status == 401, "\(method) \(path) with \(given ?? "no token"): \(answer?.status ?? -1)")
          if path == "/" {
            // The page shell's login form: no state of the rig in it.
            #expect(answer?.body.contains("<form") == true)
            #expect(answer?.body.contains("/api") == false && answer?.body.contains("preset") == false)
          } else {
            Self.expectRefusal(answer, 401, "web.unauthorized", "\(method) \(path) \(given ?? "none")")
          }
        }
        // A wrong cookie, and the right token under another port's cookie name.
        let cookies = ["livemic-token-\(port)=wrong", "livemic-token-\(port + 1)=\(token)"]
        for cookie in cookies {
          let answer = client.request(
            method, path, headers: ["Cookie": cookie, "Content-Type": "application/json"],
            body: method == "POST" ? mute : Data())
          #expect(answer?.status == 401, "\(method) \(path) with cookie \(cookie): \(answer?.status ?? -1)")
        }
      }
      let status = client.api("{\"cmd\":\"status\"}", token: token)?.json
      #expect(status?["muted"] as? Bool == false, "a refused mute muted: \(status ?? [:])")
      // With the token: each route answers.
      let page = client.request("GET", "/", headers: ["Authorization": "Bearer \(token)"])
      #expect(page?.status == 200 && page?.body.contains("/app.js") == true, "\(page?.status ?? -1)")
      #expect(page?.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
      #expect(client.request("GET", "/app.js", headers: ["Authorization": "Bearer \(token)"])?.status == 200)
      #expect(client.request("GET", "/app.css", headers: ["Authorization": "Bearer \(token)"])?.status == 200)
      Self.expectRefusal(
        client.request("GET", "/nope", headers: ["Authorization": "Bearer \(token)"]), 404, "web.not-found",
        "404")
      // The URL's token sets the HttpOnly, SameSite=Strict cookie named by the port, then the cookie alone works.
      let visit = client.request("GET", "/?token=\(token)")
      #expect(visit?.status == 303 && visit?.headers["location"] == "/", "\(visit?.status ?? -1)")
      let cookie = visit?.headers["set-cookie"] ?? ""
      #expect(cookie.hasPrefix("livemic-token-\(port)=\(token);"), "\(cookie)")
      #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
      let byCookie = client.request(
        "POST", "/api",
        headers: ["Cookie": "livemic-token-\(port)=\(token)", "Content-Type": "application/json"],
        body: Data("{\"cmd\":\"get\",\"key\":\"output.volume\"}".utf8))
      #expect(byCookie?.json["ok"] as? Bool == true, "\(byCookie?.body ?? "no answer")")
    }

    @Test("\"web\" in the run's configuration file opens the door as --web does")
    func webFromTheConfiguration() throws {
      let folder = Paths.temporaryFolder("web")
      defer { try? FileManager.default.removeItem(at: folder) }
      let config = folder.appendingPathComponent("livemic.json")
      try Data(#"{"web": "127.0.0.1:0", "preset": "podcast"}"#.utf8).write(to: config)
      let (rig, port, token) = try Self.rig(arguments: ["-p", "flat", "--config", config.path], web: [])
      defer { rig.stop() }
      let client = WebClient(port: port)
      let status = client.api("{\"cmd\":\"status\"}", token: token)
      #expect(status?.status == 200, "\(status?.body ?? "no answer")")
      // The command line's -p flat comes after the file's preset: it wins.
      #expect(status?.json["preset"] as? String == "flat", "\(status?.body ?? "no answer")")
    }

    @Test("a wrong Host, another site's Origin and a cross-site form post are refused; the rig's own pass")
    func hostAndOrigin() throws {
      let (rig, port, token) = try Self.rig()
      defer { rig.stop() }
      let client = WebClient(port: port)
      let auth = "Bearer \(token)"
      let mute = Data("{\"cmd\":\"mute\"}".utf8)
      for (method, path) in Self.routes {
        for host in ["evil.example:\(port)", "evil.example", "127.0.0.1.nip.io:\(port)", ""] {
          let answer = client.request(
            method, path, headers: ["Host": host, "Authorization": auth, "Content-Type": "application/json"],
            body: method == "POST" ? mute : Data())
          Self.expectRefusal(answer, 421, "web.host", "\(method) \(path) Host '\(host)'")
        }
      }
      for host in ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"] {
        let answer = client.request(
          "POST", "/api", headers: ["Host": host, "Authorization": auth, "Content-Type": "application/json"],
          body: Data("{\"cmd\":\"get\",\"key\":\"output.volume\"}".utf8))
        #expect(answer?.json["ok"] as? Bool == true, "Host \(host): \(answer?.body ?? "no answer")")
      }
      // Another site's page: its Origin, with the token even (a stolen one cannot be used from there).
      for origin in ["http://evil.example", "http://127.0.0.1:\(port + 1)", "null"] {
        let answer = client.request(
          "POST", "/api",
          headers: ["Origin": origin, "Authorization": auth, "Content-Type": "application/json"],
          body: mute)
        Self.expectRefusal(answer, 403, "web.origin", "Origin \(origin)")
      }
      // A cross-site form post as a browser sends it: no cookie (SameSite=Strict), a form's type.
      let form = client.request(
        "POST", "/api",
        headers: [
          "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site",
          "Content-Type": "application/x-www-form-urlencoded",
        ], body: Data("{\"cmd\":\"mute\"}=".utf8))
      #expect(form?.status == 403, "a cross-site form post: \(form?.status ?? -1) \(form?.body ?? "")")
      // The same form even with the token and no Origin: a form's type is not a request.
      let typed = client.request(
        "POST", "/api", headers: ["Authorization": auth, "Content-Type": "text/plain"], body: mute)
      Self.expectRefusal(typed, 415, "web.content-type", "text/plain")
      let same = client.request(
        "POST", "/api",
        headers: [
          "Origin": "http://127.0.0.1:\(port)", "Authorization": auth, "Content-Type": "application/json",
        ],
        body: Data("{\"cmd\":\"status\"}".utf8))
      #expect(same?.json["muted"] as? Bool == false, "a refused request muted: \(same?.body ?? "no answer")")
    }

    @Test("size limit, rate limit, malformed bodies: one sentence with a code each, and the audio goes on")
    func limitsAndMalformedRequests() throws {
      let (rig, port, token) = try Self.rig()
      defer { rig.stop() }
      let (folder, capture) = (rig.folder, rig.client("lmcap"))
      rig.waitForAudio()  // the start ramp
      let before = try Self.outputLevel(capture)
      let client = WebClient(port: port)
      let auth = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
      let big = Data(("{\"cmd\":\"get\",\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}").utf8)
      Self.expectRefusal(
        client.request("POST", "/api", headers: auth, body: big), 413, "web.too-large", "70 kB")
      Self.expectRefusal(
        client.request("POST", "/api", headers: auth, body: Data()), 400, "web.empty", "empty")
      Self.expectRefusal(
        client.request(
          "POST", "/api", headers: auth, body: Data("{\"cmd\":\"status\"}\n{\"cmd\":\"mute\"}".utf8)),
        400, "web.one-request", "two lines")
      Self.expectRefusal(client.request("PUT", "/api", headers: auth), 405, "web.method", "PUT")
      Self.expectRefusal(
        client.request("GET", "/events?topics=nope", headers: auth), 400, "web.unknown-topic", "a topic")
      for (body, code) in [
        ("{not json", "control.malformed-json"), ("[1,2]", "control.not-an-object"),
        ("{}", "control.no-command"),
        ("{\"cmd\":\"zap\"}", "control.unknown-command"), ("{\"cmd\":\"subscribe\"}", "control.socket-only"),
        ("{\"cmd\":\"set\",\"key\":\"output.volume\",\"value\":7}", "control.refused"),
      ] {
        let answer = client.request("POST", "/api", headers: auth, body: Data(body.utf8))
        #expect(answer?.status == 200, "\(body): \(answer?.status ?? -1)")
        #expect(answer?.json["code"] as? String == code, "\(body): \(answer?.body ?? "no answer")")
      }
      // The same request as a socket line gets the same answer line.
      let socket = try ControlDoorTests.connect(folder)
      socket.send("{\"cmd\":\"zap\"}")
      let line = socket.lines(for: 1, count: 1).first ?? ""
      let viaWeb = client.api("{\"cmd\":\"zap\"}", token: token)?.body.trimmingCharacters(in: .newlines)
      #expect(line == viaWeb, "socket: \(line) web: \(viaWeb ?? "none")")
      // Guessing: four clients at once, 50 requests each with a wrong token, from one address,
      // are held to the strangers' rate; the right token still answers at once after them.
      let guesses = Mutex<[Int: Int]>([:])
      let guessStart = Date()
      DispatchQueue.concurrentPerform(iterations: 4) { _ in
        let guesser = WebClient(port: port)
        for _ in 0..<50 {
          let status = guesser.api("{\"cmd\":\"status\"}", token: "guess")?.status ?? -1
          guesses.withLock { $0[status, default: 0] += 1 }
        }
      }
      let guessSeconds = Date().timeIntervalSince(guessStart)
      let guessed = guesses.withLock { $0 }
      print("[measured] the web door's strangers' limit, 200 wrong tokens in \(guessSeconds) s: \(guessed)")
      let (strangerBurst, strangerRate) = (60, 20.0)  // WebDoor.strangerRateBurst, strangerRatePerSecond
      #expect((guessed[429] ?? 0) > 0, "no guess was limited: \(guessed)")
      #expect(
        (guessed[401] ?? 0) <= strangerBurst + Int(strangerRate * guessSeconds) + 1,
        "more guesses than the strangers' burst and refill were answered: \(guessed)")
      #expect(
        client.api("{\"cmd\":\"status\"}", token: token)?.status == 200,
        "the guesses used up the user's allowance")
      // The user's rate limit: four clients at once, 300 requests each, from one address.
      // Thirteen requests above came from this address with the token already: the bucket
      // holds burst - 13 at the start, refilled at the rate while the four clients run.
      let counts = Mutex<[Int: Int]>([:])
      let hammerStart = Date()
      DispatchQueue.concurrentPerform(iterations: 4) { _ in
        let hammer = WebClient(port: port)
        for _ in 0..<300 {
          let status = hammer.api("{\"cmd\":\"get\",\"key\":\"output.volume\"}", token: token)?.status ?? -1
          counts.withLock { $0[status, default: 0] += 1 }
        }
      }
      let hammerSeconds = Date().timeIntervalSince(hammerStart)
      let seen = counts.withLock { $0 }
      print(
        "[measured] the web door's rate limit, 1200 requests from 4 clients at once in \(hammerSeconds) s: \(seen)"
      )
      let (burst, perSecond) = (400, 400.0)  // WebDoor.rateBurst, WebDoor.ratePerSecond
      let most = burst + Int(perSecond * hammerSeconds) + 1
      if hammerSeconds < 1.5 {
        #expect((seen[429] ?? 0) > 0, "no request was limited: \(seen)")
      } else {
        print("[measured] the hammer took \(hammerSeconds) s: the refill may serve every request")
      }
      #expect((seen[200] ?? 0) >= burst - 13, "the burst was not served: \(seen)")
      #expect((seen[200] ?? 0) <= most, "more than the burst and the refill (\(most)) were served: \(seen)")
      let limited = WebClient(port: port).api("{\"cmd\":\"status\"}", token: token)
      if limited?.status == 429 {
        Self.expectRefusal(limited, 429, "web.rate-limited", "rate")
        #expect(limited?.headers["retry-after"] == "1")
      }
      usleep(2_500_000)
      #expect(client.api("{\"cmd\":\"status\"}", token: token)?.status == 200, "still limited after 2.5 s")
      let after = try Self.outputLevel(capture)
      print("[measured] output RMS before the web door's refusals \(before), after \(after)")
      #expect(
        before > 0.1 && abs(20 * log10(after / before)) < 0.5, "the audio changed: \(before) → \(after)")
      #expect(rig.livemic.process.isRunning)
    }

    @Test(
      "real-time guard at zero with a feed open and meters streaming at 20 Hz; the feed stops with its page")
    func realtimeGuardWithAFeedOpen() throws {
      let (rig, port, token) = try Self.rig(guarded: true)
      defer { rig.stop() }
      let run = GuardedRun(rig: rig)
      guard let feed = WebFeed(port: port, token: token) else { throw HarnessError("no feed") }
      let began = Date()
      let pages = (0..<2).map { _ in WebClient(port: port) }
      // A page's requests beside the feed: status and values, as the page asks them.
      while run.cycles < 2000 && Date().timeIntervalSince(began) < 30 {
        for page in pages {
          _ = page.api("{\"cmd\":\"status\"}", token: token)
          _ = page.api("{\"cmd\":\"get\"}", token: token)
        }
        usleep(250_000)
      }
      let seconds = Date().timeIntervalSince(began)
      let meters = feed.lines.filter { $0.line.hasPrefix("{\"stream\":\"meters\"") }
      let rate = Double(meters.count) / seconds
      print(
        "[measured] the web feed: \(meters.count) meter lines in \(seconds) s (\(rate) Hz), \(run.cycles) cycles"
      )
      #expect(feed.status.withLock { $0 } == 200)
      #expect(rate > 15 && rate < 25, "meter lines at \(rate) Hz")
      if let last = meters.last {
        let input =
          (jsonObject(last.line)["input"] as? [[String: Any]])?.first?["peak_dbfs"] as? Double ?? -200
        #expect(abs(input - 20 * log10(0.2)) < 0.5, "the input peak in the feed: \(input)")
      }
      RealtimeGuard.expectNothingCounted(run.counters, "with a web feed open")
      feed.close()
      run.finish()
    }
  }
}
