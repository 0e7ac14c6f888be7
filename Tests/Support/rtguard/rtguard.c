/*
 * rtguard.c - LD_PRELOAD real-time guard for JACK clients.
 *
 * Wraps the callback passed to jack_set_process_callback() and, while that
 * callback runs (on its own thread only), counts calls a real-time thread
 * must not make: allocator, locks, waits, I/O and sleeps.  Also times every
 * callback.  Results go to $RTGUARD_OUT (one line, rewritten every 200 ms and
 * at exit).  See README.md next to this file.
 *
 * Build:
 *   cc -O2 -Wall -Wextra -shared -fPIC -o librtguard.so rtguard.c -ldl -lpthread
 *
 * Self-contained: no JACK headers needed.
 */
#define _GNU_SOURCE 1
#undef _FORTIFY_SOURCE        /* we define read/open/printf ourselves */
#undef _FILE_OFFSET_BITS      /* keep open/open64 etc. distinct symbols */
#undef _TIME_BITS

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Minimal JACK declarations (no <jack/jack.h> dependency).            */
/* ------------------------------------------------------------------ */
typedef int (*JackProcessCallback)(uint32_t nframes, void *arg);
typedef int (*jack_set_process_callback_fn)(void *client,
                                            JackProcessCallback cb, void *arg);

/* ------------------------------------------------------------------ */
/* Thread-local state.  initial-exec: reading it never allocates.      */
/* ------------------------------------------------------------------ */
#define RTG_TLS static __thread __attribute__((tls_model("initial-exec")))

/* 0 = not in a callback, 1 = in a counted callback, 2 = in a warm-up one */
RTG_TLS int in_cb;
/* set while this thread is inside dlsym() resolving a real function */
RTG_TLS int resolving;

#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RELAXED     __ATOMIC_RELAXED

/* ------------------------------------------------------------------ */
/* Counters (relaxed atomics only).                                    */
/* ------------------------------------------------------------------ */
enum { C_MALLOC, C_FREE, C_LOCK, C_WAIT, C_IO, C_SLEEP, C_NCAT };

static unsigned long long counts[C_NCAT];
static unsigned long long total_cycles;
static const char *first_name;           /* string literal, never freed */

#define RING_SIZE 65536u
static float ring_us[RING_SIZE];          /* last RING_SIZE durations, us */
static float scratch_us[RING_SIZE];       /* sorted copy, writer side only */
static unsigned long long timed_count;    /* number of timed callbacks */
static unsigned long long sum_ns;
static unsigned long long max_ns;

/* Count one call.  Calls the forwarded function makes itself through
 * interposable symbols (fopen -> malloc, fclose -> free) are counted too:
 * they happen on the audio thread just the same. */
/* The call stack of the first counted call, taken on the audio thread (with
 * counting paused) and written by the report writer to $RTGUARD_OUT.backtrace
 * as "module +offset symbol" lines, for llvm-symbolizer or addr2line. */
#define BT_MAX 48
static void *bt_frames[BT_MAX];
static int bt_count;
static int bt_taken;             /* 0, then 1 once a thread claimed the capture */
static int bt_ready;             /* 1 once bt_frames/bt_count are written */

static void rtg_capture_backtrace(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&bt_taken, &expected, 1, 0,
                                     __ATOMIC_ACQ_REL, RELAXED))
        return;
    in_cb = 0;                   /* the unwinder's own calls are not the callback's */
    bt_count = backtrace(bt_frames, BT_MAX);
    in_cb = 1;
    __atomic_store_n(&bt_ready, 1, __ATOMIC_RELEASE);
}

static inline int rtg_enter(int cat, const char *name)
{
    if (LIKELY(in_cb != 1))
        return 0;
    __atomic_fetch_add(&counts[cat], 1, RELAXED);
    if (__atomic_load_n(&first_name, RELAXED) == NULL) {
        const char *expected = NULL;
        __atomic_compare_exchange_n(&first_name, &expected, name, 0,
                                    RELAXED, RELAXED);
    }
    if (UNLIKELY(__atomic_load_n(&bt_taken, RELAXED) == 0))
        rtg_capture_backtrace();
    return 1;
}

static inline void rtg_leave(int entered)
{
    (void)entered;      /* hook kept for symmetry; nothing to undo */
}

