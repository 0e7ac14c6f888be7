// WebRTC's audio processing for one mono stream, run on a helper thread (see livemic_webrtc.h).

#include "livemic_webrtc.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#include <atomic>
#include <cstring>
#include <new>
#include <thread>

#include <webrtc/modules/audio_processing/include/audio_processing.h>

namespace {
// The largest block the audio thread hands over at once (JACK's largest period).
const int kMaxBlockFrames = 8192;
}  // namespace

struct livemic_webrtc {
  webrtc::AudioProcessing *apm = nullptr;
  webrtc::StreamConfig stream;
  int features = 0;
  int frame = 0;
  int latency = 0;
  // WebRTC's own delay inside the processed signal (frames); the dry fallback is delayed the same.
  int internalDelay = 0;
  // The rings hold `capacity` samples by absolute position (position % capacity); a multiple of
  // the frame, so a frame never wraps.
  int capacity = 0;
  float *nearRing = nullptr;
  float *referenceRing = nullptr;
  float *outRing = nullptr;
  // The helper's frame buffers.
  float *work = nullptr;
  float *referenceWork = nullptr;

  // Samples pushed (the audio thread's) and processed (the helper's), by absolute position.
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> referenceWritten{0};
  std::atomic<uint64_t> processedUpTo{0};
  std::atomic<uint64_t> lateFrames{0};
  // The start of the frame last played dry (the audio thread's own): the rest of that frame is
  // played dry too, even when the helper finishes it meanwhile, so no frame switches from the
  // input to the processed signal halfway through (a step in level: a click).
  uint64_t dryFrameStart = UINT64_MAX;

  // Settings: written by any thread, applied by the helper when `settingsVersion` moved.
  std::atomic<int> noiseLevel{2};
  std::atomic<int> echoLevel{1};
  std::atomic<int> gainTarget{3};
  std::atomic<int> gainCompression{9};
  std::atomic<uint64_t> settingsVersion{1};
  uint64_t appliedVersion = 0;

  std::atomic<bool> stopping{false};
  bool offline = false;
  bool semaphoreReady = false;
  sem_t wake;
  std::thread helper;

  void applySettings() {
    uint64_t version = settingsVersion.load(std::memory_order_acquire);
    if (version == appliedVersion) return;
    appliedVersion = version;
    if (features & LIVEMIC_WEBRTC_NOISE) {
      static const webrtc::NoiseSuppression::Level levels[] = {
          webrtc::NoiseSuppression::kLow, webrtc::NoiseSuppression::kModerate, webrtc::NoiseSuppression::kHigh,
          webrtc::NoiseSuppression::kVeryHigh};
      int level = noiseLevel.load(std::memory_order_relaxed);
      apm->noise_suppression()->set_level(levels[level < 0 ? 0 : level > 3 ? 3 : level]);
    }
    if (features & LIVEMIC_WEBRTC_ECHO) {
      static const webrtc::EchoCancellation::SuppressionLevel levels[] = {
          webrtc::EchoCancellation::kLowSuppression, webrtc::EchoCancellation::kModerateSuppression,
          webrtc::EchoCancellation::kHighSuppression};
      int level = echoLevel.load(std::memory_order_relaxed);
      apm->echo_cancellation()->set_suppression_level(levels[level < 0 ? 0 : level > 2 ? 2 : level]);
    }
    if (features & LIVEMIC_WEBRTC_GAIN) {
      apm->gain_control()->set_target_level_dbfs(gainTarget.load(std::memory_order_relaxed));
      apm->gain_control()->set_compression_gain_db(gainCompression.load(std::memory_order_relaxed));
    }
  }

  // Processes every whole frame pushed and not yet processed.
  void processPending() {
    applySettings();
    uint64_t available = written.load(std::memory_order_acquire);
    if (features & LIVEMIC_WEBRTC_ECHO) {
      uint64_t reference = referenceWritten.load(std::memory_order_acquire);
      if (reference < available) available = reference;
    }
    uint64_t position = processedUpTo.load(std::memory_order_relaxed);
    // Fallen behind by more than the rings hold: start again at the newest whole frame (the
    // frames skipped have been played dry already).
    if (available - position > (uint64_t)(capacity - kMaxBlockFrames - frame)) {
      position = available / frame * frame;
      processedUpTo.store(position, std::memory_order_release);
    }
    while (position + frame <= available && !stopping.load(std::memory_order_relaxed)) {
      int at = (int)(position % (uint64_t)capacity);
      std::memcpy(work, nearRing + at, sizeof(float) * frame);
      if (features & LIVEMIC_WEBRTC_ECHO) {
        std::memcpy(referenceWork, referenceRing + at, sizeof(float) * frame);
        float *reference = referenceWork;
        apm->ProcessReverseStream(&reference, stream, stream, &reference);
        apm->set_stream_delay_ms(0);  // delay-agnostic: WebRTC estimates the delay itself
      }
      float *channel = work;
      apm->ProcessStream(&channel, stream, stream, &channel);
      std::memcpy(outRing + at, work, sizeof(float) * frame);
      position += frame;
      processedUpTo.store(position, std::memory_order_release);
    }
  }

