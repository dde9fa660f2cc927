/* libvprof_rt internals shared by its C files: global state, the record writer with an
 * injected timestamp, diagnostics. Never part of the installed headers. */
#ifndef VPROF_RT_INTERNAL_H
#define VPROF_RT_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include <vprof/probe.h>
#include <vprof/trace_format.h>

#include "options.h"

#define VPROF_RT_HIDDEN_ __attribute__((visibility("hidden")))

/* Process-wide state of the runtime (one per process; reset in a fork child). */
enum { VPROF_RT_UNINIT = 0, VPROF_RT_INITIALIZING = 1, VPROF_RT_ON = 2, VPROF_RT_OFF = 3 };

/* The sync level (VPROF_SYNC: 0 off, 1 edge-forming records only, 2 every call) while
 * sync events are recorded, 0 otherwise; read (relaxed) by every interposed call. */
extern int vprof_rt_sync_on_ VPROF_RT_HIDDEN_;

/* Runs start-up once (options, real sync functions, clock, trace directory); safe to
 * call from any thread at any time, returns at once after the first call. Returns the
 * state after start-up (VPROF_RT_ON / VPROF_RT_OFF, or VPROF_RT_INITIALIZING when called
 * re-entrantly or while another thread is in start-up). */
int vprof_rt_init_(void) VPROF_RT_HIDDEN_;
int vprof_rt_state_(void) VPROF_RT_HIDDEN_;

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
