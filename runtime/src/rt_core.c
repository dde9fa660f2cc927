/* libvprof_rt core: start-up, the trace clock, per-thread streams written through
 * MAP_SHARED windows, labels, the maps copy, fork/thread-exit/process-exit handling, the
 * annotation C ABI of <vprof/vprof.h> and the testing hooks of <vprof/rt_testing.h>. */
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <vprof/rt_testing.h>
#include <vprof/vprof.h>

/* The per-thread write window the inline probes use (declared in probe.h). */
__thread vprof_thread_window vprof_window_ VPROF_TLS_MODEL_ = {0, 0};

/* Streams whose header stays mapped so process exit can close them and rewrite the
 * refined clock frequency. Streams past this many in one process are not touched at
 * exit (their thread-exit close still happens). */
#define VPROF_MAX_STREAMS 65536
/* Instrumented translation units a process can name in <pid>.units. */
#define VPROF_MAX_UNITS 16384

enum thread_state {
  TS_NONE = 0, /* no stream yet: the next record opens one */
  TS_OPEN,     /* the thread window points into the stream's window */
  TS_DROPPING, /* size limit reached (or a flush failed): records are counted only */
  TS_CLOSED,   /* thread exited: late records are counted as dropped */
  TS_FAILED    /* the stream could not be created: this thread records nothing */
};

typedef struct rt_thread {
  vprof_stream_header *hdr; /* header page, mapped until process exit */
  vprof_record *win;        /* the write window: a fixed, reused MAP_SHARED range */
  const char *dir;          /* directory of this stream (never freed) */
  uint64_t win_records;     /* records the window holds */
  uint64_t data_offset;     /* file offset of the data region */
  uint64_t committed;       /* records flushed into the data region */
  uint64_t max_records;     /* 0 = unlimited */
  uint32_t seq;
  unsigned char state;
  unsigned char busy; /* inside the slow path: nested records are ignored */
  uint32_t label;     /* the label of this stream's last LABEL record (0: none) */
  uint64_t next_id;   /* the thread's block of interval numbers: next_id .. id_end - 1 */
  uint64_t id_end;
} rt_thread;

/* Interval numbers are taken from the process-wide counter a block at a time: one atomic
 * add per 1024 intervals of a thread instead of one per interval, whose cache line every
 * thread beginning intervals would otherwise pass around. */
#define VPROF_ID_BLOCK 1024

static __thread rt_thread t_rt VPROF_TLS_MODEL_;

int vprof_rt_sync_on_;

static struct {
  int state;
  vprof_options opt;
  const char *dir;
  int dir_state;         /* 0 not yet created, 1 usable, 2 unusable */
  uint64_t window_bytes; /* a whole number of pages */
  uint64_t max_bytes;
  size_t page;
  uint32_t clock_kind;
  uint64_t hz;
  uint64_t base_ticks, base_mono, base_real;
  uint64_t calib_ns;
  char hostname[64];          /* gethostname() at clock start, NUL-terminated */
  uint64_t sample_period;     /* ticks between CLOCK records (0: none) */
  uint64_t last_sample_ticks; /* clock value of the process's last CLOCK record */
  pid_t pid;
  uint32_t next_seq;
  uint64_t next_interval;
  uint32_t next_label;
  int fork_child_pending;
  pthread_key_t key;
  int key_ok;
} g;

static vprof_stream_header *g_streams[VPROF_MAX_STREAMS];

/* ---------------------------------------------------------------- diagnostics */

