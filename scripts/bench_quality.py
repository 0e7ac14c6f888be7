"""Voice quality benchmark (scripts/bench-quality): each denoise implementation and the shipped
presets that denoise, run through `livemic render`, measured with STOI, SI-SDR and (when the
pesq package is there) PESQ-WB beside the unprocessed input; the sung note's level drop; the
noise floor's reduction. Usage: bench_quality.py LIVEMIC_BINARY"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from scipy.io import wavfile
from scipy.signal import butter, correlate, lfilter, resample_poly

try:
    from pystoi import stoi
except ImportError:  # pragma: no cover
    stoi = None
try:
    from pesq import pesq
except ImportError:
    pesq = None

RATE = 48000
# LiveMic's WAV files carry chunks scipy does not read (it skips them, saying so each time).
warnings.filterwarnings("ignore", category=wavfile.WavFileWarning)
LIVEMIC = sys.argv[1] if len(sys.argv) > 1 else ".build/release/livemic"
WORK = tempfile.mkdtemp(prefix="livemic-quality-")
SENTENCES = [
    "The quick brown fox jumps over the lazy dog, and then it sleeps in the sun.",
    "Please keep your voice steady and clear while the music plays behind you.",
    "We will meet again at seven o'clock, near the old bridge by the river.",
]


def speech():
    """espeak-ng's sentences, 48 kHz, each followed by 300 ms of silence."""
    parts = []
    for i, text in enumerate(SENTENCES):
        path = os.path.join(WORK, f"s{i}.wav")
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", path, text], check=True)
        rate, x = wavfile.read(path)
        x = x.astype(np.float64) / 32768.0
        x = resample_poly(x, RATE, rate)
        parts += [x, np.zeros(int(0.3 * RATE))]
    y = np.concatenate(parts)
    return 0.1 * y / np.sqrt(np.mean(y**2))  # -20 dBFS RMS


BABBLE = [
    ("en-gb+f3", "Our train leaves from the second platform a little after half past nine."),
    ("en-us+m3", "Could you bring the small blue box from the kitchen table, please?"),
]


def babble(n):
    """Two other talkers (other espeak-ng voices and sentences), the second starting 0.4 s later."""
    y = np.zeros(n)
    for i, (voice, text) in enumerate(BABBLE):
        path = os.path.join(WORK, f"b{i}.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-w", path, text], check=True)
        rate, x = wavfile.read(path)
        x = resample_poly(x.astype(np.float64) / 32768.0, RATE, rate)
        start = int(0.4 * RATE) * i
        while start < n:  # repeated to the end
            m = min(len(x), n - start)
            y[start:start + m] += x[:m]
            start += len(x) + int(0.2 * RATE)
    return y


# Intermittent noise: (the steady noise, seconds on, period in seconds).
BURSTS = {"bursts": ("pink", 0.25, 0.75), "short bursts": ("white", 0.1, 0.4), "long bursts": ("pink", 1.0, 2.0)}


def shaped_noise(n, kind, speech_signal, seed):
    rng = np.random.default_rng(seed)
    white = rng.standard_normal(n)
    if kind == "white":
        return white
    if kind == "babble":
        return babble(n)
    if kind in BURSTS:  # noise switched on and off, 5 ms ramps
        base, on_seconds, period_seconds = BURSTS[kind]
        steady = shaped_noise(n, base, speech_signal, seed)
        phase = np.arange(n) % int(period_seconds * RATE)
        on = int(on_seconds * RATE)
        ramp = np.clip(np.minimum(phase, on - phase) / (0.005 * RATE), 0, 1)
        return steady * np.where(phase < on, ramp, 0)
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    if kind == "pink":
        shape = 1 / np.sqrt(np.maximum(freqs, 20))
    else:  # speech-shaped: the long-term spectrum of the speech itself
        reference = np.abs(np.fft.rfft(speech_signal, n))
        kernel = np.ones(64) / 64
        shape = np.convolve(reference, kernel, mode="same")
    return np.fft.irfft(spectrum * shape, n)