/* ------------------------------------------------------------------ */
/* Real-symbol lookup.                                                 */
/* ------------------------------------------------------------------ */
static void *rtg_resolve(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, RELAXED);
    if (LIKELY(p != NULL))
        return p;
    int saved = errno;
    resolving++;
    p = dlsym(RTLD_NEXT, name);
    resolving--;
    errno = saved;
    if (p)
        __atomic_store_n(slot, p, RELAXED);
    return p;
}

/* ------------------------------------------------------------------ */
/* Allocator, with a static bump arena for the dlsym bootstrap.        */
/* ------------------------------------------------------------------ */
#define ARENA_SIZE (256u * 1024u)
#define ARENA_HDR  16u
static unsigned char arena[ARENA_SIZE] __attribute__((aligned(4096)));
static size_t arena_used;

static int in_arena(const void *p)
{
    return (const unsigned char *)p >= arena &&
           (const unsigned char *)p < arena + ARENA_SIZE;
}

/* Memory is static (zeroed) and never reused, so it also serves calloc. */
static void *arena_alloc(size_t size, size_t align)
{
    if (align < ARENA_HDR)
        align = ARENA_HDR;
    size_t old = __atomic_load_n(&arena_used, RELAXED);
    for (;;) {
        size_t start = (old + ARENA_HDR + align - 1) & ~(align - 1);
        if (start > ARENA_SIZE || size > ARENA_SIZE - start) {
            errno = ENOMEM;
            return NULL;
        }
        size_t end = start + size;
        if (__atomic_compare_exchange_n(&arena_used, &old, end, 1,
                                        __ATOMIC_ACQ_REL, RELAXED)) {
            memcpy(arena + start - sizeof(size_t), &size, sizeof(size_t));
            return arena + start;
        }
    }
}

static size_t arena_size_of(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof(size_t), sizeof(size_t));
    return n;
}

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef size_t (*usable_fn)(void *);

static void *r_malloc, *r_calloc, *r_realloc, *r_reallocarray, *r_free,
    *r_posix_memalign, *r_aligned_alloc, *r_memalign, *r_valloc, *r_pvalloc,
    *r_usable;

static void resolve_allocator(void)
{
    rtg_resolve(&r_calloc, "calloc");
    rtg_resolve(&r_malloc, "malloc");
    rtg_resolve(&r_free, "free");
    rtg_resolve(&r_realloc, "realloc");
    rtg_resolve(&r_reallocarray, "reallocarray");
    rtg_resolve(&r_posix_memalign, "posix_memalign");
    rtg_resolve(&r_aligned_alloc, "aligned_alloc");
    rtg_resolve(&r_memalign, "memalign");
    rtg_resolve(&r_valloc, "valloc");
    rtg_resolve(&r_pvalloc, "pvalloc");
    rtg_resolve(&r_usable, "malloc_usable_size");
}

/* Get a real allocator function; NULL means "use the arena". */
static void *alloc_real(void **slot)
{
    void *p = __atomic_load_n(slot, RELAXED);
    if (LIKELY(p != NULL))
        return p;
    if (resolving)
        return NULL;
    resolve_allocator();
    return __atomic_load_n(slot, RELAXED);
}

void *malloc(size_t size)
{
    malloc_fn f = (malloc_fn)alloc_real(&r_malloc);
    if (UNLIKELY(!f))
        return arena_alloc(size, 16);
    int g = rtg_enter(C_MALLOC, "malloc");
    void *p = f(size);
    rtg_leave(g);
    return p;
}

void *calloc(size_t n, size_t size)
{
    calloc_fn f = (calloc_fn)alloc_real(&r_calloc);
    if (UNLIKELY(!f)) {
        if (size && n > SIZE_MAX / size) {
            errno = ENOMEM;
            return NULL;
        }
        return arena_alloc(n * size, 16);
    }
    int g = rtg_enter(C_MALLOC, "calloc");
    void *p = f(n, size);
    rtg_leave(g);
    return p;
}

static void *arena_realloc(void *old, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p) {
        size_t n = arena_size_of(old);
        memcpy(p, old, n < size ? n : size);
    }
    return p;
}

