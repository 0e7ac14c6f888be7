let version = "0.1.0"

let mainHelp = """
  livemic \(version) — a live voice chain for JACK: microphone in, voice DSP, speakers out.

  USAGE
    livemic [run] [OPTIONS]              run live on a JACK server (the default command)
    livemic render [OPTIONS] IN OUT      run the same chain over an audio file
    livemic plot PRESET [-o FILE]        draw the frequency response of a preset's filters (SVG/PNG)
    livemic presets [show NAME]          list presets, or print one
    livemic params [--markdown]          list every parameter with range and default
    livemic bench [--seconds N]          measure the chain's speed against sox
    livemic plugins [--json] [FILTER]    list installed LV2 plugins (and whether LiveMic can host them)
    livemic plugins show URI             a plugin's ports, presets, features and latency
    livemic plugins check [FILTER]       host each installed plugin in a child process and say how it went
    livemic ctl [-n NAME] COMMAND        control a running LiveMic (see 'livemic help ctl')
    livemic monitor [-n NAME]            live levels, gain reduction, xruns; keys to mute and set volume
    livemic doctor [-s SERVER] [--json]  check what low latency here depends on (privileges, server, presets)
    livemic web token [--rotate]         print the web remote's token (--rotate: replace it)

  RUN OPTIONS
    -n, --name NAME          JACK client name (default: livemic)
    -s, --server NAME        JACK server name (default: $JACK_DEFAULT_SERVER or 'default')
    -p, --preset NAME|PATH   preset to load (default: voice)
    -c, --set KEY=VALUE      set one parameter after the preset (repeatable), e.g. eq.bass_db=3
    -i, --inputs 1|2         input channels (default 1: a mono input feeds both outputs)
        --connect-in PORT[,PORT]    capture ports to connect to in_1[, in_2]
                                    (default: the first physical capture port(s))
        --connect-out PORT[,PORT]   playback ports to connect out_1, out_2 to
                                    (default: the first two physical playback ports)
        --no-connect         register the ports and connect nothing
        --music              add a stereo music bed input (music_1, music_2), mixed after the
                             voice chain at music.volume_db, ducked under the voice with
                             -c music.duck=1 (see docs/rig.md)
        --connect-music P1,P2  connect these ports to music_1, music_2 (implies --music)
        --monitor            add a stereo monitor output (monitor_1, monitor_2) with its own
                             levels and reverb: monitor.voice_db, monitor.music_db,
                             monitor.reverb_db (see docs/rig.md)
        --connect-monitor P1,P2  connect monitor_1, monitor_2 to these ports (implies --monitor)
        --loudness-target LUFS   slowly bring the output's short-term loudness to LUFS
                             (-40 to -6, e.g. -16 for streams) before the limiter, never past
                             its ceiling; holds in pauses (a 'loudness' stage; docs/rig.md)
        --plugin URI         append an LV2 plugin to the chain (repeatable); its controls
                             are parameters ID.SYMBOL (see 'livemic plugins show URI')
        --watch              reload the preset when its file changes (as SIGHUP does)
        --no-plugins         no stage's mode runs an LV2 alternative: 'automatic' and 'plugin'
                             mean the built-in unit (status says why); plain LV2 entries run
        --autoload FILE      load a preset per output device: rules {"target": REGEX, "preset"}
                             over the playback ports the output goes to, and a fallback
                             (default: $XDG_CONFIG_HOME/livemic/autoload.json; docs/rig.md)
        --start-muted        start prepared but silent; 'livemic ctl unmute' ramps up
        --midi-cc CC[:CH]=KEY   map a MIDI controller on midi_in to a parameter (repeatable)
        --osc PORT           accept OSC control messages on UDP PORT (see docs/control.md)
        --osc-host ADDRESS   the address OSC listens on (default 127.0.0.1)
        --web [ADDR:]PORT    serve the web remote on PORT (127.0.0.1 unless ADDR; docs/web.md)
        --events json|PATH   a JSON event stream, one object per line, on stdout or into PATH
        --record DIR         record the output for the whole run into one file in DIR
                             (CLIENT-output-YYYYMMDD-HHMMSS.wav; WAV header updated each second)
        --autorecord DIR     record every live session: a new file at start and after each
                             reconnection to the JACK server
        --record-format wav|flac|ogg|mp3   format of those files (default wav, 32-bit float)
        --stream-out PATH|-  write the output continuously to a file, a FIFO or stdout
        --stream-format f32|wav   raw interleaved float32 (default) or a WAV header of unknown
                             length first; not with '--events json' when PATH is -
        --route-out PATTERN  output routing preference (repeatable, most preferred first): a
                             regular expression over playback port names, e.g. 'USB.*:playback_'
        --route-in PATTERN   input routing preference (repeatable): capture port names
        --on-route-loss mute|continue   when the output target is lost: mute, then connect
                             the fallback, muted until SIGUSR1 (default) or ramp up again
        --config FILE        read run options from a JSON file first: keys are these long
                             options without dashes, {"preset": "hearing", "web": "0.0.0.0:8080",
                             "start-muted": true}; the command line wins (default:
                             $XDG_CONFIG_HOME/livemic/livemic.json when it exists; docs/rig.md)
        --no-config          read no configuration file
    -h, --help               this help
        --version            print the version

  Ports: in_1 (in_2), out_1, out_2. Output starts quiet and ramps up over 1 s; SIGINT or
  SIGTERM ramps it down and exits cleanly; SIGHUP reloads the preset file, crossfading to it
  (a broken file is reported and the running chain kept). When the JACK server goes away,
  LiveMic waits for it, reconnects under the same name and restores its connections.

  EXAMPLES
    livemic                                   voice preset, system capture → system playback
    livemic -p karaoke -c echo.mix=0.4        karaoke with more echo
    livemic -p hearing -c output.volume=0.15  hearing assistance, quieter
    livemic -s studio -n vox -i 2 --connect-in system:capture_1,system:capture_2
    livemic --no-connect                      then patch it in qjackctl
    livemic render -p podcast take1.wav take1-processed.flac
    livemic -p stream --loudness-target -16 --monitor   stream at -16 LUFS, with a monitor
    livemic --plugin http://lv2plug.in/plugins/eg-amp -c eg-amp.gain=-6
    livemic --record ~/takes --record-format flac      save the whole run
    livemic --stream-out - | ffmpeg -f f32le -ar 48000 -ac 2 -i - live.m4a
  """

