/* libvprof_rt's per-thread streams: a thread's first record creates its stream file
 * (<pid>.<seq>.vpt: header page, window, data region), records go into one half of the
 * thread's MAP_SHARED window, a full half is handed to the drain (rt_drain.c), which
 * appends it to the data region and zeroes it, while the thread goes on in the other
 * half; the stream is closed at thread exit (its header at process exit). The slow path
 * of every probe (vprof_emit_slow_) lands here. */
#define _GNU_SOURCE
#include "rt_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_files.h"

/* Streams whose header stays mapped so process exit can close them and rewrite the
 * refined clock frequency. Streams past this many in one process are not touched at
 * exit (their thread-exit close still happens). */
#define VPROF_MAX_STREAMS 65536

/* The per-thread write window the inline probes use (declared in probe.h). */
__thread vprof_thread_window vprof_window_ VPROF_TLS_MODEL_ = {0, 0};

__thread rt_thread vprof_rt_thread_ VPROF_TLS_MODEL_;

vprof_rt_stream_layout vprof_rt_stream_layout_;

static vprof_stream_header *g_streams[VPROF_MAX_STREAMS];

static void window_clear(void) {
  vprof_window_.cur = NULL;
  vprof_window_.end = NULL;
}

void vprof_rt_stream_path_(char *buf, size_t n, const rt_thread *t) {
  snprintf(buf, n, "%s/%d.%u.vpt", t->dir, (int)vprof_rt_process_.pid, t->seq);
}

/* Creates the trace directory on the first stream; if that fails, tracing turns off
 * for the whole process (silently unless verbose). Returns 0 if the directory is usable. */
