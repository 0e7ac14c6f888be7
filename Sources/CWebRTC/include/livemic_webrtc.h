#ifndef LIVEMIC_WEBRTC_H
#define LIVEMIC_WEBRTC_H

/* WebRTC's audio processing (libwebrtc-audio-processing 0.3: the library PulseAudio's and
   PipeWire's echo cancellers use) for one mono stream, behind a C interface.

   WebRTC's ProcessStream takes a mutex and may allocate, so the audio thread never calls it.
   It runs on a helper thread of its own: the audio thread pushes each block's near-end input
   (and the far-end reference) into preallocated rings and posts a semaphore; the helper
   processes whole 10 ms frames; the audio thread pulls the output a fixed latency later. A
   frame the helper has not finished when its samples are due is played dry (the input,
   delayed the same) and counted in `late_frames`. Push, pull and the counters only touch
   atomics and preallocated memory, and post a semaphore: they are real-time safe.

   Thread: create/destroy/configure off the audio thread; push/pull on one audio thread. */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct livemic_webrtc livemic_webrtc;

/* What the processor runs. */
enum {
  LIVEMIC_WEBRTC_NOISE = 1, /* noise suppression */
  LIVEMIC_WEBRTC_ECHO = 2,  /* echo cancellation (extended filter, delay-agnostic) */
  LIVEMIC_WEBRTC_GAIN = 4   /* adaptive digital gain control with its limiter */
};

/* A processor for `features` at `sample_rate` (WebRTC resamples what is not 8, 16, 32 or
   48 kHz), whose output lags the input by `latency_frames` (at least one 10 ms frame; the rest
   is the helper's time). `priority`: the helper's SCHED_FIFO priority, 0 for none (it falls
   back to normal scheduling when refused). `offline` (nothing runs in real time: rendering,
   tests): no helper thread, the caller's run and push process each whole frame themselves.
   NULL when WebRTC refuses the format. */
livemic_webrtc *livemic_webrtc_create(int sample_rate, int features, int latency_frames, int priority, int offline);
void livemic_webrtc_destroy(livemic_webrtc *p);

/* The frame (10 ms) in samples, and the whole latency: the one it was created with plus WebRTC's
   own delay inside the processed signal (about 1 ms, 7 ms with noise suppression, 8 ms with
   echo cancellation, at 48 kHz). */
int livemic_webrtc_frame_frames(const livemic_webrtc *p);
int livemic_webrtc_latency_frames(const livemic_webrtc *p);

/* Settings, taken by the helper before its next frame (any thread): noise suppression level
   0–3 (low, moderate, high, very high); echo suppression 0–2 (low, moderate, high); gain
   control's target level (dBFS below full scale, 0–31) and compression gain (dB, 0–90). */
void livemic_webrtc_set_noise_level(livemic_webrtc *p, int level);
void livemic_webrtc_set_echo_level(livemic_webrtc *p, int level);
void livemic_webrtc_set_gain(livemic_webrtc *p, int target_level_dbfs, int compression_gain_db);

/* Audio thread: hands `frames` near-end samples, then writes `frames` output samples to `out`
   (may be `near`). */
void livemic_webrtc_run(livemic_webrtc *p, const float *near, float *out, int frames);

/* Audio thread: hands the next `frames` samples of the far-end reference (echo cancellation).
   The reference may lag the near end by up to a frame (it is handed over after each block); a
   frame is processed once both have reached its end. */
void livemic_webrtc_push_reference(livemic_webrtc *p, const float *reference, int frames);

/* Any thread: the 10 ms frames played dry because the helper was late (0 offline). */
uint64_t livemic_webrtc_late_frames(const livemic_webrtc *p);

#ifdef __cplusplus
}
#endif

#endif