let renderHelp = """
  USAGE: livemic render [-p PRESET] [-c KEY=VALUE]... [--plugin URI]... [--frames N]
                        [--loudness-target LUFS] [--music FILE] [--no-plugins] IN OUT

  Runs the live chain's very code over IN (any format libsndfile reads: WAV, FLAC, OGG, AIFF…)
  at IN's sample rate, in blocks of N frames (default 256), and writes OUT in the format its
  extension names (.wav/.aiff/.caf: 32-bit float, .flac: 24-bit, .ogg: Vorbis). The output is
  always stereo. There is no start ramp offline. --no-plugins: no stage's mode runs an LV2
  alternative (the built-in units run). --music FILE: a music bed (same rate as IN) mixed in
  after the chain as live with --music (the music stage's volume and ducking), and the
  reference of an aec stage (aec.reference 0).

  EXAMPLES
    livemic render -p voice -c eq.treble_db=3 in.wav out.wav
    livemic render -p podcast take1.wav take1-processed.flac
    livemic render -p podcast --loudness-target -16 take1.wav take1-16lufs.wav
    livemic render -p ~/my-preset.json --frames 64 in.flac out.ogg
    livemic render --plugin http://lv2plug.in/plugins/eg-amp -c eg-amp.gain=-6 in.wav out.wav
  """

let plotHelp = """
  USAGE: livemic plot [-o FILE.svg|FILE.png|-] [-c KEY=VALUE]... [--plugin URI]... PRESET

  Draws the magnitude response (dB, 20 Hz–20 kHz on a log axis) of the preset's static
  filters: the high-pass, the EQ and every LV2 plugin, measured by running a unit impulse
  (65536 frames at 48 kHz) through them offline. Dynamics and time-based stages (gate,
  compressor, limiter, denoise, echo, reverb, feedback, …), bypassed stages and the volumes
  are left out. The thick curve is the total, the dashed ones each stage. PRESET is a name or
  a path. Default output: PRESET.svg in the current directory; '-o -' writes the SVG to
  standard output; .png needs rsvg-convert (Debian package librsvg2-bin).

  EXAMPLES
    livemic plot voice                         writes voice.svg
    livemic plot karaoke -o karaoke.png
    livemic plot voice -c eq.bass_db=6 -o - > voice-bass.svg
    livemic plot flat --plugin http://gareus.org/oss/lv2/fil4#stereo -o fil4.svg
  """

