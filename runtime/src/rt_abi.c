/* libvprof_rt's C ABI: the annotations of <vprof/vprof.h> (intervals, labels, hand-offs,
 * messages, custom waits) and the testing hooks of <vprof/rt_testing.h>. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <vprof/rt_testing.h>
#include <vprof/vprof.h>

#include "rt_clock.h"
#include "rt_files.h"
#include "rt_stream.h"

/* Interval numbers are taken from the process-wide counter a block at a time: one atomic
 * add per 1024 intervals of a thread instead of one per interval, whose cache line every
 * thread beginning intervals would otherwise pass around. */
#define VPROF_ID_BLOCK 1024

static uint64_t g_next_interval; /* the process's interval numbers handed out in blocks */
static uint32_t g_next_label;    /* the last label id given in this process */

/* ---------------------------------------------------------------- annotations */

/* Returns the label's id, registering it (and writing its line) on first use. */
static uint32_t label_id(vprof_label *label) {
  char path[PATH_MAX], line[320];
  uint32_t id = __atomic_load_n(&label->id, __ATOMIC_ACQUIRE), expected = 0, mine;
  size_t i, n;
  int fd, saved;
  if (id)
    return id;
  mine = __atomic_add_fetch(&g_next_label, 1, __ATOMIC_RELAXED);
  if (!__atomic_compare_exchange_n(&label->id, &expected, mine, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return expected; /* another thread registered it first */
  saved = errno;
  n = (size_t)snprintf(line, sizeof line, "%u\t", mine);
  for (i = 0; label->name && label->name[i] && n < sizeof line - 2; i++) {
    char c = label->name[i];
    line[n++] = (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  }
  line[n++] = '\n';
  snprintf(path, sizeof path, "%s/%d.labels", vprof_rt_process_.dir, (int)vprof_rt_process_.pid);
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (write(fd, line, n) != (ssize_t)n)
      vprof_rt_log_("cannot write %s", path);
    close(fd);
  }
  errno = saved;
  return mine;
}

/* A LABEL only when the thread's label changes (VPROF_FEATURE_STICKY_LABEL): a server
 * labelling every request alike writes one label record per thread, not one per interval. */
static void begin_common(uint64_t id, vprof_label *label) {
  uint64_t t = vprof_clock_();
  uint32_t lid;
  /* the LABEL follows its BEGIN at the same time: a flush's profiler frame comes after both */
  vprof_rt_hold_profiler_frame_(1);
  vprof_rt_emit_at_(VPROF_REC_INTERVAL_BEGIN, id, t);
  if (vprof_rt_state_() == VPROF_RT_ON) {
    lid = label ? label_id(label) : 0;
    if (lid != vprof_rt_thread_.label) {
      vprof_rt_emit_at_(VPROF_REC_LABEL, lid, t);
      vprof_rt_thread_.label = lid;
    }
  }
  vprof_rt_hold_profiler_frame_(0);
}

uint64_t vprof_interval_begin(vprof_label *label) {
  rt_thread *t = &vprof_rt_thread_;
  uint64_t n, id;
  vprof_rt_init_();
  if (t->next_id == t->id_end) {
    t->next_id = __atomic_fetch_add(&g_next_interval, VPROF_ID_BLOCK, __ATOMIC_RELAXED) + 1;
    t->id_end = t->next_id + VPROF_ID_BLOCK;
  }
  n = t->next_id++;
  /* pid in the high 24 bits: unique across the processes of a run */
  id = ((uint64_t)(uint32_t)vprof_rt_process_.pid << 40) | (n & ((1ull << 40) - 1));
  begin_common(id, label);
  return id;
}

void vprof_interval_begin_id(uint64_t id, vprof_label *label) { begin_common(id, label); }
void vprof_interval_end(uint64_t id) { vprof_emit_(VPROF_REC_INTERVAL_END, id); }
void vprof_interval_attach(uint64_t id) { vprof_emit_(VPROF_REC_ATTACH, id); }
void vprof_interval_detach(uint64_t id) { vprof_emit_(VPROF_REC_DETACH, id); }
void vprof_handoff_send(const void *obj) {
  vprof_emit_(VPROF_REC_HANDOFF_SEND, (uint64_t)(uintptr_t)obj);
}
void vprof_handoff_recv(const void *obj) {
  vprof_emit_(VPROF_REC_HANDOFF_RECV, (uint64_t)(uintptr_t)obj);
}
void vprof_msg_send(uint64_t key) { vprof_emit_(VPROF_REC_MSG_SEND, key); }
void vprof_msg_recv(uint64_t key) { vprof_emit_(VPROF_REC_MSG_RECV, key); }
void vprof_wait_begin(const void *obj) {
  vprof_emit_(VPROF_REC_WAIT_BEGIN, (uint64_t)(uintptr_t)obj);
}
void vprof_wait_end(const void *obj) { vprof_emit_(VPROF_REC_WAIT_END, (uint64_t)(uintptr_t)obj); }
void vprof_wake(const void *obj) { vprof_emit_(VPROF_REC_WAKE, (uint64_t)(uintptr_t)obj); }

/* ---------------------------------------------------------------- testing hooks */

void vprof_rt_emit_at(unsigned kind, uint64_t arg, uint64_t ticks) {
  /* the stall's real clock would not fit an injected timeline: no profiler frame */
  vprof_rt_thread_.exact = 1;
  vprof_rt_emit_at_(kind, arg, ticks);
  vprof_rt_thread_.exact = 0;
}

int vprof_rt_close_thread_stream(char *path, size_t n) {
  rt_thread *t = &vprof_rt_thread_;
  if (t->state != TS_OPEN && t->state != TS_DROPPING)
    return -1;
  if (path && n)
    vprof_rt_stream_path_(path, n, t);
  vprof_rt_stream_close_(t, TS_NONE);
  return 0;
}

int vprof_rt_set_trace_dir(const char *dir) {
  vprof_rt_process *p = &vprof_rt_process_;
  const vprof_options *opt = &p->opt;
  char *abs;
  int s = vprof_rt_init_();
  if (opt->DISABLE || s == VPROF_RT_INITIALIZING)
    return -1;
  abs = vprof_rt_absolute_dir_(dir);
  if (!abs || vprof_rt_make_dirs_(abs) != 0) {
    free(abs);
    return -1;
  }
  p->dir = abs; /* the previous string may still be used by open streams: kept */
  __atomic_store_n(&p->dir_state, 1, __ATOMIC_RELEASE);
  if (s == VPROF_RT_OFF) {
    if (!vprof_rt_stream_layout_.window_bytes)
      vprof_rt_stream_sizes_(opt->WINDOW_KB * 1024ull, opt->MAX_THREAD_MB * 1024ull * 1024ull);
    if (!vprof_rt_clock_base_.hz)
      vprof_rt_clock_start_();
    if (!p->key_ok)
      vprof_rt_watch_threads_();
    __atomic_store_n(&vprof_rt_sync_on_, opt->SYNC, __ATOMIC_RELAXED);
    __atomic_store_n(&p->state, VPROF_RT_ON, __ATOMIC_RELEASE);
  }
  if (vprof_rt_thread_.state == TS_FAILED)
    vprof_rt_thread_.state = TS_NONE;
  return 0;
}

void vprof_rt_set_stream_limits(uint64_t window_bytes, uint64_t max_bytes) {
  vprof_rt_init_();
  if (!vprof_rt_stream_layout_.page)
    vprof_rt_stream_layout_.page = (size_t)sysconf(_SC_PAGESIZE);
  vprof_rt_stream_sizes_(window_bytes, max_bytes);
}

int vprof_rt_set_sync_level(int level) {
  if (vprof_rt_init_() != VPROF_RT_ON)
    return -1;
  return __atomic_exchange_n(&vprof_rt_sync_on_,
                             level < 0   ? 0
                             : level > 2 ? 2
                                         : level,
                             __ATOMIC_RELAXED);
}

void vprof_rt_clock(uint64_t *base_ticks, uint64_t *ticks_per_second) {
  vprof_rt_init_();
  if (base_ticks)
    *base_ticks = vprof_rt_clock_base_.base_ticks;
  if (ticks_per_second)
    *ticks_per_second = vprof_rt_clock_base_.hz;
}

int vprof_rt_enabled(void) { return vprof_rt_init_() == VPROF_RT_ON; }