void vprof_rt_log_(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  int n, saved = errno;
  if (!g.opt.VERBOSE)
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

/* A process that cannot write its trace directory (a server running as another user, a
 * path that is not a directory) records nothing and must stay silent, but the loss must not
 * go unnoticed: it leaves one small note in the system's temporary directory,
 * $TMPDIR/vprof-unusable-trace-dir.<pid> ("pid uid errno dir"), which `vprof loop` and
 * `vprof run` read after the workload to say which process and which setting. Once per
 * process; best effort. */
static void note_unusable_dir(const char *dir, int err) {
  static int noted;
  char path[PATH_MAX], text[PATH_MAX + 64];
  const char *tmp = getenv("TMPDIR");
  int fd, n;
  if (__atomic_exchange_n(&noted, 1, __ATOMIC_ACQ_REL))
    return;
  snprintf(path, sizeof path, "%s/vprof-unusable-trace-dir.%d", tmp && *tmp ? tmp : "/tmp",
           (int)getpid());
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return;
  n = snprintf(text, sizeof text, "%d %d %d %s\n", (int)getpid(), (int)getuid(), err, dir);
  if (n > 0 && write(fd, text, (size_t)n) < 0) { /* best effort */
  }
  close(fd);
}

/* ---------------------------------------------------------------- clock */

static uint64_t mono_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads the clock and CLOCK_MONOTONIC as one pair: the clock between two monotonic
 * reads, the tightest of a few tries (a preemption between the reads would skew the
 * pair by milliseconds; on a loaded machine that happens), monotonic = the midpoint. */
static void clock_pair(uint64_t *ticks, uint64_t *mono) {
  uint64_t best = UINT64_MAX;
  int i;
  for (i = 0; i < 64 && best > 2000; i++) {
    uint64_t a = mono_ns(CLOCK_MONOTONIC), t = vprof_clock_(), b = mono_ns(CLOCK_MONOTONIC);
    if (b - a < best) {
      best = b - a;
      *ticks = t;
      *mono = a + (b - a) / 2;
    }
  }
}

/* CLOCK_REALTIME in ns as this process reports it: shifted by VPROF_CLOCK_OFFSET_NS (a
 * testing aid that makes a host's wall clock look off). */
static uint64_t realtime_ns(void) {
  return mono_ns(CLOCK_REALTIME) + (uint64_t)g.opt.CLOCK_OFFSET_NS;
}

/* A clock sample: the clock and CLOCK_REALTIME as one pair, read the way clock_pair
 * reads the monotonic pair (the tightest of a few tries, realtime = the midpoint), so
 * that the analyzer can map this host's clock to wall time within a microsecond. */
static void clock_sample(uint64_t *ticks, uint64_t *real) {
  uint64_t best = UINT64_MAX;
  int i;
  for (i = 0; i < 16 && best > 2000; i++) {
    uint64_t a = realtime_ns(), t = vprof_clock_(), b = realtime_ns();
    if (b - a < best) {
      best = b - a;
      *ticks = t;
      *real = a + (b - a) / 2;
    }
  }
}

/* Takes the process's clock base and, for the TSC, measures its frequency against
 * CLOCK_MONOTONIC over opt.CALIBRATE_US (busy wait between two tight pairs). */
static void clock_start(void) {
#if defined(__x86_64__)
  uint64_t m0, m1, t0, t1, span;
  g.clock_kind = VPROF_CLOCK_TSC;
  clock_pair(&t0, &m0);
  g.base_real = realtime_ns();
  g.base_ticks = t0;
  g.base_mono = m0;
  span = g.opt.CALIBRATE_US * 1000ull;
  if (span < 100000)
    span = 100000; /* below 0.1 ms the estimate is too coarse */
  while (mono_ns(CLOCK_MONOTONIC) - m0 < span) {
  }
  clock_pair(&t1, &m1);
  g.calib_ns = m1 - m0;
  g.hz = (uint64_t)((double)(t1 - t0) * 1e9 / (double)(m1 - m0) + 0.5);
#elif defined(__aarch64__)
  uint64_t f;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
  g.clock_kind = VPROF_CLOCK_TSC; /* a constant-rate counter; frequency is exact */
  g.hz = f;
  g.base_mono = mono_ns(CLOCK_MONOTONIC);
  g.base_ticks = vprof_clock_();
  g.base_real = realtime_ns();
  g.calib_ns = 0;
#else
  g.clock_kind = VPROF_CLOCK_MONOTONIC;
  g.hz = 1000000000ull;
  g.base_ticks = vprof_clock_();
  g.base_mono = g.base_ticks;
  g.base_real = realtime_ns();
  g.calib_ns = 0;
#endif
  /* the host whose clock this is (empty if it cannot be read) */
  if (gethostname(g.hostname, sizeof g.hostname - 1) != 0)
    g.hostname[0] = '\0';
  g.sample_period = (uint64_t)((double)g.opt.CLOCK_SAMPLE_MS * (double)g.hz / 1e3);
  g.last_sample_ticks = g.base_ticks;
}

/* The frequency over the whole run so far, if the run is long enough to beat the
 * start-up estimate (ten times its span); else the start-up estimate. */
static uint64_t clock_refined_hz(void) {
#if defined(__x86_64__)
  uint64_t m = 0, t = 0;
  clock_pair(&t, &m);
  if (m - g.base_mono > 10 * g.calib_ns && t > g.base_ticks)
    return (uint64_t)((double)(t - g.base_ticks) * 1e9 / (double)(m - g.base_mono) + 0.5);
#endif
  return g.hz;
}

/* ---------------------------------------------------------------- files */

/* mkdir -p; returns 0 if `dir` is a writable directory afterwards. */
static int make_dirs(const char *dir) {
  char p[PATH_MAX];
  size_t i, n = strlen(dir);
  if (n == 0 || n >= sizeof p)
    return -1;
  memcpy(p, dir, n + 1);
  for (i = 1; i <= n; i++) {
    if (p[i] == '/' || p[i] == '\0') {
      char c = p[i];
      p[i] = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST)
        return -1;
      p[i] = c;
    }
  }
  return access(dir, W_OK | X_OK);
}