void *realloc(void *ptr, size_t size)
{
    if (UNLIKELY(ptr != NULL && in_arena(ptr)))
        return arena_realloc(ptr, size);
    realloc_fn f = (realloc_fn)alloc_real(&r_realloc);
    if (UNLIKELY(!f)) {
        if (ptr == NULL)
            return arena_alloc(size, 16);
        errno = ENOMEM;
        return NULL;
    }
    int g = rtg_enter(C_MALLOC, "realloc");
    void *p = f(ptr, size);
    rtg_leave(g);
    return p;
}

void *reallocarray(void *ptr, size_t n, size_t size)
{
    if (UNLIKELY(ptr != NULL && in_arena(ptr))) {
        if (size && n > SIZE_MAX / size) {
            errno = ENOMEM;
            return NULL;
        }
        return arena_realloc(ptr, n * size);
    }
    reallocarray_fn f = (reallocarray_fn)alloc_real(&r_reallocarray);
    if (UNLIKELY(!f)) {
        if (ptr == NULL && !(size && n > SIZE_MAX / size))
            return arena_alloc(n * size, 16);
        errno = ENOMEM;
        return NULL;
    }
    int g = rtg_enter(C_MALLOC, "reallocarray");
    void *p = f(ptr, n, size);
    rtg_leave(g);
    return p;
}

void free(void *ptr)
{
    if (ptr == NULL || UNLIKELY(in_arena(ptr)))
        return;
    free_fn f = (free_fn)alloc_real(&r_free);
    if (UNLIKELY(!f))
        return;                         /* bootstrap: leak */
    int g = rtg_enter(C_FREE, "free");
    f(ptr);
    rtg_leave(g);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    posix_memalign_fn f = (posix_memalign_fn)alloc_real(&r_posix_memalign);
    if (UNLIKELY(!f)) {
        if (align < sizeof(void *) || (align & (align - 1)))
            return EINVAL;
        void *p = arena_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int g = rtg_enter(C_MALLOC, "posix_memalign");
    int r = f(out, align, size);
    rtg_leave(g);
    return r;
}

static void *memalign_common(void **slot, const char *name, size_t align,
                             size_t size)
{
    memalign_fn f = (memalign_fn)alloc_real(slot);
    if (UNLIKELY(!f))
        return arena_alloc(size, align && !(align & (align - 1)) ? align : 16);
    int g = rtg_enter(C_MALLOC, name);
    void *p = f(align, size);
    rtg_leave(g);
    return p;
}

void *aligned_alloc(size_t align, size_t size)
{
    return memalign_common(&r_aligned_alloc, "aligned_alloc", align, size);
}

void *memalign(size_t align, size_t size)
{
    return memalign_common(&r_memalign, "memalign", align, size);
}

void *valloc(size_t size)
{
    malloc_fn f = (malloc_fn)alloc_real(&r_valloc);
    if (UNLIKELY(!f))
        return arena_alloc(size, 4096);
    int g = rtg_enter(C_MALLOC, "valloc");
    void *p = f(size);
    rtg_leave(g);
    return p;
}

void *pvalloc(size_t size)
{
    malloc_fn f = (malloc_fn)alloc_real(&r_pvalloc);
    if (UNLIKELY(!f))
        return arena_alloc((size + 4095) & ~(size_t)4095, 4096);
    int g = rtg_enter(C_MALLOC, "pvalloc");
    void *p = f(size);
    rtg_leave(g);
    return p;
}

/* Not counted; only here so arena pointers never reach glibc. */
size_t malloc_usable_size(void *ptr)
{
    if (ptr == NULL)
        return 0;
    if (in_arena(ptr))
        return arena_size_of(ptr);
    usable_fn f = (usable_fn)alloc_real(&r_usable);
    return f ? f(ptr) : 0;
}

/* ------------------------------------------------------------------ */
/* Generic wrappers for fixed-argument functions.                      */
/* The real pointer is resolved eagerly by a constructor (so the audio */
/* thread never runs dlsym) and lazily as a fallback.                  */
/* ------------------------------------------------------------------ */
#define REAL_SLOT(name)                                                   \
    static void *real_##name;                                             \
    __attribute__((constructor)) static void rtg_init_##name(void)        \
    {                                                                     \
        rtg_resolve(&real_##name, #name);                                 \
    }

#define REAL(name) ((__typeof__(&name))rtg_resolve(&real_##name, #name))

#define WRAP(cat, ret, name, params, args)                                \
    REAL_SLOT(name)                                                       \
    ret name params                                                       \
    {                                                                     \
        __typeof__(&name) f_ = REAL(name);                                \
        int g_ = rtg_enter(cat, #name);                                   \
        ret r_ = f_ args;                                                 \
        rtg_leave(g_);                                                    \
        return r_;                                                        \
    }

/* Like WRAP, for functions that may be missing at run time. */
#define WRAP_OPT(cat, ret, name, params, args)                            \
    REAL_SLOT(name)                                                       \
    ret name params                                                       \
    {                                                                     \
        __typeof__(&name) f_ = REAL(name);                                \
        if (!f_)                                                          \
            return ENOSYS;                                                \
        int g_ = rtg_enter(cat, #name);                                   \
        ret r_ = f_ args;                                                 \
        rtg_leave(g_);                                                    \
        return r_;                                                        \
    }

/* ---- locks ---- */
WRAP(C_LOCK, int, pthread_mutex_lock, (pthread_mutex_t *m), (m))
WRAP(C_LOCK, int, pthread_mutex_trylock, (pthread_mutex_t *m), (m))
WRAP(C_LOCK, int, pthread_mutex_timedlock,
     (pthread_mutex_t *m, const struct timespec *t), (m, t))
WRAP(C_LOCK, int, pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l))
WRAP(C_LOCK, int, pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l))
WRAP(C_LOCK, int, pthread_rwlock_tryrdlock, (pthread_rwlock_t *l), (l))
WRAP(C_LOCK, int, pthread_rwlock_trywrlock, (pthread_rwlock_t *l), (l))
WRAP(C_LOCK, int, pthread_rwlock_timedrdlock,
     (pthread_rwlock_t *l, const struct timespec *t), (l, t))
WRAP(C_LOCK, int, pthread_rwlock_timedwrlock,
     (pthread_rwlock_t *l, const struct timespec *t), (l, t))
WRAP(C_LOCK, int, pthread_spin_lock, (pthread_spinlock_t *l), (l))

/* ---- waits ---- */
WRAP(C_WAIT, int, pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m),
     (c, m))
WRAP(C_WAIT, int, pthread_cond_timedwait,
     (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t),
     (c, m, t))
WRAP(C_WAIT, int, pthread_join, (pthread_t th, void **ret), (th, ret))
WRAP(C_WAIT, int, sem_wait, (sem_t *s), (s))
WRAP(C_WAIT, int, sem_timedwait, (sem_t *s, const struct timespec *t), (s, t))
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define RTG_HAVE_CLOCKWAIT 1
REAL_SLOT(sem_clockwait)
int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *t)
{
    __typeof__(&sem_clockwait) f = REAL(sem_clockwait);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    int g = rtg_enter(C_WAIT, "sem_clockwait");
    int r = f(s, clk, t);
    rtg_leave(g);
    return r;
}
WRAP_OPT(C_WAIT, int, pthread_cond_clockwait,
         (pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
          const struct timespec *t), (c, m, clk, t))
