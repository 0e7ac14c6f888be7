import CSndfile
import DSP
import Foundation
import LiveMicPresets

/// What `livemic bench` was asked to do.
///
/// Thread: any (value type).
public struct BenchOptions: Sendable {
  public var seconds = 60
  public var compareWithSox = true
  /// Only the per-block timing table (`--blocks`).
  public var blocksOnly = false
  public init() {}
}

/// Why the benchmark could not run. One sentence.
public struct BenchError: CodedError {
  public let description: String
  public var code: String { "bench.failed" }
}

/// Measures the chain's speed, offline, against sox running the equivalent chain on the same
/// audio in the same run. Never real-time.
public enum Benchmark {
  /// A real-time factor as the tables print it: whole above 10, else with the digits that keep
  /// it from reading 0× (a debug build can be slower than real time).
  static func factor(_ x: Double) -> String {
    String(format: x >= 10 ? "%.0f×" : x >= 1 ? "%.1f×" : "%.2f×", x)
  }

  static let sampleRate = 48000.0
  static let blockFrames = 256
  /// sox's nearest equivalent of the `voice` preset.
  /// The voice preset's units sox has no counterpart for, left out of the comparison.
  static let withoutSoxCounterpart = ["denoise", "feedback"]
  static let soxEffects = [
    "highpass", "80", "bass", "-1", "equalizer", "3000", "0.9q", "1.5", "treble", "1.5", "6000",
    "compand", "0.008,0.16", "6:-70,-70,-20,-20,0,-13.3", "3", "reverb", "40", "60", "100",
    "gain", "-1",
  ]

  /// The benchmark's report; `denormals` (the engine's table of what denormals cost, measured
  /// on the engine's own thread setup) goes after the chain's figures.
  public static func run(_ options: BenchOptions, denormals: String = "") throws(BenchError) -> String {
    let frames = options.seconds * Int(sampleRate)
    var (left, right) = testSignal(frames: max(frames, Int(sampleRate) * 2))
    let samples = Double(frames * 2)
    var rows: [(String, Double)] = []

    // Each unit alone, with the voice preset's settings for it (not bypassed), then the whole
    // voice chain.
    let voice: Preset
    do { voice = try PresetLibrary().load("voice") } catch {
      throw BenchError(description: error.description)
    }
    let blocks = try blockTable(voice, left: left, right: right, seconds: min(Double(options.seconds), 20))
    if options.blocksOnly { return blocks }
    for unit in BuiltinUnits.types {
      var stage =
        voice.units.first { $0.type == unit.typeName }
        ?? StageDescription(id: unit.typeName, type: unit.typeName)
      stage.bypassed = false
      let chain = try build([stage])
      rows.append((unit.typeName, time(chain, &left, &right, frames) / samples))
    }
    let whole = try build(voice.units)
    rows.append(("whole voice chain", time(whole, &left, &right, frames) / samples))
    // sox has no noise suppressor or howl suppressor: it is compared with the chain without them.
    let chain = try build(voice.units.filter { !withoutSoxCounterpart.contains($0.type) })
    let chainSeconds = time(chain, &left, &right, frames)
    rows.append(
      (
        "voice chain without \(withoutSoxCounterpart.joined(separator: ", ")) (compared with sox)",
        chainSeconds / samples
      ))

    var text =
      "LiveMic benchmark: \(options.seconds) s of stereo audio at 48 kHz, blocks of \(blockFrames) frames\n"
    text += "(release build: 'swift build -c release'; figures from this machine, this run)\n\n"
    text += "| stage (voice preset settings) | ns per sample | real-time factor |\n|---|---:|---:|\n"
    for (name, secondsPerSample) in rows {
      let rtf = 1 / (secondsPerSample * 2 * sampleRate)
      text +=
        "| \(name) | " + String(format: "%.2f", secondsPerSample * 1e9) + " | "
        + Self.factor(rtf) + " |\n"
    }
    text += "\n" + blocks
    if !denormals.isEmpty { text += "\n" + denormals }
    guard options.compareWithSox else { return text }
    text +=
      "\n"
      + (try compareWithSox(seconds: options.seconds, chainSeconds: chainSeconds, left: left, right: right))
    return text
  }

