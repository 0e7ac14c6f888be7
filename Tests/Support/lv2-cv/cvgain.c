/* LiveMic test plugin: out = in × gain (a CV input, per sample); level (a CV output) = |out|. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <lv2/core/lv2.h>

typedef struct {
  const float* in;
  float* out;
  const float* gain;
  float* level;
} CvGain;

static LV2_Handle instantiate(const LV2_Descriptor* d, double rate, const char* path,
                              const LV2_Feature* const* features) {
  (void)d; (void)rate; (void)path; (void)features;
  return calloc(1, sizeof(CvGain));
}

static void connect_port(LV2_Handle h, uint32_t port, void* data) {
  CvGain* self = (CvGain*)h;
  switch (port) {
  case 0: self->in = (const float*)data; break;
  case 1: self->out = (float*)data; break;
  case 2: self->gain = (const float*)data; break;
  case 3: self->level = (float*)data; break;
  }
}

static void run(LV2_Handle h, uint32_t n) {
  CvGain* self = (CvGain*)h;
  for (uint32_t i = 0; i < n; ++i) {
    const float y = self->in[i] * self->gain[i];
    self->out[i] = y;
    self->level[i] = fabsf(y);
  }
}

static void cleanup(LV2_Handle h) { free(h); }

static const LV2_Descriptor descriptor = {
  "urn:livemic:test:cv-gain", instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor* lv2_descriptor(uint32_t index) {
  return index == 0 ? &descriptor : NULL;
}