static int dir_ready(void) {
  vprof_rt_process *p = &vprof_rt_process_;
  int r = __atomic_load_n(&p->dir_state, __ATOMIC_ACQUIRE);
  if (r == 0) {
    r = vprof_rt_make_dirs_(p->dir) == 0 ? 1 : 2;
    if (r == 2) {
      int err = errno;
      vprof_rt_log_("trace directory %s unusable (%s): tracing off", p->dir, strerror(err));
      vprof_rt_note_unusable_dir_(p->dir, err);
      __atomic_store_n(&vprof_rt_sync_on_, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&p->state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&p->dir_state, r, __ATOMIC_RELEASE);
  }
  return r == 1 ? 0 : -1;
}

static uint64_t half_records(const rt_thread *t) { return t->win_records / 2; }

static vprof_record *half_at(const rt_thread *t, unsigned half) {
  return t->win + half * half_records(t);
}

/* The probes write into half `half` of the window from its first slot. */
static void window_use_half(rt_thread *t, unsigned half) {
  t->half = (unsigned char)half;
  vprof_window_.cur = half_at(t, half);
  vprof_window_.end = vprof_window_.cur + half_records(t);
}

/* Fills a new stream's header: the format, the process's clock, who writes it. */
static void header_init(vprof_stream_header *h, const rt_thread *t) {
  const vprof_rt_clock_base *c = &vprof_rt_clock_base_;
  vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  h->version = VPROF_TRACE_VERSION;
  h->header_size = VPROF_STREAM_HEADER_SIZE;
  h->record_size = VPROF_RECORD_SIZE;
  h->clock_kind = c->kind;
  h->ticks_per_second = c->hz;
  h->base_ticks = c->base_ticks;
  h->base_monotonic_ns = c->base_mono;
  h->base_realtime_ns = c->base_real;
  h->pid = (uint32_t)vprof_rt_process_.pid;
  h->tid = (uint32_t)gettid();
  h->ppid = (uint32_t)getppid();
  h->stream_seq = t->seq;
  {
    int level = __atomic_load_n(&vprof_rt_sync_on_, __ATOMIC_RELAXED);
    h->features = VPROF_FEATURE_FRAME_DEPTH | VPROF_FEATURE_STICKY_LABEL |
                  (level ? VPROF_FEATURE_SYNC_INTERPOSE : 0) |
                  (level == 1 ? VPROF_FEATURE_SYNC_EDGES_ONLY : 0);
  }
  h->window_records = t->win_records;
  h->window_offset = l->page;
  h->data_offset = t->data_offset;
  h->committed_records = 0;
  h->window_base = 0;
  h->flags = __atomic_exchange_n(&l->fork_child_pending, 0, __ATOMIC_RELAXED)
                 ? VPROF_STREAM_FORK_CHILD
                 : 0;
  pthread_getname_np(pthread_self(), h->thread_name, sizeof h->thread_name);
  memcpy(h->hostname, c->hostname, sizeof h->hostname);
  memcpy(h->magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE);
}

static void stream_open(rt_thread *t) {
  vprof_rt_process *p = &vprof_rt_process_;
  vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  char path[PATH_MAX];
  vprof_stream_header *h = MAP_FAILED;
  void *w = MAP_FAILED;
  uint64_t win_bytes = l->window_bytes;
  int fd;
  if (dir_ready() != 0)
    return;
  t->dir = p->dir;
  t->win_records = win_bytes / VPROF_RECORD_SIZE;
  t->data_offset = l->page + win_bytes;
  t->committed = 0;
  t->max_records = l->max_bytes / VPROF_RECORD_SIZE;
  t->job = (rt_drain_job){0};
  t->last_lap = 0;
  /* O_EXCL: after an exec the new image counts from 0 again under the same pid; the
   * streams written before the exec must survive, so taken names are skipped. */
  for (int tries = 0; tries < 4096; tries++) {
    t->seq = __atomic_fetch_add(&l->next_seq, 1, __ATOMIC_RELAXED);
    vprof_rt_stream_path_(path, sizeof path, t);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST)
      break;
  }
  if (fd < 0) {
    int err = errno;
    vprof_rt_log_("cannot create %s: %s; this thread records nothing", path, strerror(err));
    vprof_rt_note_unusable_dir_(p->dir, err);
    t->state = TS_FAILED;
    return;
  }
  /* Sparse: a thread that records little leaves a file of a few KiB on disk. */
  if (ftruncate(fd, (off_t)t->data_offset) == 0) {
    h = mmap(NULL, l->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    w = mmap(NULL, win_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)l->page);
  }
  close(fd);
  if (h == MAP_FAILED || w == MAP_FAILED) {
    vprof_rt_log_("cannot map %s: %s; this thread records nothing", path, strerror(errno));
    if (h != MAP_FAILED)
      munmap(h, l->page);
    if (w != MAP_FAILED)
      munmap(w, win_bytes);
    unlink(path);
    t->state = TS_FAILED;
    return;
  }
  t->hdr = h;
  t->win = (vprof_record *)w;
  header_init(h, t);
  if (t->seq < VPROF_MAX_STREAMS)
    __atomic_store_n(&g_streams[t->seq], h, __ATOMIC_RELEASE);
  if (p->key_ok)
    pthread_setspecific(p->key, (void *)1);
  vprof_rt_write_maps_(t->dir);
  vprof_rt_write_units_(t->dir);
  t->state = TS_OPEN;
  window_use_half(t, 0);
  vprof_rt_log_("stream %s opened (tid %d)", path, (int)h->tid);
}

/* Writes `records` records from `from` at the stream's record `index` of its data region.
 * Writing through write(2) from the same, already resident pages costs the kernel a
 * fraction of what faulting a fresh page-cache page in for every 256 records costs
 * (benchmarks/RESULTS.md, "Runtime"). Returns 0, or -1 with errno. */
static int data_write(const rt_thread *t, const vprof_record *from, uint64_t records,
                      uint64_t index) {
  char path[PATH_MAX];
  const char *p = (const char *)from;
  uint64_t left = records * VPROF_RECORD_SIZE, off = t->data_offset + index * VPROF_RECORD_SIZE;
  int fd, err = 0;
  /* Opened per append, not held: a program may close every descriptor it does not know
   * (daemons do) or run near its descriptor limit. */
  vprof_rt_stream_path_(path, sizeof path, t);
  fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  while (left > 0) {
    ssize_t k = pwrite(fd, p, (size_t)left, (off_t)off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      err = k < 0 ? errno : ENOSPC;
      break;
    }
    p += k;
    off += (uint64_t)k;
    left -= (uint64_t)k;
  }
  close(fd);
  errno = err;
  return err ? -1 : 0;
}