let presetsHelp = """
  USAGE: livemic presets            list presets with their descriptions
         livemic presets show NAME  print a preset's chain and every value it runs with

  Presets are searched in $XDG_CONFIG_HOME/livemic/presets (~/.config/livemic/presets), then
  livemic/presets in each of $XDG_DATA_DIRS (/usr/local/share:/usr/share), then
  $LIVEMIC_PRESETS_DIR, then the shipped presets (PREFIX/share/livemic/presets beside the
  binary). -p also takes a path.

  EXAMPLES
    livemic presets
    livemic presets show karaoke
    livemic ctl preset save ~/.config/livemic/presets/mine.json   then: livemic -p mine
  """

let paramsHelp = """
  USAGE: livemic params [--markdown]

  Lists every built-in parameter key (STAGE.PARAMETER) with its range, default and unit.
  --markdown prints docs/parameters.md.

  EXAMPLES
    livemic params
    livemic params | grep ' eq\\.'
    livemic params --markdown > docs/parameters.md
  """

let benchHelp = """
  USAGE: livemic bench [--seconds N] [--no-sox] [--blocks]

  Processes N seconds (default 60) of stereo 48 kHz audio through each unit and the whole
  voice chain and prints ns per sample and the real-time factor; then the time of one block
  (mean, p99 and worst, µs) of each stage and the whole chain at 16, 32, 64 and 256 frames, on a
  SCHED_FIFO thread where the system grants one (each block's least time over three identical
  runs: what the machine adds to a run is not the chain's), and the whole chain's worst block
  over its p99 (goal at 16 and 32 frames: at most 2×); then what a decaying tail
  costs against silence in code with no denormal guard, with and without the flush-to-zero
  mode of LiveMic's process thread; then times sox running the equivalent chain (highpass,
  bass, treble, compand, reverb, gain) on the same audio, in the same run, and prints the
  ratio.

  EXAMPLES
    livemic bench
    livemic bench --seconds 10 --no-sox
    livemic bench --blocks            (the per-block table only)
  """

let pluginsHelp = """
  USAGE: livemic plugins [--json] [FILTER]
         livemic plugins show [--json] URI
         livemic plugins check [FILTER] [--json] [-s SERVER] [--guard LIBRARY] [--timeout SECONDS]
                               [--jobs N]

  Lists the installed LV2 plugins (on LV2_PATH) whose URI, name or class contains FILTER: URI,
  name, class, audio inputs→outputs, and, when LiveMic cannot host one, the reason. 'show'
  prints a plugin's ports (symbol, name, range, default, unit, properties), presets, required
  and optional features and declared latency.

  'check' hosts every matching plugin as LiveMic does, each in a child process of its own, and
  renders one second of noise through it inside a JACK process callback: one line per plugin
  (hosted, no sound, non-finite, refused: REASON, failed: REASON, crashed: signal N, timed out)
  and a summary. A plugin LiveMic refuses by its description is not started. It starts a
  private dummy jackd (48 kHz, 256 frames) unless --server names a running one.
    -s, --server NAME        check on this running JACK server instead of a private one
        --guard LIBRARY      preload this real-time guard (Tests/Support/rtguard) into each
                             child and add its counts: clean, or unsafe: malloc=N free=N …
                             (scripts/plugin-inventory builds it and runs the whole inventory)
        --timeout SECONDS    kill a child that takes longer (default 10)
        --jobs N             children at once (default 1)
        --json               an array of objects; the summary goes to standard error

  EXAMPLES
    livemic plugins
    livemic plugins reverb
    livemic plugins --json | jq '.[].uri'
    livemic plugins show http://lv2plug.in/plugins/eg-amp
    livemic plugins check x42
    livemic plugins check --json --guard .build/rtguard/librtguard.so > inventory.json
  """

let doctorHelp = """
  USAGE: livemic doctor [-s SERVER] [--json]

  Checks, one line each, what low latency on this machine depends on outside LiveMic, with the
  fix in one sentence where something is wrong (FIX), and information that is never an error
  (info): real-time scheduling at JACK's client priority (tried on a probe thread), the rtprio
  and memlock limits, the audio group; whether a JACK server runs (jackd2 or PipeWire's
  libjack), in real time, its rate, period and round-trip latency; the CPU governor, threaded
  interrupts and the kernel's preemption; that every preset parses and its LV2 plugins are
  installed; the control socket folder's permissions; the web token and each running web remote
  (bound where, whether it answers). Exit status 0 when nothing is wrong, 1
  otherwise. --json prints {"ok": BOOL, "findings": [{"check", "status", "detail", "fix"}]}.

  EXAMPLES
    livemic doctor
    livemic doctor -s myserver --json | jq '.findings[] | select(.status == "problem")'
  """

