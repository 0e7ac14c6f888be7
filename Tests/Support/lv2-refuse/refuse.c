/* A test LV2 plugin whose instantiate() fails: LiveMic's `automatic` mode must fall back to the
   built-in unit when the plugin it chose cannot be made. Built by the end-to-end test:
   cc -shared -fPIC -o refuse.so refuse.c */
#include <lv2/core/lv2.h>
#include <stddef.h>

static LV2_Handle instantiate(const LV2_Descriptor *descriptor, double rate, const char *bundle,
                              const LV2_Feature *const *features) {
  (void)descriptor;
  (void)rate;
  (void)bundle;
  (void)features;
  return NULL;
}

static void connect_port(LV2_Handle handle, uint32_t port, void *data) {
  (void)handle;
  (void)port;
  (void)data;
}

static void run(LV2_Handle handle, uint32_t frames) {
  (void)handle;
  (void)frames;
}

static void cleanup(LV2_Handle handle) { (void)handle; }

static const LV2_Descriptor descriptor = {
    "urn:livemic:test:refuse", instantiate, connect_port, NULL, run, NULL, cleanup, NULL,
};

LV2_SYMBOL_EXPORT const LV2_Descriptor *lv2_descriptor(uint32_t index) { return index == 0 ? &descriptor : NULL; }