def rms(x):
    return np.sqrt(np.mean(np.square(x)) + 1e-20)


def write(path, x):
    wavfile.write(path, RATE, np.stack([x, x], axis=1).astype(np.float32))


def render(preset_path, x):
    """x through the preset (a path or a name) by `livemic render`; the left channel, aligned."""
    src = os.path.join(WORK, "in.wav")
    dst = os.path.join(WORK, "out.wav")
    write(src, x)
    subprocess.run([LIVEMIC, "render", "-p", preset_path, "-c", "output.volume=1", src, dst], check=True,
                   stdout=subprocess.DEVNULL)
    _, y = wavfile.read(dst)
    y = y[:, 0].astype(np.float64)
    return align(x, y)


def align(x, y, max_lag=4096):
    """y moved back by the lag (0..max_lag) that correlates best with x."""
    n = min(len(x), len(y), 10 * RATE)
    corr = [np.dot(x[: n - max_lag], y[lag: lag + n - max_lag]) for lag in range(0, max_lag, 8)]
    coarse = int(np.argmax(np.abs(corr))) * 8
    best = max(range(max(coarse - 8, 0), coarse + 9), key=lambda lag: abs(np.dot(x[: n - max_lag], y[lag: lag + n - max_lag])))
    out = y[best:]
    return np.pad(out, (0, max(len(x) - len(out), 0)))[: len(x)]


def si_sdr(estimate, reference):
    reference = reference - np.mean(reference)
    estimate = estimate - np.mean(estimate)
    alpha = np.dot(estimate, reference) / (np.dot(reference, reference) + 1e-20)
    target = alpha * reference
    return 10 * np.log10(np.sum(target**2) / (np.sum((estimate - target) ** 2) + 1e-20))


def scores(estimate, clean):
    row = {"SI-SDR": si_sdr(estimate, clean)}
    if stoi:
        row["STOI"] = stoi(clean, estimate, RATE, extended=False)
    if pesq:
        try:
            row["PESQ-WB"] = pesq(16000, resample_poly(clean, 1, 3), resample_poly(estimate, 1, 3), "wb")
        except Exception:  # noqa: BLE001 - a failed PESQ is left out, not fatal
            pass
    return row


def sung_note(seconds=4.0):
    t = np.arange(int(seconds * RATE)) / RATE
    f = 262 * 2 ** (30 / 1200 * np.sin(2 * np.pi * 5.5 * t))
    phase = 2 * np.pi * np.cumsum(f) / RATE
    x = sum(np.sin(k * phase) / k for k in range(1, 8)) * np.minimum(t / 0.01, 1)
    return 0.1 * x / rms(x)


def note_drop(y):
    onset, end = y[int(0.1 * RATE): int(0.6 * RATE)], y[-int(1.5 * RATE):]
    return 20 * np.log10(rms(onset) / rms(end))


def render_with_music(preset_path, x, music, sets=()):
    """x through the preset with `music` as the music bed (`render --music`); the left channel."""
    src, mus, dst = (os.path.join(WORK, n) for n in ("in.wav", "music.wav", "out.wav"))
    write(src, x)
    write(mus, music)
    args = [LIVEMIC, "render", "-p", preset_path, "-c", "output.volume=1", "-c", "music.volume_db=0"]
    for s in sets:
        args += ["-c", s]
    subprocess.run(args + ["--music", mus, src, dst], check=True, stdout=subprocess.DEVNULL)
    _, y = wavfile.read(dst)
    return y[:, 0].astype(np.float64)


