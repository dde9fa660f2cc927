/* libvprof_rt's lifecycle: start-up (options, the real sync functions, the clock, the
 * trace directory), diagnostics, and what happens at a thread's exit (its stream closes),
 * in a fork child (it starts its own streams) and at process exit (every stream header
 * gets the refined clock and its end sample; the side files are written). */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_drain.h"
#include "rt_files.h"
#include "rt_stream.h"

vprof_rt_process vprof_rt_process_;

/* ---------------------------------------------------------------- diagnostics */

void vprof_rt_log_(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  int n, saved = errno;
  if (!vprof_rt_process_.opt.VERBOSE)
    return;
  n = snprintf(buf, sizeof buf, "vprof[%d]: ", (int)getpid());
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(2, buf, (size_t)n) < 0) { /* nothing to do: diagnostics are best effort */
  }
  errno = saved;
}

/* ---------------------------------------------------------------- thread exit, fork */

static void thread_exit(void *unused) {
  int saved = errno;
  (void)unused;
  vprof_rt_stream_close_(&vprof_rt_thread_, TS_CLOSED);
  errno = saved;
}

/* Copies the parent's labels so ids the child inherited in label descriptors resolve. */
static void fork_child(void) {
  vprof_rt_process *p = &vprof_rt_process_;
  pid_t parent = p->pid;
  char from[PATH_MAX], to[PATH_MAX];
  if (p->state != VPROF_RT_ON)
    return;
  vprof_rt_streams_after_fork_();
  p->pid = getpid();
  vprof_rt_clock_rebase_();
  snprintf(from, sizeof from, "%s/%d.labels", p->dir, (int)parent);
  snprintf(to, sizeof to, "%s/%d.labels", p->dir, (int)p->pid);
  vprof_rt_copy_file_(from, to, O_TRUNC);
}

void vprof_rt_watch_threads_(void) {
  vprof_rt_process *p = &vprof_rt_process_;
  p->key_ok = pthread_key_create(&p->key, thread_exit) == 0;
  pthread_atfork(NULL, NULL, fork_child);
}

/* ---------------------------------------------------------------- process exit */

__attribute__((destructor)) static void process_exit(void) {
  const vprof_rt_process *p = &vprof_rt_process_;
  uint32_t n;
  uint64_t hz, dropped = 0, end_ticks = 0, end_real = 0;
  int saved = errno;
  if (p->state != VPROF_RT_ON)
    return;
  /* The exiting thread's half on its way to the drain is appended before the streams
   * end: exit_group could otherwise stop the drain in the middle (the half stays readable
   * in the window, but the data region would end one half short). */
  if (vprof_rt_thread_.state == TS_OPEN || vprof_rt_thread_.state == TS_DROPPING)
    vprof_rt_drain_wait_(&vprof_rt_thread_);
  hz = vprof_rt_clock_refined_hz_();
  vprof_rt_clock_sample_(&end_ticks, &end_real);
  n = vprof_rt_streams_end_(hz, end_ticks, end_real, &dropped);
  if (n) {
    vprof_rt_write_maps_(p->dir);
    vprof_rt_write_units_(p->dir);
    vprof_rt_write_cpu_(p->dir);
  }
  vprof_rt_log_("exit: %u streams in %s, %llu records dropped, clock %llu Hz", n, p->dir,
                (unsigned long long)dropped, (unsigned long long)hz);
  errno = saved;
}

/* ---------------------------------------------------------------- start-up */

static int read_env_options(void) {
  char err[256];
  int bad = vprof_options_parse(&vprof_rt_process_.opt, (vprof_getenv_fn)getenv, err, sizeof err);
  if (bad)
    vprof_rt_log_("%s", err);
  return bad;
}

static void init_once(void) {
  vprof_rt_process *p = &vprof_rt_process_;
  vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  const vprof_rt_clock_base *c = &vprof_rt_clock_base_;
  char *dir;
  l->page = (size_t)sysconf(_SC_PAGESIZE);
  read_env_options();
  vprof_sync_resolve_();
  p->pid = getpid();
  if (p->opt.DISABLE) {
    vprof_rt_log_("VPROF_DISABLE=1: tracing off");
    __atomic_store_n(&p->state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    return;
  }
  vprof_rt_stream_sizes_(p->opt.WINDOW_KB * 1024ull, p->opt.MAX_THREAD_MB * 1024ull * 1024ull);
  vprof_rt_clock_start_();
  /* Made absolute now (the program may chdir), created by the first stream. */
  dir = vprof_rt_absolute_dir_(p->opt.TRACE_DIR);
  if (!dir) {
    vprof_rt_log_("trace directory %s unusable (%s): tracing off", p->opt.TRACE_DIR,
                  strerror(errno));
    __atomic_store_n(&p->state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    return;
  }
  p->dir = dir;
  vprof_rt_watch_threads_();
  __atomic_store_n(&vprof_rt_sync_on_, p->opt.SYNC, __ATOMIC_RELAXED);
  vprof_rt_log_("tracing to %s (clock %s, %llu Hz, window %llu B, limit %llu B, sync level %d)",
                p->dir, c->kind == VPROF_CLOCK_TSC ? "tsc" : "monotonic", (unsigned long long)c->hz,
                (unsigned long long)l->window_bytes, (unsigned long long)l->max_bytes, p->opt.SYNC);
  __atomic_store_n(&p->state, VPROF_RT_ON, __ATOMIC_RELEASE);
  vprof_rt_drain_start_();
}

int vprof_rt_start_up_(void) {
  int expected = VPROF_RT_UNINIT;
  if (!__atomic_compare_exchange_n(&vprof_rt_process_.state, &expected, VPROF_RT_INITIALIZING, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return expected; /* another thread is starting up: this event is not recorded */
  init_once();
  return __atomic_load_n(&vprof_rt_process_.state, __ATOMIC_ACQUIRE);
}

__attribute__((constructor(101))) static void process_start(void) {
  int saved = errno;
  vprof_rt_init_();
  errno = saved;
}
