import CSndfile
import DSP
import Foundation
import LV2Host
import LiveMicPresets

/// What `livemic render` was asked to do.
///
/// Thread: any (value type).
public struct RenderOptions: Sendable {
  public var preset = "voice"
  public var overrides: [ParameterOverride] = []
  public var inputPath = ""
  public var outputPath = ""
  /// Frames per block handed to the chain (the JACK period it imitates).
  public var blockFrames = 256
  /// LV2 plugin URIs appended to the chain.
  public var plugins: [String] = []
  /// A slow loudness target in LUFS (`--loudness-target`; see `ChainRequest`).
  public var loudnessTargetLufs: Float?
  /// `--no-plugins`: no entry's mode runs an LV2 alternative.
  public var noPlugins = false
  /// `--music FILE`: a music bed mixed into the output after the chain as live (`--music`:
  /// the `music` stage's volume and ducking), and an echo canceller's reference.
  public var musicPath: String?
  /// Whether to print a progress line on standard error.
  public var showProgress = isatty(2) != 0

  public init() {}
}

/// Why rendering failed. Each message is one sentence.
public enum RenderError: CodedError {
  case openInput(path: String, reason: String)
  case openOutput(path: String, reason: String)
  case unknownFormat(path: String)
  case request(ChainRequestError)
  case build(BuildError)

  public var description: String {
    switch self {
    case .openInput(let path, let reason): return "cannot read audio file '\(path)': \(reason)"
    case .openOutput(let path, let reason): return "cannot write audio file '\(path)': \(reason)"
    case .unknownFormat(let path):
      return
        "cannot tell the output format of '\(path)' from its extension (use .wav, .flac, .ogg, .aiff or .caf)"
    case .request(let e): return e.description
    case .build(let e): return e.description
    }
  }

  public var code: String {
    switch self {
    case .openInput: return "render.unreadable-input"
    case .openOutput: return "render.unwritable-output"
    case .unknownFormat: return "render.unknown-format"
    case .request(let e): return e.code
    case .build(let e): return e.code
    }
  }
}

/// Runs the live chain's code over an audio file at the file's sample rate. Never real-time.
public enum Renderer {
  /// The output is always stereo (the chain's output), 32-bit float for WAV/AIFF/CAF, 24-bit
  /// for FLAC, Vorbis for OGG. Returns the number of frames written.
  @discardableResult
  public static func render(_ options: RenderOptions) throws(RenderError) -> Int {
    var request = ChainRequest(preset: options.preset)
    request.overrides = options.overrides
    request.plugins = options.plugins
    request.loudnessTargetLufs = options.loudnessTargetLufs
    request.noPlugins = options.noPlugins
    request.music = options.musicPath != nil
    let stages: [ChainEntry]
    do { stages = try request.stages().1 } catch { throw .request(error) }

    var inInfo = SF_INFO()
    guard let input = sf_open(options.inputPath, Int32(SFM_READ), &inInfo) else {
      throw .openInput(path: options.inputPath, reason: String(cString: sf_strerror(nil)))
    }
    defer { sf_close(input) }
    guard let format = outputFormat(for: options.outputPath) else {
      throw .unknownFormat(path: options.outputPath)
    }
    var outInfo = SF_INFO()
    outInfo.samplerate = inInfo.samplerate
    outInfo.channels = 2
    outInfo.format = format
    guard let output = sf_open(options.outputPath, Int32(SFM_WRITE), &outInfo) else {
      throw .openOutput(path: options.outputPath, reason: String(cString: sf_strerror(nil)))
    }
    defer { sf_close(output) }

    let block = max(1, options.blockFrames)
    let settings = HostSettings(
      sampleRate: Double(inInfo.samplerate), maxBlockFrames: block, nominalBlockFrames: block,
      fixedBlocks: false, identicalChannels: inInfo.channels == 1)
    let built: BuiltChain
    do { built = try ChainBuilder.build(stages, settings: settings) } catch { throw .build(error) }
    for (_, message) in built.skipped {
      FileHandle.standardError.write(Data("livemic: error: \(message)\n".utf8))
    }
    for (id, reason) in built.fellBack {
      let message = "stage '\(id)': its plugin could not be made (\(reason)); the built-in unit runs instead"
      FileHandle.standardError.write(Data("livemic: error: \(message)\n".utf8))
    }
    let chain = built.chain
    let music = try options.musicPath.map { path throws(RenderError) in
      try MusicFile(path: path, sampleRate: Int(inInfo.samplerate), block: block)
    }
    let channels = Int(inInfo.channels)
    // The files are read and written a chunk of blocks at a time (one system call per 8192
    // frames or so, not per block: 11,000 reads and as many writes for 60 s at 256 frames);
    // the chain still runs block by block, on the same block boundaries.
    let blocksPerChunk = max(1, 8192 / block)
    let chunk = block * blocksPerChunk
    var interleaved = [Float](repeating: 0, count: chunk * max(channels, 2))
    var left = [Float](repeating: 0, count: block)
    var right = [Float](repeating: 0, count: block)
    var stereo = [Float](repeating: 0, count: chunk * 2)
    let total = Int(inInfo.frames)
    var done = 0
    var lastPercent = -1
    while true {
      let read = Int(sf_readf_float(input, &interleaved, sf_count_t(chunk)))
      if read <= 0 { break }
      var start = 0
      while start < read {
        let got = min(block, read - start)
        for f in 0..<got {
          let i = (start + f) * channels
          left[f] = interleaved[i]
          right[f] = channels > 1 ? interleaved[i + 1] : left[f]
        }
        chain.process(left: &left, right: &right, blockFrames: got, frames: got)
        music?.mix(into: &left, &right, frames: got, chain: chain)
        for f in 0..<got {
          stereo[2 * (start + f)] = left[f]
          stereo[2 * (start + f) + 1] = right[f]
        }
        start += got
      }
      sf_writef_float(output, stereo, sf_count_t(read))
      done += read
      if options.showProgress && total > 0 {
        let percent = done * 100 / total
        if percent != lastPercent {
          lastPercent = percent
          FileHandle.standardError.write(Data("\rrendering \(options.inputPath): \(percent)%".utf8))
        }
      }
    }
    if options.showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
    for plugin in built.plugins {
      for line in plugin.drainLog() {
        FileHandle.standardError.write(Data("livemic: plugin '\(plugin.id)': \(line)\n".utf8))
      }
    }
    return done
  }