WRAP_OPT(C_LOCK, int, pthread_mutex_clocklock,
         (pthread_mutex_t *m, clockid_t clk, const struct timespec *t),
         (m, clk, t))
#endif

/* ---- I/O ---- */
WRAP(C_IO, ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n))
WRAP(C_IO, ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n))
WRAP(C_IO, int, close, (int fd), (fd))
WRAP(C_IO, ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n))
WRAP(C_IO, ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n))
WRAP(C_IO, ssize_t, pread, (int fd, void *buf, size_t n, off_t off),
     (fd, buf, n, off))
WRAP(C_IO, ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off),
     (fd, buf, n, off))
WRAP(C_IO, ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off),
     (fd, buf, n, off))
WRAP(C_IO, ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off),
     (fd, buf, n, off))
WRAP(C_IO, FILE *, fopen, (const char *path, const char *mode), (path, mode))
WRAP(C_IO, FILE *, fopen64, (const char *path, const char *mode), (path, mode))
WRAP(C_IO, size_t, fwrite, (const void *p, size_t sz, size_t n, FILE *fp),
     (p, sz, n, fp))
WRAP(C_IO, size_t, fread, (void *p, size_t sz, size_t n, FILE *fp),
     (p, sz, n, fp))
WRAP(C_IO, int, fflush, (FILE *fp), (fp))
WRAP(C_IO, int, fputs, (const char *s, FILE *fp), (s, fp))
WRAP(C_IO, int, puts, (const char *s), (s))
WRAP(C_IO, int, putchar, (int c), (c))
WRAP(C_IO, int, fputc, (int c, FILE *fp), (c, fp))
WRAP(C_IO, int, putc, (int c, FILE *fp), (c, fp))
WRAP(C_IO, int, vprintf, (const char *fmt, va_list ap), (fmt, ap))
WRAP(C_IO, int, vfprintf, (FILE *fp, const char *fmt, va_list ap),
     (fp, fmt, ap))