let ctlHelp = """
  USAGE: livemic ctl [-n NAME] [--json] [--timeout SECONDS] COMMAND

  Talks to the running LiveMic whose JACK client is NAME (default livemic) through its control
  socket ($XDG_RUNTIME_DIR/livemic/NAME.sock). Commands:
    status                     server, rate, period, latency, xruns, DSP load, preset, chain
    get [KEY]                  one parameter's value, or all of them
    set KEY VALUE              set a parameter (smoothed); e.g. set eq.bass_db 3
    preset load NAME|PATH      build the preset's chain and crossfade to it
    preset save NAME|PATH      write the running chain, values and plugin state as a preset
    mode                       each denoise, leveler, aec and highpass stage's mode, what runs
                               and why
    mode STAGE builtin|plugin|automatic|webrtc
                               switch one stage's implementation (built off the audio thread,
                               crossfaded in; the rest of the chain keeps its values) until
                               the preset is loaded again
    mute [--mode ramp|input|suspend]
                               ramp: fade to silence in 50 ms (processing and connections
                               stay); input: mute the microphone before the chain (the music
                               bed, the monitor mix and the effect tails go on); suspend:
                               fade out and deactivate the client (resumes with the quiet ramp)
    unmute                     ramp back up over 1 s
    route                      the requested route, the effective target, the actual
                               connections and the candidates available now
    route override PORT[,PORT]
                               send the outputs there until 'route clear' (or it vanishes)
    route clear                back to the default route
    route default PATTERN...   a new persistent default route (most preferred first)
    connections                every connection of LiveMic's ports
    meters [--once]            input and output peak/RMS (dBFS) and each compressor's and
                               limiter's gain reduction and the loudness (EBU R128), about
                               20 times a second (follows until interrupted; --once: one)
    events                     follow the event stream (xruns, route changes, presets, ...)
    learn KEY                  map the next MIDI controller that moves (on midi_in) to KEY
    record start [--tap input|output] [--format wav|flac|ogg|mp3] [PATH]
                               record a tap (default output) into PATH (a file, or a folder
                               for CLIENT-TAP-TIME.EXT; default: the --record folder or .)
    record stop [ID]           stop one recording (or all) and finalize the file
    record                     the recordings and the stream, with frames and drops
    stream start PATH|- [--format f32|wav]
                               stream the output to a file, a FIFO (reopened whenever a
                               reader returns) or LiveMic's standard output
    stream stop                stop the stream; its frames written and dropped
    stream                     the stream, with frames written, dropped and delivered
    loudness                   momentary, short-term, integrated loudness (LUFS), range and
                               true peak (dBTP) of the output
    loudness reset             start integrated loudness, range and true peak over
  --json prints the raw response (or stream) lines. --timeout: give up when LiveMic does not
  answer within SECONDS (default 2; 12 for learn), exit status 1. See docs/control.md.

  EXAMPLES
    livemic ctl set output.volume 0.5
    livemic ctl -n stage preset load karaoke
    livemic ctl mute --mode input
    livemic ctl mode denoise webrtc
    livemic ctl --json status | jq .xruns
    livemic ctl events
    livemic ctl record start --tap input --format flac ~/takes/
    livemic ctl record stop 1
    livemic ctl loudness reset
  """

let monitorHelp = """
  USAGE: livemic monitor [-n NAME]

  A terminal view of the running LiveMic whose JACK client is NAME (default livemic): level
  bars for the input and output (RMS filled, peak marked, -60 to 0 dBFS), the gain reduction
  of each compressor and limiter, the loudness (EBU R128: momentary, short-term,
  integrated, range, true peak), xruns, DSP load, the preset, the output volume and the
  route, the recordings and the stream (length, dropped frames), and the latest events. Keys: m mute, u unmute, + / - volume by 1 dB, q quit.

  EXAMPLES
    livemic monitor
    livemic monitor -n stage
  """

func help(for topic: String?) -> String {
  switch topic {
  case "ctl": return ctlHelp
  case "monitor": return monitorHelp
  case "plugins": return pluginsHelp
  case "render": return renderHelp
  case "plot": return plotHelp
  case "presets": return presetsHelp
  case "params": return paramsHelp
  case "bench": return benchHelp
  case "doctor": return doctorHelp
  default: return mainHelp
  }
}