int vprof_rt_stream_append_(rt_thread *t, vprof_record *half, uint64_t records, uint64_t index) {
  if (data_write(t, half, records, index) != 0)
    return -1;
  __atomic_store_n(&t->hdr->committed_records, index + records, __ATOMIC_RELEASE);
  memset(half, 0, records * VPROF_RECORD_SIZE);
  __atomic_store_n(&t->hdr->window_base, index + records, __ATOMIC_RELEASE);
  return 0;
}

/* Records past the size limit, or after a failed append, are counted only. */
static void stream_drop(rt_thread *t, const char *why) {
  window_clear();
  t->state = TS_DROPPING;
  vprof_rt_log_("stream %d.%u: %s; further records are counted as dropped",
                (int)vprof_rt_process_.pid, t->seq, why);
}

/* The appends the size limit still allows: the data region and a whole window of records
 * that stay in place must fit. */
static int append_fits(const rt_thread *t) {
  return !t->max_records || t->committed + half_records(t) + t->win_records <= t->max_records;
}

/* The half being written is full: hand it over and go on in the other half, once the
 * other's append is done (it is zeroed then). At the size limit the full half stays in
 * place and the other half is the last lap; after it, records are dropped. Returns 1 if
 * the thread stalled: it waited for the drain or appended itself. */
static int stream_turn(rt_thread *t) {
  unsigned full = t->half, next = 1u - t->half;
  int stalled = vprof_rt_drain_wait_(t);
  if (t->job.err) {
    stream_drop(t, strerror(t->job.err));
    return stalled;
  }
  if (!append_fits(t) || t->last_lap) {
    if (t->last_lap) {
      stream_drop(t, "size limit reached");
      return stalled;
    }
    t->last_lap = 1;
    window_use_half(t, next);
    return stalled;
  }
  if (vprof_rt_drain_submit_(t, half_at(t, full), half_records(t), t->committed)) {
    stalled = 1; /* appended here */
    if (t->job.err) {
      stream_drop(t, strerror(t->job.err));
      return stalled;
    }
  }
  t->committed += half_records(t);
  window_use_half(t, next);
  return stalled;
}

/* Stores an end clock sample into a stream header: the realtime first, so that a reader
 * that sees end_ticks sees its pair. */
static void header_end_sample(vprof_stream_header *h, uint64_t ticks, uint64_t real) {
  __atomic_store_n(&h->end_realtime_ns, real, __ATOMIC_RELAXED);
  __atomic_store_n(&h->end_ticks, ticks, __ATOMIC_RELEASE);
}

/* The window's records stay in the file (they are the stream's last records); the half
 * on its way is appended first, since the window is unmapped after. */
void vprof_rt_stream_close_(rt_thread *t, unsigned char next_state) {
  if (t->state == TS_OPEN || t->state == TS_DROPPING) {
    uint64_t ticks = 0, real = 0;
    vprof_rt_drain_settle_(t);
    vprof_rt_clock_sample_(&ticks, &real);
    header_end_sample(t->hdr, ticks, real);
    __atomic_fetch_or(&t->hdr->flags, VPROF_STREAM_CLOSED, __ATOMIC_RELEASE);
    if (t->win)
      munmap(t->win, t->win_records * VPROF_RECORD_SIZE);
    t->win = NULL;
    window_clear();
    t->state = next_state;
  }
}

/* The stall of making room, [from, to), as a frame of the runtime's own (VPROF_SITE_PROFILER)
 * at the depth of the runtime's frame, deeper than every frame of the program's. */
static void profiler_frame(uint64_t from, uint64_t to) {
  uint64_t depth = (uint32_t)(0u - (uintptr_t)__builtin_frame_address(0));
  uint64_t arg = (uint64_t)VPROF_SITE_PROFILER | (depth << 32);
  vprof_rt_emit_at_(VPROF_REC_ENTER, arg, from);
  vprof_rt_emit_at_(VPROF_REC_EXIT, arg, to);
}

void vprof_rt_release_profiler_frame_(rt_thread *t) {
  if (t->state == TS_OPEN && !t->exact)
    profiler_frame(t->held_from, t->held_to);
  t->held_to = 0;
}