  /// Per-block mean, p99 and largest time of each of the voice preset's stages alone and of the
  /// whole chain at each of `BlockTiming.blockSizes`, on a SCHED_FIFO thread where granted.
  static func blockTable(_ voice: Preset, left: [Float], right: [Float], seconds: Double) throws(BenchError)
    -> String
  {
    let running = voice.units.filter { !$0.bypassed && $0.type != "input" && $0.type != "output" }
    var chains: [(String, [VoiceChain])] = []
    for stage in running {
      var copies: [VoiceChain] = []
      for _ in 0..<BlockTiming.runs { copies.append(try build([stage])) }
      chains.append((stage.type, copies))
    }
    var wholes: [VoiceChain] = []
    for _ in 0..<BlockTiming.runs { wholes.append(try build(voice.units)) }
    chains.append(("whole voice chain", wholes))
    let sizes = BlockTiming.blockSizes
    let work = chains
    let (figures, realtime) = BlockTiming.onRealtimeThread {
      work.map { _, copies in
        sizes.map { size in
          BlockTiming.measure(
            copies, left: left, right: right, blockFrames: size, seconds: seconds, sampleRate: sampleRate)
        }
      }
    }
    var text =
      "Time per block, µs: mean / p99 / max over \(Int(seconds)) s at each block size, "
      + (realtime ? "on a SCHED_FIFO thread" : "at normal scheduling (SCHED_FIFO was refused)")
      + "; each block's least time over \(BlockTiming.runs) identical runs (what the machine adds to one run's"
      + " block is not the chain's); the largest single-run time in brackets\n\n"
    text +=
      "| stage (voice preset settings) | " + sizes.map { "\($0) frames" }.joined(separator: " | ") + " |\n"
    text += "|---|" + sizes.map { _ in "---:|" }.joined() + "\n"
    for (i, (name, _)) in chains.enumerated() {
      text +=
        "| \(name) | "
        + figures[i].map { f, raw in
          String(
            format: "%.1f / %.1f / %.1f (%.0f)", f.meanMicroseconds, f.p99Microseconds, f.maxMicroseconds, raw
          )
        }.joined(separator: " | ") + " |\n"
    }
    let whole = figures[figures.count - 1].map(\.0)
    text += "\nWhole voice chain, worst block over p99 (goal at 16 and 32 frames: at most 2×): "
    text +=
      zip(sizes, whole).map { size, f in
        "\(size) frames " + String(format: "%.2f×", f.worstOverP99)
          + (size <= 32 ? (f.worstOverP99 <= 2 ? " (met)" : " (NOT met)") : "")
      }.joined(separator: ", ") + "\n"
    return text
  }

  private static func build(_ stages: [StageDescription]) throws(BenchError) -> VoiceChain {
    do { return try ChainAssembly.build(stages, sampleRate: sampleRate) } catch {
      throw BenchError(description: error.description)
    }
  }

  /// Seconds to process `frames` through `chain` in blocks (the input is restored first).
  private static func time(_ chain: VoiceChain, _ left: inout [Float], _ right: inout [Float], _ frames: Int)
    -> Double
  {
    var l = left
    var r = right
    // Make the copies now, not inside the measurement.
    l.withUnsafeMutableBufferPointer { _ in }
    r.withUnsafeMutableBufferPointer { _ in }
    let clock = ContinuousClock()
    let elapsed = clock.measure {
      chain.process(left: &l, right: &r, blockFrames: blockFrames, frames: frames)
    }
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
  }

