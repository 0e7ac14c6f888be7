import Foundation
import Testing

extension EndToEnd {
  @Suite("Command line")
  struct CommandLineTests {
    @Test("--help explains the options with examples; --version prints it")
    func help() throws {
      let result = try runLiveMic(["--help"])
      #expect(result.status == 0)
      for text in [
        "--name", "--server", "--preset", "--set", "--inputs", "--connect-in", "--connect-out",
        "--no-connect", "EXAMPLES",
      ] {
        #expect(result.stdout.contains(text), "help lacks \(text)")
      }
      let version = try runLiveMic(["--version"])
      #expect(version.status == 0 && version.stdout.hasPrefix("livemic "))
    }

    @Test(
      "bad options give one clear line and exit status 2",
      arguments: [
        (["--bogus"], "unknown option '--bogus'"),
        (["-i", "3"], "--inputs takes a whole number from 1 to 2"),
        (["-c", "eq.bass_db"], "is not KEY=VALUE"),
        (["-c", "eq.bass_db=loud"], "is not a number"),
        (["-n"], "--name needs a value"),
        (["render", "only-one.wav"], "needs an input and an output file"),
        // JACK matches nothing with a pattern it cannot compile, silently: refused here instead.
        (["--route-out", "system:(playback"], "--route-out 'system:(playback' is not a port-name pattern"),
        (["--route-in", "[capture"], "--route-in '[capture' is not a port-name pattern"),
        (
          ["--stream-out", "/nonexistent-lm/x.f32"], "--stream-out '/nonexistent-lm/x.f32' cannot be written"
        ),
      ])
    func badOptions(arguments: [String], message: String) throws {
      let result = try runLiveMic(arguments)
      #expect(result.status == 2)
      #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
      #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test(
      "a missing preset or unknown parameter fails before JACK is touched",
      arguments: [
        (["-p", "no-such-preset"], "no preset named 'no-such-preset'"),
        (["-p", "/nonexistent/x.json"], "cannot read preset '/nonexistent/x.json': no such file"),
        (["-c", "eq.loudness=3"], "'eq.loudness' names no parameter"),
        (["-c", "eq.bass_db=99"], "99 is outside the range of 'eq.bass_db' (-20 to 20)"),
      ])
    func badPresetOrParameter(arguments: [String], message: String) throws {
      let result = try runLiveMic(arguments + ["-s", "lmnoserver\(getpid())"])
      #expect(result.status == 1)
      #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
    }

    @Test("presets lists every shipped preset; presets show prints one")
    func presets() throws {
      let list = try runLiveMic(["presets"])
      #expect(list.status == 0)
      for name in ["flat", "voice", "karaoke", "podcast", "stream", "hearing"] {
        #expect(list.stdout.contains("\(name) "), "\(name) missing")
      }
      let show = try runLiveMic(["presets", "show", "karaoke"])
      #expect(show.status == 0 && show.stdout.contains("echo.time_ms = 280 ms"))
    }
  }
}