  void run() {
    while (true) {
      while (sem_wait(&wake) != 0) {
      }
      if (stopping.load(std::memory_order_acquire)) return;
      processPending();
    }
  }
};

extern "C" {

livemic_webrtc *livemic_webrtc_create(int sample_rate, int features, int latency_frames, int priority, int offline) {
  if (sample_rate < 8000 || sample_rate > 192000 || features == 0) return nullptr;
  livemic_webrtc *p = new (std::nothrow) livemic_webrtc();
  if (!p) return nullptr;
  p->features = features;
  p->stream = webrtc::StreamConfig(sample_rate, 1, false);
  p->frame = (int)p->stream.num_frames();
  p->offline = offline != 0;
  // WebRTC's own delay on top of the frames: its band split and merge (1 ms at 48 kHz), the
  // noise suppressor's overlap-add (6 ms) and the echo canceller's (7 ms), measured by
  // cross-correlating speech in and out at 48 kHz (WebRTCTests).
  double internal =
      0.00098 + ((features & LIVEMIC_WEBRTC_NOISE) ? 0.006 : 0) + ((features & LIVEMIC_WEBRTC_ECHO) ? 0.007 : 0);
  p->internalDelay = (int)(internal * sample_rate + 0.5);
  p->latency = latency_frames < p->frame ? p->frame : latency_frames;
  int needed = p->latency + kMaxBlockFrames + 4 * p->frame;
  p->capacity = (needed + p->frame - 1) / p->frame * p->frame;

  webrtc::Config config;
  config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
  config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(true));
  config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
  p->apm = webrtc::AudioProcessing::Create(config);
  if (!p->apm) {
    delete p;
    return nullptr;
  }
  webrtc::ProcessingConfig processing;
  processing.input_stream() = p->stream;
  processing.output_stream() = p->stream;
  processing.reverse_input_stream() = p->stream;
  processing.reverse_output_stream() = p->stream;
  if (p->apm->Initialize(processing) != webrtc::AudioProcessing::kNoError) {
    delete p->apm;
    delete p;
    return nullptr;
  }
  p->apm->high_pass_filter()->Enable(false);
  p->apm->noise_suppression()->Enable((features & LIVEMIC_WEBRTC_NOISE) != 0);
  if (features & LIVEMIC_WEBRTC_ECHO) {
    p->apm->echo_cancellation()->enable_drift_compensation(false);
    p->apm->echo_cancellation()->Enable(true);
  }
  if (features & LIVEMIC_WEBRTC_GAIN) {
    p->apm->gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital);
    p->apm->gain_control()->enable_limiter(true);
    p->apm->gain_control()->Enable(true);
  }
  p->apm->voice_detection()->Enable(true);
  p->applySettings();

  p->nearRing = new (std::nothrow) float[p->capacity]();
  p->referenceRing = new (std::nothrow) float[p->capacity]();
  p->outRing = new (std::nothrow) float[p->capacity]();
  p->work = new (std::nothrow) float[p->frame]();
  p->referenceWork = new (std::nothrow) float[p->frame]();
  p->semaphoreReady = sem_init(&p->wake, 0, 0) == 0;
  if (!p->nearRing || !p->referenceRing || !p->outRing || !p->work || !p->referenceWork || !p->semaphoreReady) {
    livemic_webrtc_destroy(p);
    return nullptr;
  }
  // One frame of silence through, off the audio thread: first-run costs are paid here.
  p->written.store(p->frame, std::memory_order_release);
  p->referenceWritten.store(p->frame, std::memory_order_release);
  p->processPending();
  p->written.store(0, std::memory_order_relaxed);
  p->referenceWritten.store(0, std::memory_order_relaxed);
  p->processedUpTo.store(0, std::memory_order_relaxed);
  std::memset(p->outRing, 0, sizeof(float) * p->capacity);
  if (p->offline) return p;
  p->helper = std::thread([p] { p->run(); });
  if (priority > 0) {
    sched_param param;
    param.sched_priority = priority;
    pthread_setschedparam(p->helper.native_handle(), SCHED_FIFO, &param);  // refused: normal scheduling
  }
  return p;
}

