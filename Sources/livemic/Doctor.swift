import DSP
import Foundation
import LV2Host
import LiveMicControl
import LiveMicEngine
import LiveMicPresets

#if canImport(Glibc)
  import Glibc
#endif

/// `livemic doctor [-s SERVER] [--json]`: what low latency on this machine depends on, outside
/// LiveMic, checked one line each, with the fix in one sentence where something is wrong. Exit
/// status 0 when nothing is wrong, 1 otherwise.
///
/// Thread: the main thread (a CLI command).
enum Doctor {
  /// One check's outcome.
  struct Finding {
    enum Status: String {
      case ok
      /// Something to fix (the exit status becomes 1).
      case problem
      /// Worth knowing, never an error.
      case info
    }
    let check: String
    let status: Status
    let detail: String
    /// One sentence: how to fix it (problems only).
    var fix: String? = nil

    var json: JSONValue {
      var fields: JSONObject = [
        "check": .string(check), "status": .string(status.rawValue), "detail": .string(detail),
      ]
      if let fix { fields["fix"] = .string(fix) }
      return .object(fields)
    }

    var line: String {
      let mark = status == .ok ? "ok  " : status == .problem ? "FIX " : "info"
      return "\(mark) \(check): \(detail)" + (fix.map { " — \($0)" } ?? "")
    }
  }

  /// The priority JACK gives its clients' process threads when the server does not say (jackd2's
  /// default `-P 10`, the clients one below).
  static let defaultClientPriority: Int32 = 9

  /// Runs every check.
  static func findings(server: String?, library: PresetLibrary = PresetLibrary()) -> [Finding] {
    let probe = ServerProbe.probe(server: server)
    var all: [Finding] = []
    all.append(contentsOf: scheduling(priority: probe.flatMap(\.clientPriority) ?? defaultClientPriority))
    all.append(contentsOf: jack(probe, server: server))
    all.append(contentsOf: system())
    all.append(contentsOf: presets(library))
    all.append(socketFolder())
    all.append(contentsOf: webDoors())
    return all
  }

  /// The report: one line per finding, or a JSON object; and the exit status.
  static func report(server: String?, json: Bool) -> (text: String, status: Int32) {
    let all = findings(server: server)
    let failed = all.contains { $0.status == .problem }
    if json {
      let object: JSONObject = ["ok": .bool(!failed), "findings": .array(all.map(\.json))]
      return (object.encoded(sortedKeys: true) + "\n", failed ? 1 : 0)
    }
    let summary =
      failed
      ? "\(all.filter { $0.status == .problem }.count) thing(s) to fix (FIX above)"
      : "nothing to fix"
    return (all.map(\.line).joined(separator: "\n") + "\n" + summary + "\n", failed ? 1 : 0)
  }

  // MARK: Real-time scheduling