/* Returns a malloc'ed absolute form of `dir` (relative to the current directory). */
static char *absolute_dir(const char *dir) {
  char cwd[PATH_MAX], *out;
  size_t n;
  if (dir[0] == '/')
    return strdup(dir);
  while (dir[0] == '.' && dir[1] == '/')
    dir += 2;
  if (!getcwd(cwd, sizeof cwd))
    return NULL;
  n = strlen(cwd) + strlen(dir) + 2;
  out = malloc(n);
  if (out)
    snprintf(out, n, "%s/%s", cwd, dir);
  return out;
}

static int copy_file(const char *from, const char *to, int flags) {
  char buf[4096];
  ssize_t k;
  int in = open(from, O_RDONLY | O_CLOEXEC), out;
  if (in < 0)
    return -1;
  out = open(to, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (out < 0) {
    close(in);
    return -1;
  }
  while ((k = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)k) != k)
      break;
  close(in);
  close(out);
  return 0;
}

/* The side files of a process (<dir>/<pid>.<ext>) are written to a temporary file and
 * renamed, so that a reader never sees a half-written one: the two paths. */
static void side_file_paths(const char *dir, const char *ext, char *tmp, char *dst) {
  snprintf(tmp, PATH_MAX, "%s/.%d.%s.%d.tmp", dir, (int)g.pid, ext, (int)gettid());
  snprintf(dst, PATH_MAX, "%s/%d.%s", dir, (int)g.pid, ext);
}

/* Closes a side file written through `fd`: renamed into place when every write went
 * through (`ok`), else removed. */
static void side_file_commit(int fd, int ok, const char *tmp, const char *dst) {
  if (close(fd) != 0)
    ok = 0;
  if (ok)
    rename(tmp, dst);
  else
    unlink(tmp);
}

/* Writes <dir>/<pid>.maps from /proc/self/maps. */
static void write_maps(const char *dir) {
  char tmp[PATH_MAX], dst[PATH_MAX];
  side_file_paths(dir, "maps", tmp, dst);
  if (copy_file("/proc/self/maps", tmp, O_TRUNC) == 0)
    rename(tmp, dst);
}

/* ---------------------------------------------------------------- units */

/* The instrumented translation units registered by their constructors. Registration only
 * stores pointers (it may run before the runtime's own start-up); the file is written
 * with the maps: when a stream is created and at exit. */
typedef struct rt_unit {
  const char *workspace_id, *plan_stamp, *source;
  int iteration;
} rt_unit;

static rt_unit g_units[VPROF_MAX_UNITS];
static unsigned g_unit_count;

void vprof_register_unit(const char *workspace_id, const char *plan_stamp, int iteration,
                         const char *source) {
  unsigned i = __atomic_fetch_add(&g_unit_count, 1, __ATOMIC_ACQ_REL);
  if (i >= VPROF_MAX_UNITS || !workspace_id || !plan_stamp || !source)
    return;
  g_units[i].workspace_id = workspace_id;
  g_units[i].plan_stamp = plan_stamp;
  g_units[i].iteration = iteration;
  __atomic_store_n(&g_units[i].source, source, __ATOMIC_RELEASE); /* the entry is complete */
}

/* Writes <dir>/<pid>.units: one line "workspace\tstamp\titeration\tsource" per unit,
 * then "overflow\t<count>" if more registered than the table holds. No stdio streams:
 * this runs on the probe's slow path, wherever a thread's first event happens. */
