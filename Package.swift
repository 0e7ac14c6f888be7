// swift-tools-version:6.0
import PackageDescription

// scripts/test's sanitizer builds leave the end-to-end target out (LIVEMIC_OFFLINE_TESTS_ONLY=1):
// those tests run only from the plain build, against the release binary, so compiling their
// harness under each sanitizer was build time spent for nothing.
let offlineTestsOnly = Context.environment["LIVEMIC_OFFLINE_TESTS_ONLY"] == "1"
let endToEndTests: [Target] =
  offlineTestsOnly
  ? [] : [.testTarget(name: "EndToEndTests", dependencies: ["CJack", "CSndfile", "TestSupport"])]

let package = Package(
  name: "LiveMic",
  products: [
    .executable(name: "livemic", targets: ["livemic"])
  ],
  targets: [
    // Thin system-library targets: a module map and a shim header each.
    .systemLibrary(name: "CJack", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),
    .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
    .systemLibrary(name: "CLilv", pkgConfig: "lilv-0", providers: [.apt(["liblilv-dev", "lv2-dev"])]),
    .systemLibrary(name: "CLo", pkgConfig: "liblo", providers: [.apt(["liblo-dev"])]),
    .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
    .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
    .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
    // The web door: HTTP, Server-Sent Events and POST (docs/web.md), and the QR code of its URL.
    .systemLibrary(
      name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
    .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
    // glibc's heap figures (mallinfo2) for `status`: part of libc, nothing to link.
    .systemLibrary(name: "CMalloc"),
    // The C half of LV2 hosting: the variadic log functions and a lock-free log queue.
    .target(name: "CLV2Support"),
    // WebRTC's audio processing (C++) behind a C interface, on a helper thread of its own.
    // Not a pkgConfig system library: webrtc-audio-processing.pc's Cflags carry -D flags, which
    // SwiftPM refuses with a warning (the release build has none). The settings below are what
    // `pkg-config --cflags --libs webrtc-audio-processing` gives for Debian 12's 0.3
    // (libwebrtc-audio-processing-dev, installed by scripts/setup).
    .target(
      name: "CWebRTC",
      cxxSettings: [
        .unsafeFlags(["-I/usr/include/webrtc_audio_processing"]), .define("WEBRTC_POSIX"),
        .define("WEBRTC_AUDIO_PROCESSING_ONLY_BUILD"),
      ],
      linkerSettings: [.linkedLibrary("webrtc_audio_processing")]),

    // Voice DSP: no JACK, no lilv, no files; FFTW for the feedback suppressor's analysis and
    // speexdsp for noise suppression and echo cancellation, WebRTC's audio processing as their
    // second engine; everything else pure Swift.
    .target(name: "DSP", dependencies: ["CFFTW", "CSpeexDSP", "CWebRTC"]),

    // The engine/host layer: the JACK client and everything the audio thread touches.
    .target(name: "LiveMicEngine", dependencies: ["CJack", "DSP"]),

    // The LV2 host (part of the engine/host layer): plugin discovery, instances, host features.
    .target(name: "LV2Host", dependencies: ["DSP", "CLilv", "CLV2Support", "CJack"]),

    // Presets: the preset model, library and writer, processing modes, the chain a run asks for
    // and the chain builder, JSON values. No JACK client, no engine.
    .target(name: "LiveMicPresets", dependencies: ["DSP", "LV2Host"]),

    // Offline tools: render, response plot, benchmark, loudness analysis. No JACK client, no
    // engine.
    .target(
      name: "LiveMicOffline", dependencies: ["LiveMicPresets", "DSP", "LV2Host", "CSndfile", "CEbur128"]),

    // The supervisor/control layer, never real-time: the session and its state (Session/), the
    // control socket, OSC, NSM and the event stream (Remote/), recordings, streams and the live
    // loudness meter (Recording/).
    .target(
      name: "LiveMicControl",
      dependencies: [
        "LiveMicPresets", "LiveMicOffline", "LiveMicEngine", "LV2Host", "DSP", "CSndfile", "CLo",
        "CMicroHTTPD", "CQRencode", "CMalloc",
      ]),

    // Argument parsing and wiring, and the CLI-only commands (`ctl`, `monitor`, references).
    .executableTarget(
      name: "livemic",
      dependencies: ["LiveMicControl", "LiveMicPresets", "LiveMicOffline", "LiveMicEngine", "LV2Host", "DSP"]),

    // What more than one test target uses: the installed plugins' URIs, a pink-noise filter.
    // Plain Swift, no project module; only the test targets depend on it.
    .target(name: "TestSupport", path: "Tests/Support/TestSupport"),

    .testTarget(name: "DSPTests", dependencies: ["DSP", "TestSupport"]),
    // The engine offline: `ProcessState` driven with fake port buffers, no server; the rings and
    // the chain slot's handshake under two-thread stress.
    .testTarget(name: "LiveMicEngineTests", dependencies: ["LiveMicEngine", "DSP", "CJack"]),
    // The LV2 host's rings (worker requests and responses, the log queue) under stress.
    .testTarget(name: "LV2HostTests", dependencies: ["LV2Host", "CLV2Support", "CJack"]),
    // Presets: parsing, validation, saving, plugin entries (real plugins, offline).
    .testTarget(
      name: "LiveMicPresetsTests",
      dependencies: ["LiveMicControl", "LiveMicPresets", "LV2Host", "DSP", "CSndfile", "TestSupport"]),
    // The offline tools: render, measure, bench, loudness, plots; the presets measured.
    .testTarget(
      name: "LiveMicOfflineTests",
      dependencies: [
        "LiveMicControl", "LiveMicPresets", "LiveMicOffline", "LV2Host", "DSP", "CEbur128", "CSndfile",
        "TestSupport",
      ]),
    // The supervisor's parts, without a server.
    .testTarget(
      name: "LiveMicControlTests",
      dependencies: [
        "LiveMicControl", "LiveMicPresets", "LiveMicOffline", "LiveMicEngine", "LV2Host", "DSP", "CEbur128",
        "CSndfile", "TestSupport",
      ]),
    // The command line's own parts: the control client, the references.
    .testTarget(
      name: "livemicTests",
      dependencies: ["livemic", "LiveMicControl", "LiveMicPresets", "LV2Host", "DSP", "TestSupport"]),
  ] + endToEndTests,
  swiftLanguageModes: [.v6]
)