void vprof_emit_slow_(unsigned kind, uint64_t arg, uint64_t ticks) {
  rt_thread *t = &vprof_rt_thread_;
  int saved, turned = 0, stalled = 0;
  uint64_t from, to;
  if (t->busy)
    return;
  if (t->state == TS_DROPPING || t->state == TS_CLOSED) {
    __atomic_fetch_add(&t->hdr->dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  if (t->state == TS_FAILED)
    return;
  saved = errno;
  t->busy = 1;
  from = vprof_clock_();
  if (t->state == TS_NONE) {
    if (vprof_rt_init_() == VPROF_RT_ON)
      stream_open(t);
    stalled = 1;
  } else if (t->state == TS_OPEN) {
    stalled = stream_turn(t);
    turned = 1;
  }
  to = vprof_clock_();
  t->busy = 0;
  errno = saved;
  if (t->state == TS_OPEN && vprof_window_.cur != vprof_window_.end) {
    /* the pending record first: its time is earlier; the window has room for all three */
    vprof_rt_emit_at_(kind, arg, ticks);
    from = from > ticks ? from : ticks;
    if (stalled && !t->exact) {
      if (t->hold) {
        t->held_from = from;
        t->held_to = to;
      } else
        profiler_frame(from, to);
    }
    if (turned)
      vprof_rt_clock_record_if_due_();
  } else if (t->state == TS_DROPPING)
    __atomic_fetch_add(&t->hdr->dropped, 1, __ATOMIC_RELAXED);
}

void vprof_emit_slow_now_(unsigned kind, uint64_t arg) {
  rt_thread *t = &vprof_rt_thread_;
  /* tracing off (VPROF_DISABLE, no usable trace directory) or this thread's stream failed:
   * nothing to write, so no clock read either */
  if (t->state == TS_FAILED || (t->state == TS_NONE && vprof_rt_init_() != VPROF_RT_ON))
    return;
  /* the event's time is now, before any flush that makes room for it */
  vprof_emit_slow_(kind, arg, vprof_clock_());
}

void vprof_rt_stream_sizes_(uint64_t window_bytes, uint64_t max_bytes) {
  vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  uint64_t w = (window_bytes + l->page - 1) / l->page * l->page;
  if (max_bytes && w > max_bytes / 2)
    w = max_bytes / 2 / l->page * l->page;
  if (w < l->page)
    w = l->page;
  l->window_bytes = w;
  l->max_bytes = max_bytes;
}

void vprof_rt_streams_after_fork_(void) {
  rt_thread *t = &vprof_rt_thread_;
  vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  uint32_t i, n;
  /* The child must never write into the parent's mappings. */
  window_clear();
  if (t->win)
    munmap(t->win, t->win_records * VPROF_RECORD_SIZE);
  *t = (rt_thread){0};
  vprof_rt_drain_after_fork_();
  n = l->next_seq < VPROF_MAX_STREAMS ? l->next_seq : VPROF_MAX_STREAMS;
  for (i = 0; i < n; i++) {
    if (g_streams[i])
      munmap(g_streams[i], l->page);
    g_streams[i] = NULL;
  }
  l->next_seq = 0;
  l->fork_child_pending = 1;
}

uint32_t vprof_rt_streams_end_(uint64_t hz, uint64_t end_ticks, uint64_t end_real,
                               uint64_t *dropped) {
  const vprof_rt_stream_layout *l = &vprof_rt_stream_layout_;
  uint32_t i, n = l->next_seq < VPROF_MAX_STREAMS ? l->next_seq : VPROF_MAX_STREAMS;
  for (i = 0; i < n; i++) {
    vprof_stream_header *h = __atomic_load_n(&g_streams[i], __ATOMIC_ACQUIRE);
    if (!h)
      continue;
    h->ticks_per_second = hz;
    header_end_sample(h, end_ticks, end_real);
    __atomic_fetch_or(&h->flags, VPROF_STREAM_CLOSED, __ATOMIC_RELEASE);
    *dropped += __atomic_load_n(&h->dropped, __ATOMIC_RELAXED);
  }
  return n;
}
