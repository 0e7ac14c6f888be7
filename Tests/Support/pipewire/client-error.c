/*
 * client-error: sends a PipeWire client an error on its core object (id 0), as the daemon does
 * when the client sent a message to an object that no longer exists ("unknown resource"). It is
 * what PipeWire 0.3.65's libjack reports to a JACK client as a shutdown although the daemon is
 * still there. Test support only (Tests/EndToEndTests/PipeWireTests.swift).
 *
 *   client-error NAME       (the daemon from PIPEWIRE_REMOTE / PIPEWIRE_RUNTIME_DIR)
 *
 * Finds the client whose client.name is NAME, sends it
 * error(0, -ENOENT, "..."), and exits 0; exits 1 when no such client was found.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <pipewire/pipewire.h>

#define MAX_CLIENTS 64

struct state {
  struct pw_main_loop *loop;
  struct pw_core *core;
  struct pw_registry *registry;
  const char *name;
  int found;
  int pending;
  int count;
  struct pw_client *clients[MAX_CLIENTS];
  struct spa_hook listeners[MAX_CLIENTS];
};

/* A client's info carries its client.name (the registry's global holds only a few keys). */
static void on_client_info(void *data, const struct pw_client_info *info) {
  struct pw_client *proxy = data;
  struct state *s = *(struct state **)pw_proxy_get_user_data((struct pw_proxy *)proxy);
  const char *name = info->props ? spa_dict_lookup(info->props, PW_KEY_CLIENT_NAME) : NULL;
  if (s->found || name == NULL || strcmp(name, s->name) != 0) return;
  pw_client_error(proxy, 0, -ENOENT, "unknown resource (injected by the LiveMic test suite)");
  s->found = 1;
}

static const struct pw_client_events client_events = {
    PW_VERSION_CLIENT_EVENTS,
    .info = on_client_info,
};

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
                      const struct spa_dict *props) {
  struct state *s = data;
  if (s->count == MAX_CLIENTS || strcmp(type, PW_TYPE_INTERFACE_Client) != 0) return;
  struct pw_client *proxy =
      pw_registry_bind(s->registry, id, PW_TYPE_INTERFACE_Client, PW_VERSION_CLIENT, sizeof(struct state *));
  if (proxy == NULL) return;
  *(struct state **)pw_proxy_get_user_data((struct pw_proxy *)proxy) = s;
  pw_client_add_listener(proxy, &s->listeners[s->count], &client_events, proxy);
  s->clients[s->count++] = proxy;
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_global,
};

static void on_done(void *data, uint32_t id, int seq) {
  struct state *s = data;
  if (id == PW_ID_CORE && seq == s->pending) pw_main_loop_quit(s->loop);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_done,
};

int main(int argc, char *argv[]) {
  if (argc != 2) {
    fprintf(stderr, "usage: client-error NAME\n");
    return 2;
  }
  pw_init(&argc, &argv);
  struct state s = {.name = argv[1]};
  s.loop = pw_main_loop_new(NULL);
  struct pw_context *context = pw_context_new(pw_main_loop_get_loop(s.loop), NULL, 0);
  s.core = pw_context_connect(context, NULL, 0);
  if (s.core == NULL) {
    fprintf(stderr, "client-error: cannot connect to the PipeWire daemon\n");
    return 2;
  }
  struct spa_hook core_listener, registry_listener;
  pw_core_add_listener(s.core, &core_listener, &core_events, &s);
  s.registry = pw_core_get_registry(s.core, PW_VERSION_REGISTRY, 0);
  pw_registry_add_listener(s.registry, &registry_listener, &registry_events, &s);
  /* Three round trips: the registry's globals, the clients' info (the error is sent from
   * there), then the error's delivery. */
  for (int i = 0; i < 3; i++) {
    s.pending = pw_core_sync(s.core, PW_ID_CORE, 0);
    pw_main_loop_run(s.loop);
  }
  pw_core_disconnect(s.core);
  pw_context_destroy(context);
  pw_main_loop_destroy(s.loop);
  return s.found ? 0 : 1;
}