  /// SCHED_FIFO at `priority` on a probe thread, the rtprio and memlock limits, the audio group.
  static func scheduling(priority: Int32) -> [Finding] {
    var found: [Finding] = []
    let code = Locked<Int32>(-1)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
      var parameters = sched_param(sched_priority: priority)
      let result = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
      code.withLock { $0 = result }
      done.signal()
    }
    thread.start()
    done.wait()
    let result = code.withLock { $0 }
    found.append(
      result == 0
        ? Finding(
          check: "real-time scheduling", status: .ok,
          detail: "SCHED_FIFO \(priority) (JACK's client priority) was granted to a probe thread")
        : Finding(
          check: "real-time scheduling", status: .problem,
          detail:
            "SCHED_FIFO \(priority) was refused to a probe thread (\(String(cString: strerror(result))))",
          fix:
            "add yourself to the audio group (sudo adduser $USER audio) with an rtprio limit of 95 in /etc/security/limits.d/audio.conf, then log in again"
        ))
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(__RLIMIT_RTPRIO.rawValue), &limit)
    let rtprio = limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur)"
    let rtprioOK =
      geteuid() == 0 || limit.rlim_cur == rlim_t.max || Int32(clamping: limit.rlim_cur) >= priority
    found.append(
      Finding(
        check: "rtprio limit", status: rtprioOK ? .ok : .problem,
        detail: "\(rtprio)" + (geteuid() == 0 ? " (root: not needed)" : ""),
        fix: rtprioOK ? nil : "set '@audio - rtprio 95' in /etc/security/limits.d/audio.conf and log in again"
      ))
    getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit)
    let memlockOK = geteuid() == 0 || limit.rlim_cur == rlim_t.max
    found.append(
      Finding(
        check: "memlock limit", status: memlockOK ? .ok : .problem,
        detail: limit.rlim_cur == rlim_t.max
          ? "unlimited"
          : "\(UInt64(limit.rlim_cur) / 1024) KiB"
            + (geteuid() == 0 ? " (root: not needed)" : ""),
        fix: memlockOK
          ? nil : "set '@audio - memlock unlimited' in /etc/security/limits.d/audio.conf and log in again"))
    found.append(audioGroup())
    return found
  }

  /// Membership of the `audio` group (information for root).
  static func audioGroup() -> Finding {
    var count = getgroups(0, nil)
    var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
    count = getgroups(count, &groups)
    let audio = getgrnam("audio").map { $0.pointee.gr_gid }
    let member =
      audio.map { gid in groups.prefix(Int(max(count, 0))).contains(gid) || getgid() == gid } ?? false
    if member { return Finding(check: "audio group", status: .ok, detail: "this user is a member") }
    if geteuid() == 0 {
      return Finding(check: "audio group", status: .info, detail: "not a member (root needs none)")
    }
    return Finding(
      check: "audio group", status: .problem,
      detail: audio == nil ? "there is no audio group" : "not a member",
      fix: "sudo adduser $USER audio, then log in again")
  }

  // MARK: The JACK server

  static func jack(_ probe: ServerProbe?, server: String?) -> [Finding] {
    let name = server ?? JackClient.defaultServerName
    guard let probe else {
      return [
        Finding(
          check: "JACK server", status: .problem, detail: "no server named '\(name)' answers",
          fix:
            "start one (qjackctl, 'jackd -d alsa', PipeWire's pipewire-jack) or run 'scripts/run', which starts a dummy one"
        )
      ]
    }
    let ms = { (frames: Int) in
      String(format: "%.1f ms", Double(frames) * 1000 / Double(max(probe.sampleRate, 1)))
    }
    return [
      Finding(
        check: "JACK server", status: .ok, detail: "'\(probe.serverName)' runs: \(probe.implementation)"),
      Finding(
        check: "JACK real time", status: probe.realtime ? .ok : .problem,
        detail: probe.realtime
          ? "the graph runs in real time" : "the server runs without real-time scheduling",
        fix: probe.realtime
          ? nil
          : "start jackd with -R (the default) and the privileges above; --no-realtime is for tests only"),
      Finding(
        check: "JACK format", status: .info,
        detail:
          "\(probe.sampleRate) Hz, \(probe.bufferFrames) frames per period (\(ms(probe.bufferFrames))); "
          + "round trip \(probe.roundTripFrames) frames (\(ms(probe.roundTripFrames)))"
          + (probe.captureLatencyFrames == nil ? ", no physical ports (two periods counted)" : "")
          + " plus the chain's own latency"),
    ]
  }

  // MARK: The system

  /// The CPU frequency governor, threaded interrupts, the kernel's preemption (information).
  static func system() -> [Finding] {
    func read(_ path: String) -> String? {
      (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    let governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    let cmdline = read("/proc/cmdline") ?? ""
    var uts = utsname()
    uname(&uts)
    let kernelVersion = withUnsafeBytes(of: &uts.version) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    let preempt =
      FileManager.default.fileExists(atPath: "/sys/kernel/realtime")
      ? "PREEMPT_RT"
      : kernelVersion.contains("PREEMPT_DYNAMIC")
        ? "PREEMPT_DYNAMIC"
        : kernelVersion.contains("PREEMPT") ? "PREEMPT" : "no preemption model named"
    return [
      Finding(
        check: "CPU governor", status: .info,
        detail: governor.map {
          $0 == "performance" ? "performance" : "\($0) ('performance' holds the clock up)"
        }
          ?? "not reported (no cpufreq)"),
      Finding(
        check: "threaded interrupts", status: .info,
        detail: cmdline.contains("threadirqs")
          ? "on (threadirqs)" : "off (boot with threadirqs to prioritize the sound card's IRQ)"),
      Finding(check: "kernel preemption", status: .info, detail: preempt),
    ]
  }

  // MARK: Presets and plugins

  /// Every preset found parses, and the LV2 plugins its entries name are installed (one finding
  /// per broken preset, one for all the good ones).
  static func presets(_ library: PresetLibrary) -> [Finding] {
    var found: [Finding] = []
    var good: [String] = []
    for (name, result) in library.all() {
      switch result {
      case .failure(let error):
        found.append(
          Finding(
            check: "preset '\(name)'", status: .problem, detail: error.description,
            fix: "fix the file (livemic presets show \(name) says the same) or remove it"))
      case .success(let preset):
        let missing = preset.entries.compactMap(\.plugin).map(\.uri).filter {
          ChainBuilder.world.info(uri: $0) == nil
        }
        if missing.isEmpty {
          good.append(name)
        } else {
          found.append(
            Finding(
              check: "preset '\(name)'", status: .problem,
              detail: "its LV2 plugins \(missing.joined(separator: ", ")) are not installed",
              fix: "install them (livemic plugins lists what is installed) or remove the entries"))
        }
      }
    }
    found.insert(
      Finding(
        check: "presets", status: good.isEmpty && found.isEmpty ? .problem : .ok,
        detail: good.isEmpty
          ? "none found in \(library.folders.joined(separator: ", "))"
          : "\(good.count) parse, their plugins installed: \(good.joined(separator: ", "))",
        fix: good.isEmpty && found.isEmpty
          ? "reinstall LiveMic (scripts/install) or set LIVEMIC_PRESETS_DIR" : nil),
      at: 0)
    return found
  }

  // MARK: The control socket

  /// The control sockets' folder: absent (LiveMic makes it), or a folder of this user's that
  /// nobody else can enter.
  static func socketFolder() -> Finding {
    let folder = (ControlProtocol.socketPath(name: "x") as NSString).deletingLastPathComponent
    var info = stat()
    guard stat(folder, &info) == 0 else {
      let parent = (folder as NSString).deletingLastPathComponent
      return access(parent, W_OK) == 0
        ? Finding(
          check: "control socket folder", status: .ok, detail: "\(folder) will be made at start (0700)")
        : Finding(
          check: "control socket folder", status: .problem,
          detail: "\(parent) is not writable, so \(folder) cannot be made",
          fix: "set XDG_RUNTIME_DIR to a folder of yours (systemd's /run/user/UID)")
    }
    let mode = info.st_mode & 0o777
    let mine = info.st_uid == geteuid()
    let ok = mine && mode & 0o077 == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    return Finding(
      check: "control socket folder", status: ok ? .ok : .problem,
      detail: "\(folder): mode " + String(mode, radix: 8)
        + (mine ? ", yours" : ", owned by uid \(info.st_uid)"),
      fix: ok
        ? nil
        : "chmod 700 \(folder) (and chown it to yourself): others must not reach LiveMic's control socket")
  }

  // MARK: The web remote

  /// The web remotes of the LiveMics running (the `NAME.web` files beside their sockets): where
  /// each is bound, whether the token is stored (0600), and whether it answers.
  static func webDoors() -> [Finding] {
    let folder = (ControlProtocol.socketPath(name: "x") as NSString).deletingLastPathComponent
    var info = stat()
    let tokenPath = WebToken.path
    var all: [Finding] = []
    if stat(tokenPath, &info) == 0 {
      let mode = info.st_mode & 0o777
      all.append(
        Finding(
          check: "web token", status: mode & 0o077 == 0 ? .ok : .problem,
          detail: "\(tokenPath): mode " + String(mode, radix: 8),
          fix: mode & 0o077 == 0 ? nil : "chmod 600 \(tokenPath) (or livemic web token --rotate)"))
    } else {
      all.append(
        Finding(
          check: "web token", status: .info, detail: "none yet: the first --web start makes \(tokenPath)"))
    }
    let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter {
      $0.hasSuffix(".web")
    }
    guard !files.isEmpty else {
      all.append(
        Finding(check: "web remote", status: .info, detail: "no LiveMic runs one (--web PORT starts one)"))
      return all
    }
    for file in files.sorted() {
      let name = String(file.dropLast(4))
      let parts = ((try? String(contentsOfFile: folder + "/" + file, encoding: .utf8)) ?? "").split(
        separator: " ")
      guard parts.count == 2, let port = Int(parts[1].trimmingCharacters(in: .whitespacesAndNewlines)) else {
        continue
      }
      let host = String(parts[0])
      let binding = WebBinding(host: host, port: port)
      let scope = binding.isLoopback ? "this machine only" : "reachable from the network"
      let answered = webAnswers(host: binding.isWildcard ? "127.0.0.1" : host, port: port)
      all.append(
        Finding(
          check: "web remote of '\(name)'", status: answered ? .ok : .problem,
          detail: "bound to \(binding.urlHost):\(port) (\(scope)), "
            + (answered ? "answers (its login page without the token)" : "does not answer"),
          fix: answered ? nil : "LiveMic '\(name)' may have stopped uncleanly; restart it"))
    }
    return all
  }

  /// True when an HTTP server at `host`:`port` answers `GET /` within a second with the web
  /// door's refusal of a request without the token (401).
  static func webAnswers(host: String, port: Int) -> Bool {
    let six = host.contains(":")
    let fd = socket(six ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 1, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var connected: Int32 = -1
    if six {
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = UInt16(port).bigEndian
      inet_pton(AF_INET6, host, &address.sin6_addr)
      connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
      }
    } else {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = UInt16(port).bigEndian
      inet_pton(AF_INET, host, &address.sin_addr)
      connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
    guard connected == 0 else { return false }
    let request = Array("GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    guard
      request.withUnsafeBufferPointer({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) })
        == request.count
    else { return false }
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = read(fd, &buffer, buffer.count)
    return n > 12 && String(decoding: buffer[0..<n], as: UTF8.self).hasPrefix("HTTP/1.1 401")
  }
}
