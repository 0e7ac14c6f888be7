#ifndef LIVEMIC_LV2SUPPORT_H
#define LIVEMIC_LV2SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/// A bounded multi-producer, single-consumer queue of log lines (Vyukov's algorithm): any
/// thread, the audio thread included, may push without locking or allocating; the supervisor
/// pops. A full queue drops the line and counts it.
typedef struct LiveMicLogQueue LiveMicLogQueue;

/// Allocates a queue of `slots` lines (rounded up to a power of two). Not real-time.
LiveMicLogQueue *livemic_log_queue_new(uint32_t slots);
void livemic_log_queue_free(LiveMicLogQueue *queue);

/// Pushes a line (truncated to 239 bytes); returns 1, or 0 when the queue is full and the line
/// was dropped (and counted). Any thread; lock-free, no allocation.
int livemic_log_queue_push(LiveMicLogQueue *queue, uint32_t type, const char *text);

/// Pops the oldest line into `text` (NUL-terminated, truncated to `capacity`); returns 1, or 0
/// when empty. `type` gets the LV2 log type URID. Single consumer.
int livemic_log_queue_pop(LiveMicLogQueue *queue, char *text, size_t capacity, uint32_t *type);

/// Lines dropped because the queue was full.
uint64_t livemic_log_queue_dropped(LiveMicLogQueue *queue);

/// The LV2 log:log feature data (an LV2_Log_Log) for one plugin instance, writing to `queue`.
/// Its printf/vprintf format into a stack buffer (vsnprintf) and push. Free with free().
void *livemic_log_feature_new(LiveMicLogQueue *queue);

/// Names the calling thread (at most 15 bytes are kept), as `pthread_setname_np` does; Swift
/// on Linux does not see that GNU extension.
void livemic_set_thread_name(const char *name);

#endif