static void write_units(const char *dir) {
  char tmp[PATH_MAX], dst[PATH_MAX], line[PATH_MAX + 128];
  unsigned i, n = __atomic_load_n(&g_unit_count, __ATOMIC_ACQUIRE);
  int fd, len, ok = 1;
  if (n == 0)
    return;
  side_file_paths(dir, "units", tmp, dst);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  for (i = 0; ok && i < n && i < VPROF_MAX_UNITS; i++) {
    rt_unit *u = &g_units[i];
    if (!__atomic_load_n(&u->source, __ATOMIC_ACQUIRE))
      continue;
    len = snprintf(line, sizeof line, "%s\t%s\t%d\t%s\n", u->workspace_id, u->plan_stamp,
                   u->iteration, u->source);
    ok = len > 0 && (size_t)len < sizeof line && write(fd, line, (size_t)len) == len;
  }
  if (ok && n > VPROF_MAX_UNITS) {
    len = snprintf(line, sizeof line, "overflow\t%u\n", n);
    ok = write(fd, line, (size_t)len) == len;
  }
  side_file_commit(fd, ok, tmp, dst);
}

/* Writes <dir>/<pid>.cpu at exit: the process's CPU time, "<user ns>\t<system ns>\n"
 * (getrusage, every thread), stored with the analysed run (analysis_runs.cpu_ns). */
static void write_cpu(const char *dir) {
  char tmp[PATH_MAX], dst[PATH_MAX], line[64];
  struct rusage ru;
  int fd, len;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return;
  side_file_paths(dir, "cpu", tmp, dst);
  len = snprintf(line, sizeof line, "%llu\t%llu\n",
                 (unsigned long long)ru.ru_utime.tv_sec * 1000000000ull +
                     (unsigned long long)ru.ru_utime.tv_usec * 1000ull,
                 (unsigned long long)ru.ru_stime.tv_sec * 1000000000ull +
                     (unsigned long long)ru.ru_stime.tv_usec * 1000ull);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  side_file_commit(fd, len > 0 && write(fd, line, (size_t)len) == len, tmp, dst);
}

/* ---------------------------------------------------------------- streams */

static void window_clear(void) {
  vprof_window_.cur = NULL;
  vprof_window_.end = NULL;
}

static void stream_path(char *buf, size_t n, const rt_thread *t) {
  snprintf(buf, n, "%s/%d.%u.vpt", t->dir, (int)g.pid, t->seq);
}

/* Creates the trace directory on the first stream; if that fails, tracing turns off
 * for the whole process (silently unless verbose). Returns 0 if the directory is usable. */
