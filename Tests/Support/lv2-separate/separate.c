/* Test LV2 plugins that declare lv2:inPlaceBroken and are broken in place for real: run() clears
   its outputs, then adds its inputs into them, so a host that gave them one buffer for an input
   and an output hears silence. LiveMic must copy into and out of the plugin's own buffers.
   urn:livemic:test:separate-mono   1 in, 1 out: out = in / 2
   urn:livemic:test:separate-stereo 2 in, 2 out: left = in_l / 2, right = in_r / 4
   (powers of two, so the expected output is exact). Built by the end-to-end test:
   cc -shared -fPIC -o separate.so separate.c */
#include <lv2/core/lv2.h>
#include <stdlib.h>

typedef struct {
  unsigned channels;
  const float *in[2];
  float *out[2];
} Separate;

static LV2_Handle instantiate(const LV2_Descriptor *descriptor, double rate, const char *bundle,
                              const LV2_Feature *const *features) {
  (void)rate;
  (void)bundle;
  (void)features;
  Separate *self = calloc(1, sizeof(Separate));
  if (self != NULL) self->channels = descriptor->URI[sizeof("urn:livemic:test:separate-") - 1] == 's' ? 2 : 1;
  return self;
}

static void connect_port(LV2_Handle handle, uint32_t port, void *data) {
  Separate *self = handle;
  if (port < self->channels) {
    self->in[port] = data;
  } else if (port < 2 * self->channels) {
    self->out[port - self->channels] = data;
  }
}

static void run(LV2_Handle handle, uint32_t frames) {
  Separate *self = handle;
  static const float gain[2] = {0.5f, 0.25f};
  for (unsigned c = 0; c < self->channels; c++) {
    for (uint32_t i = 0; i < frames; i++) self->out[c][i] = 0;
  }
  for (unsigned c = 0; c < self->channels; c++) {
    for (uint32_t i = 0; i < frames; i++) self->out[c][i] += self->in[c][i] * gain[c];
  }
}

static void cleanup(LV2_Handle handle) { free(handle); }

static const LV2_Descriptor mono = {
    "urn:livemic:test:separate-mono", instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};
static const LV2_Descriptor stereo = {
    "urn:livemic:test:separate-stereo", instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
  return index == 0 ? &mono : index == 1 ? &stereo : NULL;
}
