#ifndef LIVEMIC_CJACK_SHIM_H
#define LIVEMIC_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/metadata.h>
#include <jack/statistics.h>
#include <jack/midiport.h>
#include <jack/ringbuffer.h>
#include <jack/uuid.h>

/// jack_client_open is variadic and does not import into Swift; this wrapper does.
/// Passes the server name only when one is given (JackServerName).
static inline jack_client_t *livemic_client_open(const char *name, jack_options_t options,
                                                 const char *server, jack_status_t *status) {
  if (server != NULL && server[0] != '\0') {
    return jack_client_open(name, (jack_options_t)(options | JackServerName), status, server);
  }
  return jack_client_open(name, options, status);
}

/// The metadata key qjackctl and other patchbays read for a readable port name.
static inline const char *livemic_pretty_name_key(void) { return JACK_METADATA_PRETTY_NAME; }

#endif