static int dir_ready(void) {
  int r = __atomic_load_n(&g.dir_state, __ATOMIC_ACQUIRE);
  if (r == 0) {
    r = make_dirs(g.dir) == 0 ? 1 : 2;
    if (r == 2) {
      int err = errno;
      vprof_rt_log_("trace directory %s unusable (%s): tracing off", g.dir, strerror(err));
      note_unusable_dir(g.dir, err);
      __atomic_store_n(&vprof_rt_sync_on_, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&g.state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&g.dir_state, r, __ATOMIC_RELEASE);
  }
  return r == 1 ? 0 : -1;
}

static void window_reset(rt_thread *t) {
  vprof_window_.cur = t->win;
  vprof_window_.end = t->win + t->win_records;
}

static void stream_open(rt_thread *t) {
  char path[PATH_MAX];
  vprof_stream_header *h = MAP_FAILED;
  void *w = MAP_FAILED;
  uint64_t win_bytes = g.window_bytes;
  int fd;
  if (dir_ready() != 0)
    return;
  t->dir = g.dir;
  t->win_records = win_bytes / VPROF_RECORD_SIZE;
  t->data_offset = g.page + win_bytes;
  t->committed = 0;
  t->max_records = g.max_bytes / VPROF_RECORD_SIZE;
  /* O_EXCL: after an exec the new image counts from 0 again under the same pid; the
   * streams written before the exec must survive, so taken names are skipped. */
  for (int tries = 0; tries < 4096; tries++) {
    t->seq = __atomic_fetch_add(&g.next_seq, 1, __ATOMIC_RELAXED);
    stream_path(path, sizeof path, t);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST)
      break;
  }
  if (fd < 0) {
    int err = errno;
    vprof_rt_log_("cannot create %s: %s; this thread records nothing", path, strerror(err));
    note_unusable_dir(g.dir, err);
    t->state = TS_FAILED;
    return;
  }
  /* Sparse: a thread that records little leaves a file of a few KiB on disk. */
  if (ftruncate(fd, (off_t)t->data_offset) == 0) {
    h = mmap(NULL, g.page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    w = mmap(NULL, win_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)g.page);
  }
  close(fd);
  if (h == MAP_FAILED || w == MAP_FAILED) {
    vprof_rt_log_("cannot map %s: %s; this thread records nothing", path, strerror(errno));
    if (h != MAP_FAILED)
      munmap(h, g.page);
    if (w != MAP_FAILED)
      munmap(w, win_bytes);
    unlink(path);
    t->state = TS_FAILED;
    return;
  }
  t->hdr = h;
  t->win = (vprof_record *)w;
  h->version = VPROF_TRACE_VERSION;
  h->header_size = VPROF_STREAM_HEADER_SIZE;
  h->record_size = VPROF_RECORD_SIZE;
  h->clock_kind = g.clock_kind;
  h->ticks_per_second = g.hz;
  h->base_ticks = g.base_ticks;
  h->base_monotonic_ns = g.base_mono;
  h->base_realtime_ns = g.base_real;
  h->pid = (uint32_t)g.pid;
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
  h->window_offset = g.page;
  h->data_offset = t->data_offset;
  h->committed_records = 0;
  h->window_base = 0;
  h->flags =
      __atomic_exchange_n(&g.fork_child_pending, 0, __ATOMIC_RELAXED) ? VPROF_STREAM_FORK_CHILD : 0;
  pthread_getname_np(pthread_self(), h->thread_name, sizeof h->thread_name);
  memcpy(h->hostname, g.hostname, sizeof h->hostname);
  memcpy(h->magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE);
  if (t->seq < VPROF_MAX_STREAMS)
    __atomic_store_n(&g_streams[t->seq], h, __ATOMIC_RELEASE);
  if (g.key_ok)
    pthread_setspecific(g.key, (void *)1);
  write_maps(t->dir);
  write_units(t->dir);
  t->state = TS_OPEN;
  window_reset(t);
  vprof_rt_log_("stream %s opened (tid %d)", path, (int)h->tid);
}

/* Appends the window's records to the data region with pwrite. Writing through write(2)
 * from the same, already resident pages costs the kernel a fraction of what faulting a
 * fresh page-cache page in for every 256 records costs (benchmarks/RESULTS.md, "Runtime").
 * Returns 0, or -1 with errno. */
