#define _GNU_SOURCE
#include "lv2support.h"

#include <pthread.h>

#include <lv2/log/log.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_BYTES 240

typedef struct {
  _Atomic size_t sequence;
  uint32_t type;
  char text[LINE_BYTES];
} Cell;

struct LiveMicLogQueue {
  Cell *cells;
  size_t mask;
  _Atomic size_t enqueue;
  _Atomic size_t dequeue;
  _Atomic uint64_t dropped;
};

LiveMicLogQueue *livemic_log_queue_new(uint32_t slots) {
  size_t n = 2;
  while (n < slots) n <<= 1;
  LiveMicLogQueue *q = calloc(1, sizeof(LiveMicLogQueue));
  if (!q) return NULL;
  q->cells = calloc(n, sizeof(Cell));
  if (!q->cells) {
    free(q);
    return NULL;
  }
  q->mask = n - 1;
  for (size_t i = 0; i < n; ++i) atomic_init(&q->cells[i].sequence, i);
  atomic_init(&q->enqueue, 0);
  atomic_init(&q->dequeue, 0);
  atomic_init(&q->dropped, 0);
  return q;
}

void livemic_log_queue_free(LiveMicLogQueue *q) {
  if (!q) return;
  free(q->cells);
  free(q);
}

int livemic_log_queue_push(LiveMicLogQueue *q, uint32_t type, const char *text) {
  size_t pos = atomic_load_explicit(&q->enqueue, memory_order_relaxed);
  for (;;) {
    Cell *cell = &q->cells[pos & q->mask];
    size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
    intptr_t diff = (intptr_t)seq - (intptr_t)pos;
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->enqueue, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        cell->type = type;
        strncpy(cell->text, text, LINE_BYTES - 1);
        cell->text[LINE_BYTES - 1] = '\0';
        atomic_store_explicit(&cell->sequence, pos + 1, memory_order_release);
        return 1;
      }
    } else if (diff < 0) {
      atomic_fetch_add_explicit(&q->dropped, 1, memory_order_relaxed);
      return 0;
    } else {
      pos = atomic_load_explicit(&q->enqueue, memory_order_relaxed);
    }
  }
}

int livemic_log_queue_pop(LiveMicLogQueue *q, char *text, size_t capacity, uint32_t *type) {
  size_t pos = atomic_load_explicit(&q->dequeue, memory_order_relaxed);
  Cell *cell = &q->cells[pos & q->mask];
  size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
  if ((intptr_t)seq - (intptr_t)(pos + 1) != 0) return 0;
  if (capacity > 0) {
    size_t n = strnlen(cell->text, LINE_BYTES);
    if (n >= capacity) n = capacity - 1;
    memcpy(text, cell->text, n);
    text[n] = '\0';
  }
  if (type) *type = cell->type;
  atomic_store_explicit(&cell->sequence, pos + q->mask + 1, memory_order_release);
  atomic_store_explicit(&q->dequeue, pos + 1, memory_order_relaxed);
  return 1;
}

uint64_t livemic_log_queue_dropped(LiveMicLogQueue *q) {
  return atomic_load_explicit(&q->dropped, memory_order_relaxed);
}

static int log_vprintf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, va_list ap) {
  char line[LINE_BYTES];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  // Plugins end lines with a newline; the log adds its own.
  size_t len = strnlen(line, sizeof line);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
  livemic_log_queue_push((LiveMicLogQueue *)handle, type, line);
  return n;
}

static int log_printf(LV2_Log_Handle handle, LV2_URID type, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = log_vprintf(handle, type, fmt, ap);
  va_end(ap);
  return n;
}

void *livemic_log_feature_new(LiveMicLogQueue *queue) {
  LV2_Log_Log *log = calloc(1, sizeof(LV2_Log_Log));
  if (!log) return NULL;
  log->handle = queue;
  log->printf = log_printf;
  log->vprintf = log_vprintf;
  return log;
}

void livemic_set_thread_name(const char *name) {
  char truncated[16];
  strncpy(truncated, name, sizeof truncated - 1);
  truncated[sizeof truncated - 1] = '\0';
  pthread_setname_np(pthread_self(), truncated);
}
