/* Test LV2 plugins that misbehave in run(), for `livemic plugins check` (PluginCheckTests):
   one aborts, one dereferences an invalid pointer (SIGSEGV), one never returns, and one
   allocates and frees on every run (the real-time guard must count it). Each is mono, 1 in, 1 out,
   and copies its input to its output otherwise. Built by the end-to-end test:
   cc -shared -fPIC -o misbehave.so misbehave.c */
#include <lv2/core/lv2.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum { ABORT, SEGV, HANG, MALLOC };

typedef struct {
  int kind;
  const float *in;
  float *out;
} Plugin;

static LV2_Handle instantiate(const LV2_Descriptor *descriptor, double rate, const char *bundle,
                              const LV2_Feature *const *features);

static void connect_port(LV2_Handle handle, uint32_t port, void *data) {
  Plugin *p = (Plugin *)handle;
  if (port == 0) p->in = (const float *)data;
  if (port == 1) p->out = (float *)data;
}

/* The warm-up LiveMic runs before activation is silence; the fault waits for a signal, so it
   happens in the JACK process callback. */
static int hears_something(const Plugin *p, uint32_t frames) {
  for (uint32_t i = 0; i < frames; i++)
    if (p->in[i] != 0.0f) return 1;
  return 0;
}

static void run(LV2_Handle handle, uint32_t frames) {
  Plugin *p = (Plugin *)handle;
  int loud = hears_something(p, frames);
  if (p->in != p->out) memmove(p->out, p->in, frames * sizeof(float));
  if (!loud) return;
  switch (p->kind) {
  case ABORT: abort();
  case SEGV: raise(SIGSEGV); break;
  case HANG:
    for (volatile int spin = 1; spin;) {
    }
    break;
  case MALLOC: {
    volatile char *scratch = malloc(64);
    if (scratch) scratch[0] = 1;
    free((void *)scratch);
    break;
  }
  }
}

static void cleanup(LV2_Handle handle) { free(handle); }

static const LV2_Descriptor descriptors[] = {
    {"urn:livemic:test:eg-abort", instantiate, connect_port, NULL, run, NULL, cleanup, NULL},
    {"urn:livemic:test:eg-segv", instantiate, connect_port, NULL, run, NULL, cleanup, NULL},
    {"urn:livemic:test:eg-hang", instantiate, connect_port, NULL, run, NULL, cleanup, NULL},
    {"urn:livemic:test:eg-malloc", instantiate, connect_port, NULL, run, NULL, cleanup, NULL},
};

static LV2_Handle instantiate(const LV2_Descriptor *descriptor, double rate, const char *bundle,
                              const LV2_Feature *const *features) {
  (void)rate;
  (void)bundle;
  (void)features;
  Plugin *p = calloc(1, sizeof(Plugin));
  if (p) p->kind = (int)(descriptor - descriptors);
  return p;
}

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) {
  return index < sizeof(descriptors) / sizeof(descriptors[0]) ? &descriptors[index] : NULL;
}