  /// A voice-like test signal: a gliding harmonic tone with syllable-rate envelope, plus noise.
  static func testSignal(frames: Int) -> ([Float], [Float]) {
    var left = [Float](repeating: 0, count: frames)
    var right = [Float](repeating: 0, count: frames)
    var seed: UInt32 = 12345
    var phase = 0.0
    for i in 0..<frames {
      let t = Double(i) / sampleRate
      let f0 = 140 + 30 * sin(2 * Double.pi * 0.7 * t)
      phase += 2 * Double.pi * f0 / sampleRate
      let envelope = 0.5 + 0.5 * sin(2 * Double.pi * 3 * t)
      var voice = 0.0
      for h in 1...5 { voice += sin(Double(h) * phase) / Double(h) }
      seed = seed &* 1_664_525 &+ 1_013_904_223
      let noise = Double(Int32(bitPattern: seed)) / Double(Int32.max) * 0.01
      left[i] = Float(0.25 * envelope * voice + noise)
      right[i] = Float(0.25 * envelope * voice - noise)
    }
    return (left, right)
  }

  private static func compareWithSox(seconds: Int, chainSeconds: Double, left: [Float], right: [Float])
    throws(BenchError) -> String
  {
    guard let sox = findExecutable("sox") else {
      return "sox is not installed: no comparison (scripts/setup installs it)\n"
    }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("livemic-bench-\(getpid())")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let input = dir.appendingPathComponent("in.wav").path
    try writeWAV(path: input, left: left, right: right)

    let soxSeconds = try timeProcess(
      sox,
      ["-q", "-V1", input, "-t", "wav", "-e", "floating-point", dir.appendingPathComponent("sox.wav").path]
        + soxEffects)
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let bypassed = withoutSoxCounterpart.flatMap { ["-c", "\($0).bypass=on"] }
    let renderSeconds = try timeProcess(
      exe, ["render", "-p", "voice"] + bypassed + [input, dir.appendingPathComponent("livemic.wav").path])
    var text = "Same audio, same run, file to file (read WAV, process, write 32-bit float WAV):\n\n"
    text += "| command | seconds | real-time factor |\n|---|---:|---:|\n"
    text +=
      "| `sox in.wav out.wav \(soxEffects.joined(separator: " "))` | " + String(format: "%.3f", soxSeconds)
      + " | " + Self.factor(Double(seconds) / soxSeconds) + " |\n"
    text +=
      "| `livemic render -p voice \(bypassed.joined(separator: " ")) in.wav out.wav` | "
      + String(format: "%.3f", renderSeconds) + " | "
      + Self.factor(Double(seconds) / renderSeconds) + " |\n"
    text +=
      "| LiveMic voice chain (the same units) alone, in memory | " + String(format: "%.3f", chainSeconds)
      + " | "
      + Self.factor(Double(seconds) / chainSeconds) + " |\n\n"
    text += "Ratio sox / livemic render: " + String(format: "%.2f×", soxSeconds / renderSeconds)
    text +=
      "; sox / chain alone: " + String(format: "%.2f×", soxSeconds / chainSeconds) + " (goal: at least 2×)\n"
    return text
  }

  private static func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  private static func timeProcess(_ executable: String, _ arguments: [String]) throws(BenchError) -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let start = ContinuousClock.now
    do { try process.run() } catch { throw BenchError(description: "cannot run \(executable): \(error)") }
    process.waitUntilExit()
    let elapsed = ContinuousClock.now - start
    guard process.terminationStatus == 0 else {
      throw BenchError(
        description:
          "\(executable) \(arguments.joined(separator: " ")) failed with status \(process.terminationStatus)")
    }
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
  }

  /// Writes a 32-bit float stereo WAV at 48 kHz (with libsndfile).
  static func writeWAV(path: String, left: [Float], right: [Float]) throws(BenchError) {
    var info = SF_INFO()
    info.samplerate = Int32(sampleRate)
    info.channels = 2
    info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
      throw BenchError(description: "cannot write the benchmark's input file '\(path)'")
    }
    defer { sf_close(file) }
    var interleaved = [Float](repeating: 0, count: left.count * 2)
    for i in 0..<left.count {
      interleaved[2 * i] = left[i]
      interleaved[2 * i + 1] = right[i]
    }
    _ = sf_writef_float(file, interleaved, sf_count_t(left.count))
  }
}