static int window_write(rt_thread *t) {
  char path[PATH_MAX];
  const char *p = (const char *)t->win;
  uint64_t left = t->win_records * VPROF_RECORD_SIZE,
           off = t->data_offset + t->committed * VPROF_RECORD_SIZE;
  int fd, err = 0;
  /* Opened per flush, not held: a program may close every descriptor it does not know
   * (daemons do) or run near its descriptor limit. */
  stream_path(path, sizeof path, t);
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

/* The window is full: flush it to the data region and start it over, or start dropping
 * (the full window stays in the file as the stream's last records). The order of the
 * steps keeps the file readable if the process is killed between any two of them:
 * committed_records grows only after the copy is complete, and window_base catches up
 * only after the window is zeroed. */
static void stream_flush(rt_thread *t) {
  const char *why = NULL;
  if (t->max_records && t->committed + 2 * t->win_records > t->max_records)
    why = "size limit reached";
  else if (window_write(t) != 0)
    why = strerror(errno);
  if (why) {
    window_clear();
    t->state = TS_DROPPING;
    vprof_rt_log_("stream %d.%u: %s; further records are counted as dropped", (int)g.pid, t->seq,
                  why);
    return;
  }
  t->committed += t->win_records;
  __atomic_store_n(&t->hdr->committed_records, t->committed, __ATOMIC_RELEASE);
  memset(t->win, 0, t->win_records * VPROF_RECORD_SIZE);
  __atomic_store_n(&t->hdr->window_base, t->committed, __ATOMIC_RELEASE);
  window_reset(t);
}

/* Stores an end clock sample into a stream header: the realtime first, so that a reader
 * that sees end_ticks sees its pair. */
static void header_end_sample(vprof_stream_header *h, uint64_t ticks, uint64_t real) {
  __atomic_store_n(&h->end_realtime_ns, real, __ATOMIC_RELAXED);
  __atomic_store_n(&h->end_ticks, ticks, __ATOMIC_RELEASE);
}

/* A CLOCK record after a flush, at most once per sample period in the process (the
 * first thread whose flush finds the period over writes it). */
static void maybe_clock_record(void) {
  uint64_t last = __atomic_load_n(&g.last_sample_ticks, __ATOMIC_RELAXED), ticks = 0, real = 0;
  if (!g.sample_period || vprof_clock_() - last < g.sample_period)
    return;
  if (!__atomic_compare_exchange_n(&g.last_sample_ticks, &last, vprof_clock_(), 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED))
    return;
  clock_sample(&ticks, &real);
  vprof_rt_emit_at_(VPROF_REC_CLOCK, real, ticks);
}

/* Marks the stream closed and releases its window; the header page stays mapped. The
 * window's records stay in the file (they are the stream's last records). */
static void stream_close(rt_thread *t, unsigned char next_state) {
  if (t->state == TS_OPEN || t->state == TS_DROPPING) {
    uint64_t ticks = 0, real = 0;
    clock_sample(&ticks, &real);
    header_end_sample(t->hdr, ticks, real);
    __atomic_fetch_or(&t->hdr->flags, VPROF_STREAM_CLOSED, __ATOMIC_RELEASE);
    if (t->win)
      munmap(t->win, t->win_records * VPROF_RECORD_SIZE);
    t->win = NULL;
    window_clear();
    t->state = next_state;
  }
}

void vprof_emit_slow_(unsigned kind, uint64_t arg, uint64_t ticks) {
  rt_thread *t = &t_rt;
  int saved, flushed = 0;
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
  if (t->state == TS_NONE) {
    if (vprof_rt_init_() == VPROF_RT_ON)
      stream_open(t);
  } else if (t->state == TS_OPEN) {
    stream_flush(t);
    flushed = 1;
  }
  t->busy = 0;
  errno = saved;
  if (t->state == TS_OPEN && vprof_window_.cur != vprof_window_.end) {
    vprof_rt_emit_at_(kind, arg, ticks);
    if (flushed) /* after the pending record: its time is earlier */
      maybe_clock_record();
  } else if (t->state == TS_DROPPING)
    __atomic_fetch_add(&t->hdr->dropped, 1, __ATOMIC_RELAXED);
}

void vprof_emit_slow_now_(unsigned kind, uint64_t arg) {
  rt_thread *t = &t_rt;
  /* tracing off (VPROF_DISABLE, no usable trace directory) or this thread's stream failed:
   * nothing to write, so no clock read either */
  if (t->state == TS_FAILED || (t->state == TS_NONE && vprof_rt_init_() != VPROF_RT_ON))
    return;
  /* the event's time is now, before any flush that makes room for it */
  vprof_emit_slow_(kind, arg, vprof_clock_());
}

/* ---------------------------------------------------------------- lifecycle */

static void thread_exit(void *unused) {
  int saved = errno;
  (void)unused;
  stream_close(&t_rt, TS_CLOSED);
  errno = saved;
}

/* Copies the parent's labels so ids the child inherited in label descriptors resolve. */
static void fork_child(void) {
  rt_thread *t = &t_rt;
  pid_t parent = g.pid;
  uint32_t i, n;
  char from[PATH_MAX], to[PATH_MAX];
  if (g.state != VPROF_RT_ON)
    return;
  /* The child must never write into the parent's mappings. */
  window_clear();
  if (t->win)
    munmap(t->win, t->win_records * VPROF_RECORD_SIZE);
  *t = (rt_thread){0};
  n = g.next_seq < VPROF_MAX_STREAMS ? g.next_seq : VPROF_MAX_STREAMS;
  for (i = 0; i < n; i++) {
    if (g_streams[i])
      munmap(g_streams[i], g.page);
    g_streams[i] = NULL;
  }
  g.pid = getpid();
  g.next_seq = 0;
  g.fork_child_pending = 1;
  clock_pair(&g.base_ticks, &g.base_mono);
  g.base_real = realtime_ns();
  g.last_sample_ticks = g.base_ticks;
#if !defined(__x86_64__) && !defined(__aarch64__)
  g.base_mono = g.base_ticks;
#endif
  g.calib_ns = 0; /* the inherited frequency stays; refine only over long runs */
  snprintf(from, sizeof from, "%s/%d.labels", g.dir, (int)parent);
  snprintf(to, sizeof to, "%s/%d.labels", g.dir, (int)g.pid);
  copy_file(from, to, O_TRUNC);
}

__attribute__((destructor)) static void process_exit(void) {
  uint32_t i, n;
  uint64_t hz, dropped = 0, end_ticks = 0, end_real = 0;
  int saved = errno;
  if (g.state != VPROF_RT_ON)
    return;
  hz = clock_refined_hz();
  clock_sample(&end_ticks, &end_real);
  n = g.next_seq < VPROF_MAX_STREAMS ? g.next_seq : VPROF_MAX_STREAMS;
  for (i = 0; i < n; i++) {
    vprof_stream_header *h = __atomic_load_n(&g_streams[i], __ATOMIC_ACQUIRE);
    if (!h)
      continue;
    h->ticks_per_second = hz;
    header_end_sample(h, end_ticks, end_real);
    __atomic_fetch_or(&h->flags, VPROF_STREAM_CLOSED, __ATOMIC_RELEASE);
    dropped += __atomic_load_n(&h->dropped, __ATOMIC_RELAXED);
  }
  if (n) {
    write_maps(g.dir);
    write_units(g.dir);
    write_cpu(g.dir);
  }
  vprof_rt_log_("exit: %u streams in %s, %llu records dropped, clock %llu Hz", n, g.dir,
                (unsigned long long)dropped, (unsigned long long)hz);
  errno = saved;
}

static int read_env_options(void) {
  char err[256];
  int bad = vprof_options_parse(&g.opt, (vprof_getenv_fn)getenv, err, sizeof err);
  if (bad)
    vprof_rt_log_("%s", err);
  return bad;
}

/* The window: `window_bytes` rounded up to whole pages, at most half the size limit
 * (so that at least one flush fits), at least one page. */
static void set_sizes(uint64_t window_bytes, uint64_t max_bytes) {
  uint64_t w = (window_bytes + g.page - 1) / g.page * g.page;
  if (max_bytes && w > max_bytes / 2)
    w = max_bytes / 2 / g.page * g.page;
  if (w < g.page)
    w = g.page;
  g.window_bytes = w;
  g.max_bytes = max_bytes;
}

static void init_once(void) {
  char *dir;
  g.page = (size_t)sysconf(_SC_PAGESIZE);
  read_env_options();
  vprof_sync_resolve_();
  g.pid = getpid();
  if (g.opt.DISABLE) {
    vprof_rt_log_("VPROF_DISABLE=1: tracing off");
    __atomic_store_n(&g.state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    return;
  }
  set_sizes(g.opt.WINDOW_KB * 1024ull, g.opt.MAX_THREAD_MB * 1024ull * 1024ull);
  clock_start();
  /* Made absolute now (the program may chdir), created by the first stream. */
  dir = absolute_dir(g.opt.TRACE_DIR);
  if (!dir) {
    vprof_rt_log_("trace directory %s unusable (%s): tracing off", g.opt.TRACE_DIR,
                  strerror(errno));
    __atomic_store_n(&g.state, VPROF_RT_OFF, __ATOMIC_RELEASE);
    return;
  }
  g.dir = dir;
  g.key_ok = pthread_key_create(&g.key, thread_exit) == 0;
  pthread_atfork(NULL, NULL, fork_child);
  __atomic_store_n(&vprof_rt_sync_on_, g.opt.SYNC, __ATOMIC_RELAXED);
  vprof_rt_log_("tracing to %s (clock %s, %llu Hz, window %llu B, limit %llu B, sync level %d)",
                g.dir, g.clock_kind == VPROF_CLOCK_TSC ? "tsc" : "monotonic",
                (unsigned long long)g.hz, (unsigned long long)g.window_bytes,
                (unsigned long long)g.max_bytes, g.opt.SYNC);
  __atomic_store_n(&g.state, VPROF_RT_ON, __ATOMIC_RELEASE);
}

int vprof_rt_init_(void) {
  int s = __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
  int expected = VPROF_RT_UNINIT;
  if (s != VPROF_RT_UNINIT)
    return s;
  if (!__atomic_compare_exchange_n(&g.state, &expected, VPROF_RT_INITIALIZING, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return expected; /* another thread is starting up: this event is not recorded */
  init_once();
  return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE);
}

int vprof_rt_state_(void) { return __atomic_load_n(&g.state, __ATOMIC_ACQUIRE); }

__attribute__((constructor(101))) static void process_start(void) {
  int saved = errno;
  vprof_rt_init_();
  errno = saved;
}

/* ---------------------------------------------------------------- annotations */

/* Returns the label's id, registering it (and writing its line) on first use. */
static uint32_t label_id(vprof_label *label) {
  char path[PATH_MAX], line[320];
  uint32_t id = __atomic_load_n(&label->id, __ATOMIC_ACQUIRE), expected = 0, mine;
  size_t i, n;
  int fd, saved;
  if (id)
    return id;
  mine = __atomic_add_fetch(&g.next_label, 1, __ATOMIC_RELAXED);
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
  snprintf(path, sizeof path, "%s/%d.labels", g.dir, (int)g.pid);
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
  vprof_rt_emit_at_(VPROF_REC_INTERVAL_BEGIN, id, t);
  if (vprof_rt_state_() != VPROF_RT_ON)
    return;
  lid = label ? label_id(label) : 0;
  if (lid != t_rt.label) {
    vprof_rt_emit_at_(VPROF_REC_LABEL, lid, t);
    t_rt.label = lid;
  }
}

uint64_t vprof_interval_begin(vprof_label *label) {
  uint64_t n, id;
  vprof_rt_init_();
  if (t_rt.next_id == t_rt.id_end) {
    t_rt.next_id = __atomic_fetch_add(&g.next_interval, VPROF_ID_BLOCK, __ATOMIC_RELAXED) + 1;
    t_rt.id_end = t_rt.next_id + VPROF_ID_BLOCK;
  }
  n = t_rt.next_id++;
  /* pid in the high 24 bits: unique across the processes of a run */
  id = ((uint64_t)(uint32_t)g.pid << 40) | (n & ((1ull << 40) - 1));
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
  vprof_rt_emit_at_(kind, arg, ticks);
}

int vprof_rt_close_thread_stream(char *path, size_t n) {
  rt_thread *t = &t_rt;
  if (t->state != TS_OPEN && t->state != TS_DROPPING)
    return -1;
  if (path && n)
    stream_path(path, n, t);
  stream_close(t, TS_NONE);
  return 0;
}

int vprof_rt_set_trace_dir(const char *dir) {
  char *abs;
  int s = vprof_rt_init_();
  if (g.opt.DISABLE || s == VPROF_RT_INITIALIZING)
    return -1;
  abs = absolute_dir(dir);
  if (!abs || make_dirs(abs) != 0) {
    free(abs);
    return -1;
  }
  g.dir = abs; /* the previous string may still be used by open streams: kept */
  __atomic_store_n(&g.dir_state, 1, __ATOMIC_RELEASE);
  if (s == VPROF_RT_OFF) {
    if (!g.window_bytes)
      set_sizes(g.opt.WINDOW_KB * 1024ull, g.opt.MAX_THREAD_MB * 1024ull * 1024ull);
    if (!g.hz)
      clock_start();
    if (!g.key_ok) {
      g.key_ok = pthread_key_create(&g.key, thread_exit) == 0;
      pthread_atfork(NULL, NULL, fork_child);
    }
    __atomic_store_n(&vprof_rt_sync_on_, g.opt.SYNC, __ATOMIC_RELAXED);
    __atomic_store_n(&g.state, VPROF_RT_ON, __ATOMIC_RELEASE);
  }
  if (t_rt.state == TS_FAILED)
    t_rt.state = TS_NONE;
  return 0;
}

void vprof_rt_set_stream_limits(uint64_t window_bytes, uint64_t max_bytes) {
  vprof_rt_init_();
  if (!g.page)
    g.page = (size_t)sysconf(_SC_PAGESIZE);
  set_sizes(window_bytes, max_bytes);
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
    *base_ticks = g.base_ticks;
  if (ticks_per_second)
    *ticks_per_second = g.hz;
}

int vprof_rt_enabled(void) { return vprof_rt_init_() == VPROF_RT_ON; }