def music_bed(n):
    """Chords of harmonic tones changing every 0.5 s, a kick, a snare and a hi-hat; -20 dBFS RMS."""
    t = np.arange(n) / RATE
    roots = np.array([110, 98, 87.3, 130.8, 73.4, 82.4, 123.5, 65.4])
    root = roots[(np.arange(n) // (RATE // 2)) % len(roots)]
    x = sum(level * np.sin(2 * np.pi * root * ratio * t)
            for ratio, level in [(0.5, 0.8), (1, 1), (1.25, 0.6), (1.5, 0.6), (2, 0.4), (3, 0.25), (4, 0.15), (8, 0.08)])
    beat = np.arange(n) % (RATE // 2)
    x = x + np.where(beat < 4800, 1.2 * np.exp(-beat / 1200) * np.sin(2 * np.pi * 55 * beat / RATE), 0)
    off = (np.arange(n) + RATE // 4) % (RATE // 2)
    hat = np.arange(n) % (RATE // 8)
    envelope = 1 + np.where(off < 4800, 8 * np.exp(-off / 900), 0) + np.where(hat < 1200, 3 * np.exp(-hat / 200), 0)
    x = x + 0.02 * np.random.default_rng(11).uniform(-1, 1, n) * envelope
    return 0.1 * x / rms(x)


def room(x, delay):
    """x a JACK round trip (2 x 256 frames) plus `delay` later, through the room of the tests
    (Tests/DSPTests/EchoRoomTests.swift, `response`): early reflections, then sparse taps decaying
    60 dB over 120 ms."""
    d = 512 + delay
    taps = [(d, 1.0), (d + 173, -0.5), (d + 391, 0.35), (d + 647, -0.25)]
    seed, k, mask = 0x5DEECE66, d + 700, (1 << 64) - 1
    while k < d + 5760:
        seed = (seed * 6364136223846793005 + 1442695040888963407) & mask
        sign = 1.0 if (seed >> 33) & 1 == 0 else -1.0
        taps.append((k, 0.3 * sign * 10 ** (-3 * (k - d) / 5760)))
        k += 17 + (seed >> 40) % 23
    h = np.zeros(d + 5760)
    for k, g in taps:
        h[k] += g
    return np.convolve(x, h)[: len(x)]


def echo_rows(clean_speech):
    """The music bed's echo room: ERLE, double talk and the voice's bass, per aec engine."""
    n = 10 * RATE
    music = music_bed(n)
    music[7 * RATE:] = 0
    voice = np.zeros(n)
    at = 4 * RATE
    while at < n:
        m = min(len(clean_speech), n - at)
        voice[at: at + m] = clean_speech[:m]
        at += len(clean_speech) + RATE // 4
    silence = np.zeros(n)
    bypassed = preset_file("q-aec-off", [{"unit": "aec", "mode": "builtin", "bypass": True}])
    contribution = render_with_music(bypassed, silence, music)
    engines = {"built-in (speexdsp)": "builtin", "WebRTC": "webrtc"}
    print()
    print("Echo: the music bed on the speakers leaking into the microphone, cancelled with the music as the reference "
          "(`aec.reference` 0; `render --music`), music 10 dB louder than the voice at the microphone")
    print()
    print("| room delay | implementation | ERLE over 2–4 s dB | double talk against no echo dB | voice below 300 Hz dB |")
    print("|---:|---|---:|---:|---:|")
    b, a = butter(4, 300, fs=RATE)
    for delay_ms in [5, 50]:
        echo = room(music, delay_ms * RATE // 1000)
        echo *= rms(voice[4 * RATE:]) * 10 ** 0.5 / rms(echo[: 7 * RATE])
        for name, mode in engines.items():
            path = preset_file(f"q-aec-{mode}", [{"unit": "aec", "mode": mode}])
            quiet = render_with_music(path, voice, music) - contribution
            c = correlate(quiet[4 * RATE: 7 * RATE + 4096], voice[4 * RATE: 7 * RATE], mode="valid", method="fft")
            lag = int(np.argmax(np.abs(c)))
            full = render_with_music(path, voice + echo, music) - contribution
            out = lambda y, lo, hi: y[lo + lag: hi + lag]
            erle = 10 * np.log10(np.sum(echo[2 * RATE: 4 * RATE] ** 2) / np.sum(out(full, 2 * RATE, 4 * RATE) ** 2))
            talk = 10 * np.log10(np.sum(out(full, 5 * RATE, 7 * RATE) ** 2) / np.sum(out(quiet, 5 * RATE, 7 * RATE) ** 2))
            lo, hi = 7 * RATE + RATE // 2, n - 4096
            bass = 10 * np.log10(np.sum(lfilter(b, a, out(full, lo, hi)) ** 2) / np.sum(lfilter(b, a, voice[lo:hi]) ** 2))
            print(f"| {delay_ms} ms | {name} | {erle:.1f} | {talk:+.1f} | {bass:+.2f} |")


# The wider set of issue 36: voices the benchmark was not tuned on, five noises, three SNRs,
# RNNoise beside LiveMic's implementations.
VOICES = [
    ("espeak-ng en-us (male)", "en-us"),
    ("espeak-ng en-us+f3 (female)", "en-us+f3"),
    ("espeak-ng en-gb+m3", "en-gb+m3"),
    ("espeak-ng en-us+klatt4", "en-us+klatt4"),
    ("recorded (alsa-utils' /usr/share/sounds/alsa)", None),
]
WIDE_SENTENCES = [
    "A stitch in time saves nine, my grandmother used to say at the market.",
    "Turn the volume down a little before the next song begins, thank you.",
]
RECORDED = "/usr/share/sounds/alsa"


def voice_speech(voice):
    """Two sentences in `voice` (or the recorded channel names), 48 kHz, -20 dBFS RMS."""
    parts = []
    if voice is None:
        names = ["Front_Center", "Front_Left", "Front_Right", "Rear_Center", "Rear_Left", "Rear_Right",
                 "Side_Left", "Side_Right"]
        for name in names:
            rate, x = wavfile.read(os.path.join(RECORDED, name + ".wav"))
            x = x.astype(np.float64) / 32768.0
            if x.ndim > 1:
                x = x.mean(axis=1)
            parts += [resample_poly(x, RATE, rate), np.zeros(int(0.2 * RATE))]
    else:
        for i, text in enumerate(WIDE_SENTENCES):
            path = os.path.join(WORK, f"v{i}.wav")
            subprocess.run(["espeak-ng", "-v", voice, "-w", path, text], check=True)
            rate, x = wavfile.read(path)
            parts += [resample_poly(x.astype(np.float64) / 32768.0, RATE, rate), np.zeros(int(0.3 * RATE))]
    y = np.concatenate(parts)
    return 0.1 * y / rms(y)


def fan_noise(n, seed):
    """A fan: broadband noise falling 12 dB an octave above 300 Hz, its blade rate (24 Hz)
    modulating it by 20 %, and mains hum (50 Hz and its harmonics to 400 Hz)."""
    rng = np.random.default_rng(seed)
    b, a = butter(2, 300 / (RATE / 2))
    air = lfilter(b, a, rng.standard_normal(n)) + 0.05 * rng.standard_normal(n)
    t = np.arange(n) / RATE
    air *= 1 + 0.2 * np.sin(2 * np.pi * 24 * t)
    hum = sum(np.sin(2 * np.pi * 50 * k * t + k) / k for k in range(1, 9))
    return air / rms(air) + 0.5 * hum / rms(hum)


def clatter_noise(n, seed):
    """Dishes and a keyboard: about six events a second, each a 3 ms click or a ringing
    2.5–6 kHz clink decaying over 40 ms, at random levels."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    position = 0
    while True:
        position += int(rng.exponential(RATE / 6))
        if position >= n:
            break
        if rng.random() < 0.5:  # a key
            m = int(0.003 * RATE)
            event = rng.standard_normal(m) * np.exp(-np.arange(m) / (0.001 * RATE))
        else:  # a clink
            m = int(0.12 * RATE)
            t = np.arange(m) / RATE
            event = sum(np.sin(2 * np.pi * rng.uniform(2500, 6000) * t) for _ in range(3))
            event *= np.exp(-t / 0.04)
        m = min(len(event), n - position)
        y[position:position + m] += event[:m] * 10 ** rng.uniform(-1, 0)
    return y


def wide_noise(n, kind, seed):
    if kind == "fan with hum":
        return fan_noise(n, seed)
    if kind == "clatter":
        return clatter_noise(n, seed)
    return shaped_noise(n, kind, None, seed)


def rnnoise_denoise(x):
    """x through RNNoise (pyrnnoise's librnnoise, 480-sample frames at 48 kHz), aligned; None
    when pyrnnoise is not there."""
    import ctypes
    import importlib.util
    spec = importlib.util.find_spec("pyrnnoise")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = ctypes.CDLL(os.path.join(list(spec.submodule_search_locations)[0], "librnnoise.so"))
    lib.rnnoise_create.restype = ctypes.c_void_p
    lib.rnnoise_create.argtypes = [ctypes.c_void_p]
    lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
    lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float),
                                          ctypes.POINTER(ctypes.c_float)]
    lib.rnnoise_process_frame.restype = ctypes.c_float
    state = lib.rnnoise_create(None)
    frame = 480
    padded = np.pad(x, (0, (-len(x)) % frame)) * 32768.0
    out = np.zeros_like(padded, dtype=np.float32)
    buffer_in = (ctypes.c_float * frame)()
    buffer_out = (ctypes.c_float * frame)()
    for start in range(0, len(padded), frame):
        buffer_in[:] = padded[start:start + frame].astype(np.float32).tolist()
        lib.rnnoise_process_frame(state, buffer_out, buffer_in)
        out[start:start + frame] = np.frombuffer(buffer_out, dtype=np.float32)
    lib.rnnoise_destroy(state)
    return align(x, out[: len(x)].astype(np.float64) / 32768.0)


def wide_set():
    """The table of issue 36: every voice in every noise at 0, 5 and 10 dB SNR; the mean SI-SDR
    gain of each implementation and its worst condition."""
    voice_denoise = next(u for u in json.load(open("presets/voice.json"))["chain"] if u["unit"] == "denoise")
    implementations = {
        "voice's denoise": preset_file("w-voice", [voice_denoise]),
        "WebRTC": preset_file("w-webrtc", [{"unit": "denoise", "mode": "webrtc"}]),
        "RNNoise (peer)": None,
    }
    noises = ["white", "pink", "babble", "fan with hum", "clatter"]
    print()
    print("Issue 36's wider set: SI-SDR gain dB (output − input) per voice, noise and SNR")
    print()
    print("| voice | noise | " + " | ".join(f"{name}, {snr} dB" for name in implementations for snr in [0, 5, 10]) + " |")
    print("|---|---|" + "---:|" * (3 * len(implementations)))
    gains = {name: [] for name in implementations}
    for v, (label, voice) in enumerate(VOICES):
        clean_speech = voice_speech(voice)
        lead = RATE // 2
        clean = np.concatenate([np.zeros(lead), clean_speech])
        window = slice(lead, len(clean))
        for k, kind in enumerate(noises):
            cells = {}
            for snr in [0, 5, 10]:
                noise = wide_noise(len(clean), kind, seed=100 * v + 10 * k + snr)
                noise *= rms(clean_speech) / rms(noise) / 10 ** (snr / 20)
                noisy = clean + noise
                base = si_sdr(noisy[window], clean[window])
                for name, path in implementations.items():
                    y = rnnoise_denoise(noisy) if path is None else render(path, noisy)
                    if y is None:
                        continue
                    change = si_sdr(y[window], clean[window]) - base
                    gains[name].append((change, f"{label}, {kind}, {snr} dB"))
                    cells[(name, snr)] = f"{change:+.1f}"
            row = " | ".join(cells.get((name, snr), "–") for name in implementations for snr in [0, 5, 10])
            print(f"| {label} | {kind} | {row} |", flush=True)
    print()
    print("| implementation | conditions | mean SI-SDR gain dB (goal ≥ 6) | worst | conditions below the input |")
    print("|---|---:|---:|---|---:|")
    for name, g in gains.items():
        if not g:
            print(f"| {name} | 0 | – | – | – |")
            continue
        worst, where = min(g)
        below = sum(1 for change, _ in g if change < 0)
        print(f"| {name} | {len(g)} | {np.mean([c for c, _ in g]):.2f} | {worst:+.2f} ({where}) | {below} |")


def preset_file(name, chain):
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"name": name, "volume": 1, "chain": chain}, f)
    return path


def main():
    if os.environ.get("BENCH_QUALITY_SET") == "wide":  # the wider set alone
        wide_set()
        return
    clean_speech = speech()
    lead = RATE  # one second of noise alone first
    clean = np.concatenate([np.zeros(lead), clean_speech])
    implementations = {
        "built-in (speexdsp, held-sound guard)": preset_file("q-builtin", [{"unit": "denoise"}]),
        "built-in, guard off": preset_file("q-noguard", [{"unit": "denoise", "params": {"keep_held": 0}}]),
        "WebRTC": preset_file("q-webrtc", [{"unit": "denoise", "mode": "webrtc"}]),
    }
    print(f"Voice quality, {datetime.date.today().isoformat()}: `scripts/bench-quality` "
          f"(espeak-ng speech, 48 kHz; `livemic render`; metrics from pystoi{', pesq' if pesq else ''} and numpy)\n")
    # Speech in noise.
    metrics = ["SI-SDR", "STOI"] + (["PESQ-WB"] if pesq else [])
    print("| noise | SNR dB | implementation | " + " | ".join(metrics) + " |")
    print("|---|---:|---|" + "---:|" * len(metrics))
    gains = {name: [] for name in implementations}
    unsteady = {name: [] for name in implementations}
    for k, kind in enumerate(["white", "pink", "speech-shaped", "babble", "bursts", "short bursts", "long bursts"]):
        for snr in [0, 5, 10]:
            noise = shaped_noise(len(clean), kind, clean_speech, seed=10 * k + snr)
            noise *= rms(clean_speech) / rms(noise) / 10 ** (snr / 20)
            noisy = clean + noise
            window = slice(lead, len(clean))
            base = scores(noisy[window], clean[window])
            cells = " | ".join(f"{base.get(m, float('nan')):.2f}" for m in metrics)
            print(f"| {kind} | {snr} | unprocessed | {cells} |")
            for name, path in implementations.items():
                y = render(path, noisy)
                s = scores(y[window], clean[window])
                change = s["SI-SDR"] - base["SI-SDR"]
                if k < 3:
                    gains[name].append(change)
                else:
                    unsteady[name].append((change, f"{kind}, {snr} dB"))
                cells = " | ".join(f"{s.get(m, float('nan')):.2f}" for m in metrics)
                print(f"| {kind} | {snr} | {name} | {cells} |")
    print()
    # The worst non-stationary case to three decimals: "never made worse" is decided in the third.
    print("| implementation | mean SI-SDR gain dB, stationary noise | worst, stationary | worst, other talkers and bursts |")
    print("|---|---:|---:|---:|")
    for name, g in gains.items():
        worst, where = min(unsteady[name])
        print(f"| {name} | {np.mean(g):.2f} | {np.min(g):.2f} | {worst:+.3f} ({where}) |")
    # Held sounds and the noise floor.
    print()
    print("| through | sung note's drop dB (onset → last 1.5 s) | pink noise at -45 dBFS, reduction over 2–4 s dB |")
    print("|---|---:|---:|")
    note = sung_note()
    pink = shaped_noise(4 * RATE, "pink", clean_speech, seed=3)
    pink *= 10 ** (-45 / 20) / rms(pink)
    rows = dict(implementations)
    rows.update({f"preset {p}": p for p in ["voice", "hearing", "announce"]})
    for name, path in rows.items():
        drop = note_drop(render(path, note))
        y = render(path, pink)
        reduction = 20 * np.log10(rms(pink[2 * RATE:]) / rms(y[2 * RATE:]))
        print(f"| {name} | {drop:.1f} | {reduction:.1f} |")
    echo_rows(clean_speech)
    wide_set()


if __name__ == "__main__":
    main()
