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


def preset_file(name, chain):
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"name": name, "volume": 1, "chain": chain}, f)
    return path


def main():
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


if __name__ == "__main__":
    main()