WRAP(C_IO, int, vdprintf, (int fd, const char *fmt, va_list ap),
     (fd, fmt, ap))

static int open_needs_mode(int flags)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return 1;
#endif
    return (flags & O_CREAT) != 0;
}

#define OPEN_LIKE(name, pre_params, pre_args)                             \
    REAL_SLOT(name)                                                       \
    int name(pre_params, const char *path, int flags, ...)                \
    {                                                                     \
        mode_t mode = 0;                                                  \
        if (open_needs_mode(flags)) {                                     \
            va_list ap;                                                   \
            va_start(ap, flags);                                          \
            mode = (mode_t)va_arg(ap, int);                               \
            va_end(ap);                                                   \
        }                                                                 \
        __typeof__(&name) f_ = REAL(name);                                \
        int g_ = rtg_enter(C_IO, #name);                                  \
        int r_ = f_(pre_args path, flags, mode);                          \
        rtg_leave(g_);                                                    \
        return r_;                                                        \
    }

/* open/open64 have no leading parameter; spell them out. */
REAL_SLOT(open)
int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (open_needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    __typeof__(&open) f = REAL(open);
    int g = rtg_enter(C_IO, "open");
    int r = f(path, flags, mode);
    rtg_leave(g);
    return r;
}

REAL_SLOT(open64)
int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (open_needs_mode(flags)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    __typeof__(&open64) f = REAL(open64);
    int g = rtg_enter(C_IO, "open64");
    int r = f(path, flags, mode);
    rtg_leave(g);
    return r;
}

#define COMMA ,
OPEN_LIKE(openat, int dirfd, dirfd COMMA)
OPEN_LIKE(openat64, int dirfd, dirfd COMMA)

/* Variadic printf family: forward through the real v* variants. */
static void *real_vprintf_p, *real_vfprintf_p, *real_vdprintf_p,
    *real_vsyslog_p;

int printf(const char *fmt, ...)
{
    __typeof__(&vprintf) f = (__typeof__(&vprintf))rtg_resolve(
        &real_vprintf_p, "vprintf");
    int g = rtg_enter(C_IO, "printf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

int fprintf(FILE *fp, const char *fmt, ...)
{
    __typeof__(&vfprintf) f = (__typeof__(&vfprintf))rtg_resolve(
        &real_vfprintf_p, "vfprintf");
    int g = rtg_enter(C_IO, "fprintf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(fp, fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

int dprintf(int fd, const char *fmt, ...)
{
    __typeof__(&vdprintf) f = (__typeof__(&vdprintf))rtg_resolve(
        &real_vdprintf_p, "vdprintf");
    int g = rtg_enter(C_IO, "dprintf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(fd, fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

void syslog(int pri, const char *fmt, ...)
{
    __typeof__(&vsyslog) f = (__typeof__(&vsyslog))rtg_resolve(
        &real_vsyslog_p, "vsyslog");
    int g = rtg_enter(C_IO, "syslog");
    va_list ap;
    va_start(ap, fmt);
    f(pri, fmt, ap);
    va_end(ap);
    rtg_leave(g);
}

REAL_SLOT(vsyslog)
void vsyslog(int pri, const char *fmt, va_list ap)
{
    __typeof__(&vsyslog) f = REAL(vsyslog);
    int g = rtg_enter(C_IO, "vsyslog");
    f(pri, fmt, ap);
    rtg_leave(g);
}

/* _FORTIFY_SOURCE entry points (clients built with fortification call
 * these instead of printf/read/open). */
int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap);
int __printf_chk(int flag, const char *fmt, ...);
int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);
void __syslog_chk(int pri, int flag, const char *fmt, ...);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);

WRAP(C_IO, int, __vprintf_chk, (int flag, const char *fmt, va_list ap),
     (flag, fmt, ap))
WRAP(C_IO, int, __vfprintf_chk,
     (FILE *fp, int flag, const char *fmt, va_list ap), (fp, flag, fmt, ap))
WRAP(C_IO, int, __vdprintf_chk, (int fd, int flag, const char *fmt, va_list ap),
     (fd, flag, fmt, ap))
WRAP(C_IO, ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen),
     (fd, buf, n, buflen))
WRAP(C_IO, int, __open_2, (const char *path, int flags), (path, flags))
WRAP(C_IO, int, __open64_2, (const char *path, int flags), (path, flags))
WRAP(C_IO, int, __openat_2, (int dirfd, const char *path, int flags),
     (dirfd, path, flags))

int __printf_chk(int flag, const char *fmt, ...)
{
    __typeof__(&__vprintf_chk) f = REAL(__vprintf_chk);
    int g = rtg_enter(C_IO, "printf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(flag, fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
    __typeof__(&__vfprintf_chk) f = REAL(__vfprintf_chk);
    int g = rtg_enter(C_IO, "fprintf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(fp, flag, fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
    __typeof__(&__vdprintf_chk) f = REAL(__vdprintf_chk);
    int g = rtg_enter(C_IO, "dprintf");
    va_list ap;
    va_start(ap, fmt);
    int r = f(fd, flag, fmt, ap);
    va_end(ap);
    rtg_leave(g);
    return r;
}

REAL_SLOT(__vsyslog_chk)
void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap)
{
    __typeof__(&__vsyslog_chk) f = REAL(__vsyslog_chk);
    int g = rtg_enter(C_IO, "vsyslog");
    f(pri, flag, fmt, ap);
    rtg_leave(g);
}

void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
    __typeof__(&__vsyslog_chk) f = REAL(__vsyslog_chk);
    int g = rtg_enter(C_IO, "syslog");
    va_list ap;
    va_start(ap, fmt);
    f(pri, flag, fmt, ap);
    va_end(ap);
    rtg_leave(g);
}

/* ---- sleeping ---- */
WRAP(C_SLEEP, int, nanosleep, (const struct timespec *req, struct timespec *rem),
     (req, rem))
WRAP(C_SLEEP, int, clock_nanosleep,
     (clockid_t clk, int flags, const struct timespec *req,
      struct timespec *rem), (clk, flags, req, rem))
WRAP(C_SLEEP, int, usleep, (useconds_t us), (us))
WRAP(C_SLEEP, unsigned int, sleep, (unsigned int s), (s))
WRAP(C_SLEEP, int, sched_yield, (void), ())
WRAP(C_SLEEP, int, poll, (struct pollfd *fds, nfds_t n, int timeout),
     (fds, n, timeout))
WRAP(C_SLEEP, int, ppoll,
     (struct pollfd *fds, nfds_t n, const struct timespec *t,
      const sigset_t *mask), (fds, n, t, mask))
WRAP(C_SLEEP, int, select,
     (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t),
     (n, r, w, e, t))
WRAP(C_SLEEP, int, pselect,
     (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
      const sigset_t *mask), (n, r, w, e, t, mask))

/* ------------------------------------------------------------------ */
/* Report writer.                                                      */
/* ------------------------------------------------------------------ */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static char out_path[PATH_MAX];
static char tmp_path[PATH_MAX + 8];
static int have_out;            /* RTGUARD_OUT set and usable */
static int started;             /* writer thread started (once) */
static int intercepted;         /* a callback was wrapped in this process */
static int final_written;
static pid_t owner_pid;
static unsigned long long skip_cycles;

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void format_report(char *buf, size_t len)
{
    unsigned long long cyc = __atomic_load_n(&total_cycles, RELAXED);
    unsigned long long c[C_NCAT];
    for (int i = 0; i < C_NCAT; i++)
        c[i] = __atomic_load_n(&counts[i], RELAXED);
    const char *first = __atomic_load_n(&first_name, RELAXED);
    unsigned long long n = __atomic_load_n(&timed_count, RELAXED);
    unsigned long long sum = __atomic_load_n(&sum_ns, RELAXED);
    unsigned long long mx = __atomic_load_n(&max_ns, RELAXED);

    double mean = n ? (double)sum / (double)n / 1000.0 : 0.0;
    double p99 = 0.0, p50 = 0.0;
    size_t k = n < RING_SIZE ? (size_t)n : RING_SIZE;
    if (k) {
        memcpy(scratch_us, ring_us, k * sizeof(float));
        qsort(scratch_us, k, sizeof(float), cmp_float);
        size_t idx = (99 * k + 99) / 100;        /* nearest rank, 1-based */
        if (idx < 1)
            idx = 1;
        p99 = scratch_us[idx - 1];
        p50 = scratch_us[(k - 1) / 2];           /* the median: robust to the host's stalls */
    }
    long long tenths = (long long)(p99 * 10.0 + 0.5);
    char p99s[32];
    if (tenths % 10 == 0)
        snprintf(p99s, sizeof p99s, "%lld", tenths / 10);
    else
        snprintf(p99s, sizeof p99s, "%lld.%lld", tenths / 10, tenths % 10);

    snprintf(buf, len,
             "cycles=%llu malloc=%llu free=%llu lock=%llu wait=%llu io=%llu "
             "sleep=%llu first=%s us_mean=%.2f us_p99=%s us_max=%.1f us_p50=%.2f\n",
             cyc, c[C_MALLOC], c[C_FREE], c[C_LOCK], c[C_WAIT], c[C_IO],
             c[C_SLEEP], first ? first : "none", mean, p99s,
             (double)mx / 1000.0, p50);
}

/* Writes the captured stack once (writer side; report_lock held). */
static void write_backtrace(void)
{
    static int written;
    if (written || !__atomic_load_n(&bt_ready, __ATOMIC_ACQUIRE))
        return;
    written = 1;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s.backtrace", out_path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    for (int i = 0; i < bt_count; i++) {
        char line[PATH_MAX + 128];
        Dl_info info;
        int len;
        if (dladdr(bt_frames[i], &info) && info.dli_fname)
            len = snprintf(line, sizeof line, "%s +0x%lx %s\n", info.dli_fname,
                           (unsigned long)((char *)bt_frames[i] - (char *)info.dli_fbase),
                           info.dli_sname ? info.dli_sname : "?");
        else
            len = snprintf(line, sizeof line, "%p\n", bt_frames[i]);
        if (len > 0 && write(fd, line, (size_t)len) < 0)
            break;
    }
    close(fd);
}

static void write_report(int final)
{
    static char line[512];
    if (!have_out)
        return;
    pthread_mutex_lock(&report_lock);
    write_backtrace();
    if (final_written) {
        pthread_mutex_unlock(&report_lock);
        return;
    }
    if (final)
        final_written = 1;
    format_report(line, sizeof line);
    int saved = errno;
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        size_t len = strlen(line), off = 0;
        int ok = 1;
        while (off < len) {
            ssize_t w = write(fd, line + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                ok = 0;
                break;
            }
            off += (size_t)w;
        }
        if (close(fd) != 0)
            ok = 0;
        if (ok)
            rename(tmp_path, out_path);
        else
            unlink(tmp_path);
    }
    errno = saved;
    pthread_mutex_unlock(&report_lock);
}

static void *writer_main(void *unused)
{
    (void)unused;
    struct timespec period = {0, 200 * 1000 * 1000};
    for (;;) {
        write_report(0);
        if (__atomic_load_n(&final_written, RELAXED))
            break;
        nanosleep(&period, NULL);
    }
    return NULL;
}

static void start_writer(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&started, &expected, 1, 0,
                                     __ATOMIC_ACQ_REL, RELAXED))
        return;
    owner_pid = getpid();
    const char *skip = getenv("RTGUARD_SKIP_CYCLES");
    if (skip && *skip)
        skip_cycles = strtoull(skip, NULL, 10);
    const char *out = getenv("RTGUARD_OUT");
    if (!out || !*out || strlen(out) >= sizeof out_path)
        return;
    strcpy(out_path, out);
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
    have_out = 1;
    /* The unwinder loads libgcc_s on its first use: pay that here, not on
     * the audio thread. */
    void *prime[2];
    (void)backtrace(prime, 2);

    /* Block every signal in the writer so it never takes one meant for the
     * application (the new thread inherits the mask). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    if (pthread_create(&th, &attr, writer_main, NULL) != 0)
        write_report(0);                /* at least leave a file behind */
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((destructor)) static void rtg_fini(void)
{
    /* Only the process that wrapped a callback reports, so a parent
     * (a shell, the swift driver) or a forked child does not overwrite it. */
    if (__atomic_load_n(&intercepted, RELAXED) && getpid() == owner_pid)
        write_report(1);
}