void livemic_webrtc_destroy(livemic_webrtc *p) {
  if (!p) return;
  if (p->helper.joinable()) {
    p->stopping.store(true, std::memory_order_release);
    sem_post(&p->wake);
    p->helper.join();
  }
  if (p->semaphoreReady) sem_destroy(&p->wake);
  delete p->apm;
  delete[] p->nearRing;
  delete[] p->referenceRing;
  delete[] p->outRing;
  delete[] p->work;
  delete[] p->referenceWork;
  delete p;
}

int livemic_webrtc_frame_frames(const livemic_webrtc *p) { return p->frame; }
int livemic_webrtc_latency_frames(const livemic_webrtc *p) { return p->latency + p->internalDelay; }

void livemic_webrtc_set_noise_level(livemic_webrtc *p, int level) {
  p->noiseLevel.store(level, std::memory_order_relaxed);
  p->settingsVersion.fetch_add(1, std::memory_order_release);
}

void livemic_webrtc_set_echo_level(livemic_webrtc *p, int level) {
  p->echoLevel.store(level, std::memory_order_relaxed);
  p->settingsVersion.fetch_add(1, std::memory_order_release);
}

void livemic_webrtc_set_gain(livemic_webrtc *p, int target_level_dbfs, int compression_gain_db) {
  p->gainTarget.store(target_level_dbfs, std::memory_order_relaxed);
  p->gainCompression.store(compression_gain_db, std::memory_order_relaxed);
  p->settingsVersion.fetch_add(1, std::memory_order_release);
}

// Writes `n` samples at absolute position `w` of `ring` (capacity `cap`, wrapping).
static void ringWrite(float *ring, int cap, uint64_t w, const float *samples, int n) {
  for (int i = 0; i < n;) {
    int at = (int)((w + i) % (uint64_t)cap);
    int run = n - i < cap - at ? n - i : cap - at;
    std::memcpy(ring + at, samples + i, sizeof(float) * run);
    i += run;
  }
}

// After a push that reached `w + n`: processes (offline) or wakes the helper when a frame ended.
static void frameDone(livemic_webrtc *p, uint64_t w, int n) {
  if ((w + n) / p->frame == w / p->frame) return;
  if (p->offline) {
    p->processPending();
  } else {
    sem_post(&p->wake);
  }
}

void livemic_webrtc_push_reference(livemic_webrtc *p, const float *reference, int frames) {
  uint64_t w = p->referenceWritten.load(std::memory_order_relaxed);
  for (int done = 0; done < frames;) {
    int n = frames - done < kMaxBlockFrames ? frames - done : kMaxBlockFrames;
    ringWrite(p->referenceRing, p->capacity, w, reference + done, n);
    p->referenceWritten.store(w + n, std::memory_order_release);
    frameDone(p, w, n);
    w += n;
    done += n;
  }
}

void livemic_webrtc_run(livemic_webrtc *p, const float *near, float *out, int frames) {
  const uint64_t cap = (uint64_t)p->capacity;
  uint64_t w = p->written.load(std::memory_order_relaxed);
  for (int done = 0; done < frames;) {
    int n = frames - done;
    if (n > kMaxBlockFrames) n = kMaxBlockFrames;
    // In: the near end at positions w..w+n.
    ringWrite(p->nearRing, p->capacity, w, near + done, n);
    p->written.store(w + n, std::memory_order_release);
    frameDone(p, w, n);
    // Out: positions w - latency.., processed when the helper is done with them, else dry.
    uint64_t ready = p->processedUpTo.load(std::memory_order_acquire);
    for (int i = 0; i < n; i++) {
      uint64_t position = w + i;
      if (position < (uint64_t)p->latency) {
        out[done + i] = 0;
        continue;
      }
      uint64_t source = position - p->latency;
      int at = (int)(source % cap);
      // Within the frame last played dry (no division: `dryFrameStart` is UINT64_MAX before one).
      bool inDryFrame = source >= p->dryFrameStart && source - p->dryFrameStart < (uint64_t)p->frame;
      if (source < ready && !inDryFrame) {
        out[done + i] = p->outRing[at];
      } else {
        if (source % p->frame == 0) {
          p->lateFrames.fetch_add(1, std::memory_order_relaxed);
          p->dryFrameStart = source;
        }
        out[done + i] = source >= (uint64_t)p->internalDelay
                            ? p->nearRing[(int)((source - p->internalDelay) % cap)]
                            : 0;
      }
    }
    w += n;
    done += n;
  }
}

uint64_t livemic_webrtc_late_frames(const livemic_webrtc *p) { return p->lateFrames.load(std::memory_order_relaxed); }

}  // extern "C"