  /// A music bed read from a file block by block (silence after its end) and mixed as live.
  final class MusicFile {
    let file: OpaquePointer
    let channels: Int
    let mixer: MusicMixer
    var interleaved: [Float]
    /// The block's music and the mixer's scratch: four buffers of `block` frames, one allocation.
    let buffers: UnsafeMutablePointer<Float>
    let block: Int

    init(path: String, sampleRate: Int, block: Int) throws(RenderError) {
      var info = SF_INFO()
      guard let file = sf_open(path, Int32(SFM_READ), &info) else {
        throw .openInput(path: path, reason: String(cString: sf_strerror(nil)))
      }
      guard Int(info.samplerate) == sampleRate else {
        sf_close(file)
        throw .openInput(
          path: path, reason: "its sample rate is \(info.samplerate) Hz, the input's \(sampleRate) Hz")
      }
      self.file = file
      self.block = block
      channels = Int(info.channels)
      mixer = MusicMixer(sampleRate: Double(sampleRate))
      interleaved = [Float](repeating: 0, count: block * max(channels, 2))
      buffers = .allocate(capacity: 4 * block)
      buffers.initialize(repeating: 0, count: 4 * block)
    }

    deinit {
      sf_close(file)
      buffers.deallocate()
    }

    /// Mixes the next `frames` of music into the chain's output.
    func mix(into outLeft: inout [Float], _ outRight: inout [Float], frames: Int, chain: VoiceChain) {
      let got = max(0, Int(sf_readf_float(file, &interleaved, sf_count_t(frames))))
      let (left, right) = (buffers, buffers + block)
      for f in 0..<frames {
        left[f] = f < got ? interleaved[f * channels] : 0
        right[f] = f < got ? interleaved[f * channels + (channels > 1 ? 1 : 0)] : 0
      }
      outLeft.withUnsafeMutableBufferPointer { ol in
        outRight.withUnsafeMutableBufferPointer { or in
          guard let ol = ol.baseAddress, let or = or.baseAddress else { return }
          mixer.mix(
            left, right, into: ol, or, frames: frames, chain: chain, scratchLeft: buffers + 2 * block,
            scratchRight: buffers + 3 * block)
        }
      }
    }
  }

  /// The libsndfile format for an output path's extension.
  static func outputFormat(for path: String) -> Int32? {
    switch URL(fileURLWithPath: path).pathExtension.lowercased() {
    case "wav": return Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
    case "flac": return Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_24)
    case "ogg", "oga": return Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
    case "aif", "aiff": return Int32(SF_FORMAT_AIFF | SF_FORMAT_FLOAT)
    case "caf": return Int32(SF_FORMAT_CAF | SF_FORMAT_FLOAT)
    default: return nil
    }
  }
}
