#ifndef LIVEMIC_CJACK_SHIM_H
#define LIVEMIC_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/metadata.h>
#include <jack/statistics.h>
#include <jack/midiport.h>
#include <jack/ringbuffer.h>
#include <jack/uuid.h>
#include <jack/thread.h>

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

/// Flush-to-zero and denormals-are-zero on the calling thread (x86-64: MXCSR FTZ and DAZ;
/// AArch64: FPCR FZ), so hosted plugins cannot hit denormal slowdowns. Sets them only when
/// not set (one register read per call otherwise). Returns 1 when they are now set.
/// Realtime: safe (no calls, no memory).
static inline int livemic_flush_denormals(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned int csr;
  __asm__ volatile("stmxcsr %0" : "=m"(csr));
  if ((csr & 0x8040u) != 0x8040u) {
    csr |= 0x8040u;
    __asm__ volatile("ldmxcsr %0" : : "m"(csr));
  }
  return 1;
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  if (!(fpcr & (1ul << 24))) {
    fpcr |= 1ul << 24;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
  }
  return 1;
#else
  return 0;
#endif
}

/// Clears flush-to-zero and denormals-are-zero on the calling thread (IEEE subnormals, a
/// thread's default): for measurements and tests that need them off, since a new thread
/// inherits the mode of the thread that created it.
static inline void livemic_keep_denormals(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned int csr;
  __asm__ volatile("stmxcsr %0" : "=m"(csr));
  csr &= ~0x8040u;
  __asm__ volatile("ldmxcsr %0" : : "m"(csr));
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr &= ~(1ul << 24);
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

/// Whether flush-to-zero and denormals-are-zero are set on the calling thread.
static inline int livemic_denormals_flushed(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned int csr;
  __asm__ volatile("stmxcsr %0" : "=m"(csr));
  return (csr & 0x8040u) == 0x8040u;
#elif defined(__aarch64__)
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr & (1ul << 24)) != 0;
#else
  return 0;
#endif
}

#endif
