/* libvprof_rt internals shared by its C files: the process's state and start-up, the
 * record writer with an injected timestamp, diagnostics. Never part of the installed
 * headers. The concepts built on it have their own headers (rt_clock.h, rt_files.h,
 * rt_stream.h); this one includes none of them. */
#ifndef VPROF_RT_INTERNAL_H
#define VPROF_RT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include <vprof/probe.h>
#include <vprof/trace_format.h>

#include "options.h"

#define VPROF_RT_HIDDEN_ __attribute__((visibility("hidden")))

/* Process-wide state of the runtime (one per process; reset in a fork child). */
enum { VPROF_RT_UNINIT = 0, VPROF_RT_INITIALIZING = 1, VPROF_RT_ON = 2, VPROF_RT_OFF = 3 };

/* The process as the runtime sees it (rt_lifecycle.c): its state, its options, its pid,
 * the trace directory and the key whose destructor closes a thread's stream. */
typedef struct vprof_rt_process {
  int state; /* VPROF_RT_*, read and written atomically */
  vprof_options opt;
  const char *dir; /* absolute trace directory (never freed: open streams keep it) */
  int dir_state;   /* 0 not yet created, 1 usable, 2 unusable */
  pid_t pid;
  pthread_key_t key;
  int key_ok;
} vprof_rt_process;

extern vprof_rt_process vprof_rt_process_ VPROF_RT_HIDDEN_;

/* The sync level (VPROF_SYNC: 0 off, 1 edge-forming records only, 2 every call) while
 * sync events are recorded, 0 otherwise; read (relaxed) by every interposed call. */
extern int vprof_rt_sync_on_ VPROF_RT_HIDDEN_;

/* Start-up proper (rt_lifecycle.c): claims it for this thread and runs it, or returns the
 * state another thread left. Only vprof_rt_init_ calls it. */
int vprof_rt_start_up_(void) VPROF_RT_HIDDEN_;

/* Runs start-up once (options, real sync functions, clock, trace directory); safe to
 * call from any thread at any time, returns at once after the first call (one acquire
 * load, inline). Returns the state after start-up (VPROF_RT_ON / VPROF_RT_OFF, or
 * VPROF_RT_INITIALIZING when called re-entrantly or while another thread is in start-up). */
static inline int vprof_rt_init_(void) {
  int s = __atomic_load_n(&vprof_rt_process_.state, __ATOMIC_ACQUIRE);
  return s != VPROF_RT_UNINIT ? s : vprof_rt_start_up_();
}

static inline int vprof_rt_state_(void) {
  return __atomic_load_n(&vprof_rt_process_.state, __ATOMIC_ACQUIRE);
}

/* Registers the thread-exit close of streams (the key) and the fork child's reset
 * (pthread_atfork), once per process (rt_lifecycle.c). */
void vprof_rt_watch_threads_(void) VPROF_RT_HIDDEN_;

/* Resolves the real pthread/sem functions behind the interposers (rt_sync.c). */
void vprof_sync_resolve_(void) VPROF_RT_HIDDEN_;

/* Diagnostics to stderr under VPROF_VERBOSE=1 only. */
void vprof_rt_log_(const char *fmt, ...) VPROF_RT_HIDDEN_ __attribute__((format(printf, 1, 2)));

/* Writes one record with timestamp `ticks` on the calling thread: the probe hot path
 * with an injected clock. */
static VPROF_ALWAYS_INLINE_ void vprof_rt_emit_at_(unsigned kind, uint64_t arg, uint64_t ticks) {
  vprof_record *r = vprof_window_.cur;
  if (__builtin_expect(r == vprof_window_.end, 0)) {
    vprof_emit_slow_(kind, arg, ticks);
    return;
  }
  r->arg = arg;
  __atomic_store_n(&r->head, vprof_record_head(kind, ticks), __ATOMIC_RELEASE);
  vprof_window_.cur = r + 1;
}

#endif /* VPROF_RT_INTERNAL_H */