__attribute__((constructor)) static void rtg_init(void)
{
    resolve_allocator();
}

/* ------------------------------------------------------------------ */
/* JACK process-callback interposition.                                */
/* ------------------------------------------------------------------ */
#define MAX_CLIENTS 8
struct rtg_slot {
    void *client;
    JackProcessCallback cb;
    void *arg;
    unsigned long long cycles;
};
static struct rtg_slot slots[MAX_CLIENTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static void *real_jspc;

static inline unsigned long long ts_ns(const struct timespec *t)
{
    return (unsigned long long)t->tv_sec * 1000000000ull +
           (unsigned long long)t->tv_nsec;
}

static int rtg_process(uint32_t nframes, void *varg)
{
    struct rtg_slot *s = (struct rtg_slot *)varg;
    JackProcessCallback cb = __atomic_load_n(&s->cb, __ATOMIC_ACQUIRE);
    void *arg = __atomic_load_n(&s->arg, RELAXED);

    if (UNLIKELY(in_cb != 0))                  /* nested: just forward */
        return cb(nframes, arg);

    __atomic_fetch_add(&total_cycles, 1, RELAXED);
    unsigned long long n = __atomic_fetch_add(&s->cycles, 1, RELAXED);
    if (n < skip_cycles) {                     /* warm-up: not counted */
        in_cb = 2;
        int r = cb(nframes, arg);
        in_cb = 0;
        return r;
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    in_cb = 1;
    int r = cb(nframes, arg);
    in_cb = 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);

    unsigned long long d = ts_ns(&t1) - ts_ns(&t0);
    unsigned long long i = __atomic_fetch_add(&timed_count, 1, RELAXED);
    float us = (float)d / 1000.0f;
    __atomic_store(&ring_us[i % RING_SIZE], &us, RELAXED);
    __atomic_fetch_add(&sum_ns, d, RELAXED);
    unsigned long long m = __atomic_load_n(&max_ns, RELAXED);
    while (d > m && !__atomic_compare_exchange_n(&max_ns, &m, d, 1, RELAXED,
                                                 RELAXED))
        ;
    return r;
}

int jack_set_process_callback(void *client, JackProcessCallback cb, void *arg)
{
    jack_set_process_callback_fn real =
        (jack_set_process_callback_fn)rtg_resolve(&real_jspc,
                                                  "jack_set_process_callback");
    if (!real)
        return -1;
    start_writer();
    if (!cb)
        return real(client, cb, arg);

    struct rtg_slot *s = NULL;
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < MAX_CLIENTS && !s; i++)
        if (slots[i].client == client)
            s = &slots[i];
    for (int i = 0; i < MAX_CLIENTS && !s; i++)
        if (slots[i].client == NULL) {
            s = &slots[i];
            s->client = client;
        }
    if (s) {
        __atomic_store_n(&s->arg, arg, RELAXED);
        __atomic_store_n(&s->cb, cb, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&slots_lock);

    if (!s)                                     /* table full: unguarded */
        return real(client, cb, arg);
    __atomic_store_n(&intercepted, 1, RELAXED);
    return real(client, rtg_process, s);
}

/* A closed client's slot is free again, so a client that reconnects after a server restart
 * (a new client each time) stays guarded however often it does. */
typedef int (*jack_client_close_fn)(void *client);
static void *real_jcc;

int jack_client_close(void *client)
{
    jack_client_close_fn real =
        (jack_client_close_fn)rtg_resolve(&real_jcc, "jack_client_close");
    if (!real)
        return -1;
    int r = real(client); /* no callback of this client runs after this returns */
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (slots[i].client == client) {
            slots[i].client = NULL;
            __atomic_store_n(&slots[i].cycles, 0, RELAXED);
        }
    pthread_mutex_unlock(&slots_lock);
    return r;
}
