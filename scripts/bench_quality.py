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
from scipy.signal import resample_poly

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


def shaped_noise(n, kind, speech_signal, seed):
    rng = np.random.default_rng(seed)
    white = rng.standard_normal(n)
    if kind == "white":
        return white
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
    for k, kind in enumerate(["white", "pink", "speech-shaped"]):
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
                gains[name].append(s["SI-SDR"] - base["SI-SDR"])
                cells = " | ".join(f"{s.get(m, float('nan')):.2f}" for m in metrics)
                print(f"| {kind} | {snr} | {name} | {cells} |")
    print()
    print("| implementation | mean SI-SDR gain dB | worst SI-SDR gain dB |")
    print("|---|---:|---:|")
    for name, g in gains.items():
        print(f"| {name} | {np.mean(g):.2f} | {np.min(g):.2f} |")
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


if __name__ == "__main__":
    main()
