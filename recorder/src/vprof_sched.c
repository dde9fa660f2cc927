/* vprof-sched, the kernel wake-up recorder: loads recorder/bpf/vprof_sched.bpf.c, records the
 * sleeps, wake-ups and runs of one process tree and writes them to a sched.vpk file
 * (runtime/include/vprof/sched_format.h). docs/recorder.md is its manual. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <vprof/sched_format.h>
#include <vprof/stacks_format.h>

#include "stack_file.h"
#include "vprof_sched.skel.h"

enum {
  EXIT_OK = 0,
  EXIT_ERROR = 1,  /* I/O or unexpected failure, the message names the file */
  EXIT_USAGE = 2,  /* a bad flag, the message names it */
  EXIT_CANNOT = 3, /* recording is impossible here: one line, why, the fix */
};

#define RING_MB_DEFAULT 16u
#define RING_MB_MAX 1024u
#define RING_MIN_BYTES (256u << 10) /* the smallest per-CPU ring */
#define POLL_MS 100 /* ring poll timeout: the latency of a quiet ring's records, and of the end */
#define FLUSH_NS 200000000ull /* a partly filled batch reaches the file within 200 ms */
#define BATCH_RECORDS 32768u  /* 1 MiB of records per write() */
/* the initial pid namespace's inode number (include/linux/proc_ns.h) */
#define PROC_PID_INIT_INO 0xEFFFFFFCu
/* slots of the BPF program's `lost` map */
enum { LOST_RECORDS = 0, LOST_CHILDREN = 1, LOST_STACK_ENTRIES = 2, EMPTY_STACKS = 3 };
#define SAMPLE_HZ_DEFAULT 997u /* prime: never in step with a workload's own timers */
#define SAMPLE_HZ_MAX 10000u

struct options {
  long root_pid;
  const char *out;
  int ready_fd;
  unsigned ring_mb;
  const char *stacks; /* the stacks.vpk to write (NULL: no stacks) */
  unsigned sample_hz; /* on-CPU samples per second and CPU (0: sleep and waker stacks only) */
  bool quiet, check, verbose;
  long alternate_ms;         /* >0: pause and resume recording every this many ms */
  const char *alternate_log; /* where each phase's start goes (--alternate-log) */
};

/* The output file and its batch. */
struct recording {
  const char *path;
  int fd;
  off_t end; /* where the next batch goes */
  vprof_sched_header header;
  vprof_sched_record *batch;
  size_t batched;
  uint64_t records, sleeps, wakeups;
  uint64_t last_flush_ns;
  int io_errno; /* first write error; recording stops on it */
};

static volatile sig_atomic_t stop_requested;
static bool verbose_libbpf;
static char libbpf_first[256]; /* libbpf's first warning, quoted when a load fails */

static void on_stop_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static int on_libbpf_message(enum libbpf_print_level level, const char *fmt, va_list ap) {
  if (verbose_libbpf)
    return vfprintf(stderr, fmt, ap);
  if (level == LIBBPF_WARN && libbpf_first[0] == '\0') {
    char line[sizeof libbpf_first + 16];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    const char *text = strncmp(line, "libbpf: ", 8) == 0 ? line + 8 : line;
    size_t n = strnlen(text, sizeof libbpf_first - 1);
    memcpy(libbpf_first, text, n);
    libbpf_first[n] = '\0';
  }
  return 0;
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *to) {
  fputs("usage: vprof-sched --root-pid PID --out FILE [--stacks FILE [--sample-hz N]]\n"
        "                   [--ready-fd FD] [--ring-mb N] [--quiet]\n"
        "       vprof-sched --check\n"
        "\n"
        "Records the Linux scheduler's view of a process tree with eBPF: when a thread of the\n"
        "tree blocked in the kernel (and in which system call), which thread or interrupt woke\n"
        "it, and when it ran again; plus thread exits. Threads and processes the tree creates\n"
        "while recording join it. The analyzer turns these into wake-up edges for waits the\n"
        "runtime cannot see (futexes, pipes, sockets, epoll, signals).\n"
        "\n"
        "  --root-pid PID  the process whose tree is recorded (usually started stopped, and\n"
        "                  released once the ready byte arrives)\n"
        "  --out FILE      the file written, sched.vpk in the trace directory: a 128-byte header\n"
        "                  and 32-byte records (docs/trace-format.md, \"Kernel wake-ups\")\n"
        "  --stacks FILE   also record the user stacks of the tree's threads into FILE\n"
        "                  (stacks.vpk in the trace directory, docs/trace-format.md, \"Sampled\n"
        "                  stacks\"): sampled while they run, and taken at each sleep (the\n"
        "                  sleeper's) and wake-up (the waker's); copies of the sampled\n"
        "                  processes' memory maps go beside it (<pid>.stackmaps)\n"
        "  --sample-hz N   on-CPU samples per second on each CPU with --stacks (default 997;\n"
        "                  0: sleep and wake-up stacks only)\n"
        "  --ready-fd FD   write one byte to FD and close it once recording has begun\n"
        "  --ring-mb N     kernel ring buffers' size in MiB (default 16, rounded up to a power\n"
        "                  of two, split into one ring per CPU); records that find their\n"
        "                  CPU's ring full are counted as lost\n"
        "  --quiet         no summary line on exit\n"
        "  --verbose       print libbpf's messages (load and verifier logs)\n"
        "  --check         exit 0 if recording works here, else 3 with the reason and the fix\n"
        "  --alternate MS  for overhead benchmarks only: pause recording for MS ms, resume it\n"
        "                  for MS ms, and so on (the programs stay attached and return at once\n"
        "                  while paused), so that one run of a workload is its own A/B; the\n"
        "                  trace is not for analysis\n"
        "  --alternate-log FILE  with --alternate: one line per phase, \"REALTIME_S\n"
        "                  MONOTONIC_NS PHASE BUSY_TICKS TOTAL_TICKS\" (PHASE recording, paused\n"
        "                  or end; the machine's CPU ticks from /proc/stat, busy = all but idle\n"
        "                  and iowait)\n"
        "\n"
        "Recording ends on SIGINT or SIGTERM, or by itself once every traced process has exited.\n"
        "It needs root, or CAP_BPF and CAP_PERFMON, a kernel >= 5.18 with BTF\n"
        "(/sys/kernel/btf/vmlinux), and the host's pid namespace.\n"
        "Exit status: 0 recorded, 1 error (I/O), 2 bad usage, 3 cannot record here.\n",
        to);
}

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("vprof-sched: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (see vprof-sched --help)\n", stderr);
  va_end(ap);
  return EXIT_USAGE;
}

static bool parse_long(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
    return false;
  *out = v;
  return true;
}

/* The process (thread group) thread `tid` belongs to, from /proc; 0 if unreadable. */
static long thread_group_of(long tid) {
  char path[64], line[256];
  long tgid = 0;
  snprintf(path, sizeof path, "/proc/%ld/status", tid);
  FILE *f = fopen(path, "r");
  while (f && tgid == 0 && fgets(line, sizeof line, f))
    if (strncmp(line, "Tgid:", 5) == 0)
      tgid = strtol(line + 5, NULL, 10);
  if (f)
    fclose(f);
  return tgid;
}

/* Fills `o` from argv; returns EXIT_OK, or EXIT_USAGE after naming the bad flag (-1: --help). */
static int parse_options(int argc, char **argv, struct options *o) {
  enum {
    OPT_ROOT = 1,
    OPT_OUT,
    OPT_READY,
    OPT_RING,
    OPT_STACKS,
    OPT_SAMPLE_HZ,
    OPT_ALTERNATE,
    OPT_ALTERNATE_LOG,
    OPT_QUIET,
    OPT_VERBOSE,
    OPT_CHECK,
    OPT_HELP
  };
  static const struct option longs[] = {
      {"root-pid", required_argument, NULL, OPT_ROOT},
      {"out", required_argument, NULL, OPT_OUT},
      {"ready-fd", required_argument, NULL, OPT_READY},
      {"ring-mb", required_argument, NULL, OPT_RING},
      {"stacks", required_argument, NULL, OPT_STACKS},
      {"sample-hz", required_argument, NULL, OPT_SAMPLE_HZ},
      {"alternate", required_argument, NULL, OPT_ALTERNATE},
      {"alternate-log", required_argument, NULL, OPT_ALTERNATE_LOG},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"verbose", no_argument, NULL, OPT_VERBOSE},
      {"check", no_argument, NULL, OPT_CHECK},
      {"help", no_argument, NULL, OPT_HELP},
      {NULL, 0, NULL, 0}};
  *o = (struct options){.root_pid = 0,
                        .out = NULL,
                        .ready_fd = -1,
                        .ring_mb = RING_MB_DEFAULT,
                        .sample_hz = SAMPLE_HZ_DEFAULT};
  opterr = 0;
  int c;
  long v;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case OPT_ROOT:
      if (!parse_long(optarg, 1, INT32_MAX, &v))
        return usage_error("--root-pid %s: not a process id", optarg);
      o->root_pid = v;
      break;
    case OPT_OUT:
      o->out = optarg;
      break;
    case OPT_READY:
      if (!parse_long(optarg, 0, INT32_MAX, &v))
        return usage_error("--ready-fd %s: not a file descriptor number", optarg);
      o->ready_fd = (int)v;
      break;
    case OPT_RING:
      if (!parse_long(optarg, 1, RING_MB_MAX, &v))
        return usage_error("--ring-mb %s: want a size in MiB from 1 to %u", optarg, RING_MB_MAX);
      o->ring_mb = (unsigned)v;
      break;
    case OPT_STACKS:
      o->stacks = optarg;
      break;
    case OPT_SAMPLE_HZ:
      if (!parse_long(optarg, 0, SAMPLE_HZ_MAX, &v))
        return usage_error("--sample-hz %s: want samples per second from 0 to %u", optarg,
                           SAMPLE_HZ_MAX);
      o->sample_hz = (unsigned)v;
      break;
    case OPT_ALTERNATE:
      if (!parse_long(optarg, 100, 3600000, &v))
        return usage_error("--alternate %s: want a phase length in ms from 100 to 3600000", optarg);
      o->alternate_ms = v;
      break;
    case OPT_ALTERNATE_LOG:
      o->alternate_log = optarg;
      break;
    case OPT_QUIET:
      o->quiet = true;
      break;
    case OPT_VERBOSE:
      o->verbose = true;
      break;
    case OPT_CHECK:
      o->check = true;
      break;
    case 'h':
    case OPT_HELP:
      return -1;
    default: /* '?': optopt is the flag that wants a value, a short flag, or 0 */
      if (optopt >= OPT_ROOT && optopt <= OPT_HELP)
        return usage_error("%s: wants a value", argv[optind - 1]);
      if (optopt != 0)
        return usage_error("-%c: unknown flag", optopt);
      return usage_error("%s: unknown flag", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return usage_error("%s: unexpected argument", argv[optind]);
  if (o->check)
    return EXIT_OK;
  if (o->root_pid == 0)
    return usage_error("--root-pid: missing (the process to record)");
  if (o->out == NULL || o->out[0] == '\0')
    return usage_error("--out: missing (the sched.vpk file to write)");
  if (o->stacks != NULL && (o->stacks[0] == '\0' || strcmp(o->stacks, o->out) == 0))
    return usage_error("--stacks %s: want a file of its own beside --out", o->stacks);
  if (kill((pid_t)o->root_pid, 0) != 0 && errno == ESRCH)
    return usage_error("--root-pid %ld: no such process", o->root_pid);
  long tgid = thread_group_of(o->root_pid);
  if (tgid > 0 && tgid != o->root_pid)
    return usage_error("--root-pid %ld: a thread of process %ld, not a process", o->root_pid, tgid);
  if (o->ready_fd >= 0 && fcntl(o->ready_fd, F_GETFD) < 0)
    return usage_error("--ready-fd %d: not an open file descriptor", o->ready_fd);
  if ((o->alternate_log != NULL) != (o->alternate_ms > 0))
    return usage_error("--alternate and --alternate-log go together");
  return EXIT_OK;
}

/* ---- can we record here? ---- */

static int cannot_record(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("vprof-sched: cannot record here: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return EXIT_CANNOT;
}

static const char no_privilege[] =
    "no privilege to load BPF programs (needs root, or CAP_BPF and CAP_PERFMON); run it as "
    "root or `setcap cap_bpf,cap_perfmon+ep vprof-sched`";

/* The effective capability set (/proc/self/status CapEff), or all bits when unreadable. */
static uint64_t effective_capabilities(void) {
  FILE *f = fopen("/proc/self/status", "r");
  uint64_t caps = ~0ull;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "CapEff:", 7) == 0)
      caps = strtoull(line + 7, NULL, 16);
  if (f)
    fclose(f);
  return caps;
}

/* Checks what can be told before loading anything; returns EXIT_OK or EXIT_CANNOT (printed). */
static int check_environment(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
      (major < 5 || (major == 5 && minor < 18)))
    return cannot_record("kernel %s is too old (needs Linux >= 5.18 for sched_switch's "
                         "prev_state); run on a newer kernel",
                         u.release);
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return cannot_record("no kernel BTF (/sys/kernel/btf/vmlinux: %s); use a kernel built with "
                         "CONFIG_DEBUG_INFO_BTF=y",
                         strerror(errno));
  struct stat ns;
  if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO)
    return cannot_record("runs in a child pid namespace, whose ids are not the kernel's; run it "
                         "in the host's pid namespace (e.g. docker --pid=host)");
  const uint64_t cap_sys_admin = 1ull << 21, cap_perfmon = 1ull << 38, cap_bpf = 1ull << 39;
  uint64_t caps = effective_capabilities();
  if (!(caps & cap_sys_admin) && (caps & (cap_bpf | cap_perfmon)) != (cap_bpf | cap_perfmon))
    return cannot_record("%s", no_privilege);
  return EXIT_OK;
}

/* The per-CPU ring buffers (the programs' `rings`): one per possible CPU, of equal size. */
struct rings {
  int count;
  uint32_t bytes; /* each */
  int *fd;
};
static struct rings rings = {0, 0, NULL};       /* sched.vpk's records */
static struct rings stack_rings = {0, 0, NULL}; /* stacks.vpk's entries */

static void close_ring_set(struct rings *set) {
  for (int i = 0; i < set->count; i++)
    if (set->fd[i] >= 0)
      close(set->fd[i]);
  free(set->fd);
  *set = (struct rings){0, 0, NULL};
}

static void close_rings(void) {
  close_ring_set(&rings);
  close_ring_set(&stack_rings);
}

/* `cpus` rings of `each` bytes behind the programs' array of rings `outer`. */
static int create_ring_set(struct rings *set, struct bpf_map *outer, int cpus, uint32_t each) {
  *set = (struct rings){cpus, each, calloc((size_t)cpus, sizeof(int))};
  if (!set->fd)
    return -ENOMEM;
  for (int i = 0; i < cpus; i++)
    set->fd[i] = -1;
  for (int i = 0; i < cpus; i++) {
    set->fd[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "vprof_ring", 0, 0, each, NULL);
    if (set->fd[i] < 0)
      return -errno;
  }
  bpf_map__set_max_entries(outer, (uint32_t)cpus);
  /* the first ring is the template of the inner maps (setting the template's size in place
     crashes libbpf 1.1) */
  return bpf_map__set_inner_map_fd(outer, set->fd[0]);
}

/* Creates the rings: `ring_mb` MiB in all (rounded up to a power of two), split over the CPUs,
   each a power of two of at least RING_MIN_BYTES (on many CPUs the rings hold more in all:
   one CPU's burst must not find a tiny ring full). The stack rings are as large with
   `stacks`, of one page each without. */
static int create_rings(struct vprof_sched_bpf *skel, unsigned ring_mb, bool stacks) {
  uint32_t total = 1u << 20;
  while (total < ring_mb * (1u << 20))
    total <<= 1;
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    return -EINVAL;
  uint32_t each = total;
  while (each > RING_MIN_BYTES && (uint64_t)each * (uint64_t)cpus > total)
    each >>= 1;
  int err = create_ring_set(&rings, skel->maps.rings, cpus, each);
  if (err == 0)
    err = create_ring_set(&stack_rings, skel->maps.stack_rings, cpus,
                          stacks ? each : (uint32_t)sysconf(_SC_PAGESIZE));
  skel->rodata->wakeup_bytes = each / 4;
  skel->rodata->take_stacks = stacks ? 1u : 0u;
  return err;
}

/* Puts the rings in the programs' `rings` (after the load). */
static int fill_ring_set(const struct rings *set, struct bpf_map *outer_map) {
  int outer = bpf_map__fd(outer_map);
  for (int i = 0; i < set->count; i++) {
    uint32_t cpu = (uint32_t)i;
    if (bpf_map_update_elem(outer, &cpu, &set->fd[i], BPF_ANY) != 0)
      return -errno;
  }
  return 0;
}

static int fill_rings(struct vprof_sched_bpf *skel) {
  int err = fill_ring_set(&rings, skel->maps.rings);
  return err ? err : fill_ring_set(&stack_rings, skel->maps.stack_rings);
}

/* The data wake-ups of room wake-ups come from the tracepoint at a socket send's end
   (sock_send_length, Linux >= 6.5); a kernel without it loads the rest, and its room wake-ups
   keep their first waker (docs/recorder.md, "Room wake-ups"). */
static void drop_missing_send_hook(struct vprof_sched_bpf *skel) {
  struct btf *vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux ||
      btf__find_by_name_kind(vmlinux, "btf_trace_sock_send_length", BTF_KIND_TYPEDEF) < 0)
    bpf_program__set_autoload(skel->progs.vprof_sock_sent, false);
  btf__free(vmlinux);
}

/* Opens, sizes and loads the programs, puts `root_pid` (if not 0) in the traced set, and
   attaches them; on failure prints why (EXIT_CANNOT). */
static int load_programs(struct vprof_sched_bpf **out, unsigned ring_mb, long root_pid,
                         bool stacks) {
  struct vprof_sched_bpf *skel = vprof_sched_bpf__open();
  if (!skel)
    return cannot_record("cannot open the BPF object: %s", strerror(errno));
  drop_missing_send_hook(skel);
  int err = create_rings(skel, ring_mb, stacks);
  const char *step = "create the ring buffers";
  if (err == 0) {
    err = vprof_sched_bpf__load(skel);
    step = "load the BPF programs";
  }
  if (err == 0) {
    err = fill_rings(skel);
    step = "fill the ring buffer table";
  }
  if (err == 0 && root_pid > 0) {
    uint32_t root = (uint32_t)root_pid;
    uint8_t one = 1;
    err = bpf_map_update_elem(bpf_map__fd(skel->maps.traced), &root, &one, BPF_ANY);
    err = err ? -errno : 0;
    skel->bss->traced_processes = 1;
    step = "seed the traced set";
  }
  if (err == 0) {
    err = vprof_sched_bpf__attach(skel);
    step = "attach the BPF programs";
  }
  if (err != 0) {
    int e = err < 0 ? -err : err;
    vprof_sched_bpf__destroy(skel);
    close_rings();
    if (e == EPERM || e == EACCES)
      return cannot_record("%s", no_privilege);
    return cannot_record("cannot %s: %s%s%s%s; `vprof-sched --check --verbose` shows the "
                         "verifier's log",
                         step, strerror(e), libbpf_first[0] ? " (libbpf: " : "", libbpf_first,
                         libbpf_first[0] ? ")" : "");
  }
  *out = skel;
  return EXIT_OK;
}

/* ---- the CPU clock (on-CPU stack samples) ---- */

/* One perf software CPU clock per online CPU at `hz`, each running vprof_cpu_sample. */
struct cpu_clock {
  int count;
  int *fd;
  struct bpf_link **link;
};

static void stop_cpu_clock(struct cpu_clock *c) {
  for (int i = 0; i < c->count; i++) {
    if (c->link[i])
      bpf_link__destroy(c->link[i]);
    if (c->fd[i] >= 0)
      close(c->fd[i]);
  }
  free(c->fd);
  free(c->link);
  *c = (struct cpu_clock){0, NULL, NULL};
}

/* Starts the clocks; returns 0, or an errno with the clocks stopped and `step` naming what
   failed. An offline CPU is skipped. */
static int start_cpu_clock(struct cpu_clock *c, struct vprof_sched_bpf *skel, unsigned hz,
                           const char **step) {
  int cpus = libbpf_num_possible_cpus();
  *c = (struct cpu_clock){0, NULL, NULL};
  if (cpus <= 0)
    return EINVAL;
  c->fd = calloc((size_t)cpus, sizeof(int));
  c->link = calloc((size_t)cpus, sizeof(struct bpf_link *));
  if (!c->fd || !c->link) {
    stop_cpu_clock(c);
    return ENOMEM;
  }
  c->count = cpus;
  for (int i = 0; i < cpus; i++)
    c->fd[i] = -1;
  int opened = 0;
  for (int i = 0; i < cpus; i++) {
    struct perf_event_attr attr = {.type = PERF_TYPE_SOFTWARE,
                                   .size = sizeof(struct perf_event_attr),
                                   .config = PERF_COUNT_SW_CPU_CLOCK,
                                   /* a fixed period in ns: in frequency mode the kernel
                                      starts at a period of one and adapts, a burst of
                                      samples at every start */
                                   .sample_period = 1000000000ull / hz};
    c->fd[i] = (int)syscall(SYS_perf_event_open, &attr, -1, i, -1, PERF_FLAG_FD_CLOEXEC);
    if (c->fd[i] < 0 && errno == ENODEV)
      continue; /* offline */
    if (c->fd[i] < 0) {
      int e = errno;
      *step = "open the CPU clock (perf_event_open)";
      stop_cpu_clock(c);
      return e;
    }
    c->link[i] = bpf_program__attach_perf_event(skel->progs.vprof_cpu_sample, c->fd[i]);
    if (!c->link[i]) {
      int e = errno;
      *step = "attach the sampling program to the CPU clock";
      stop_cpu_clock(c);
      return e;
    }
    opened++;
  }
  if (opened == 0) {
    *step = "open the CPU clock (perf_event_open)";
    stop_cpu_clock(c);
    return ENODEV;
  }
  return 0;
}

/* ---- the file ---- */

static int io_error(const char *path, const char *what, int e) {
  fprintf(stderr, "vprof-sched: %s: %s: %s\n", path, what, strerror(e));
  return EXIT_ERROR;
}

static void flush_batch(struct recording *rec) {
  if (rec->batched > 0 && rec->io_errno == 0)
    rec->io_errno =
        write_all(rec->fd, rec->batch, rec->batched * sizeof(vprof_sched_record), rec->end);
  rec->end += (off_t)(rec->batched * sizeof(vprof_sched_record));
  rec->batched = 0;
  rec->last_flush_ns = monotonic_ns();
}

static int open_recording(struct recording *rec, const char *path, long root_pid) {
  *rec = (struct recording){.path = path, .fd = -1, .end = VPROF_SCHED_HEADER_SIZE};
  rec->batch = malloc(BATCH_RECORDS * sizeof(vprof_sched_record));
  if (!rec->batch)
    return io_error(path, "no memory for the write batch", ENOMEM);
  rec->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (rec->fd < 0)
    return io_error(path, "cannot create", errno);
  vprof_sched_header *h = &rec->header;
  memcpy(h->magic, VPROF_SCHED_MAGIC, VPROF_SCHED_MAGIC_SIZE);
  h->version = VPROF_SCHED_VERSION;
  h->header_size = VPROF_SCHED_HEADER_SIZE;
  h->record_size = VPROF_SCHED_RECORD_SIZE;
  h->root_pid = (uint32_t)root_pid;
  return EXIT_OK;
}

/* Writes the header (at start: records 0, not closed; at the end: final). */
static int write_header(struct recording *rec) {
  int e = write_all(rec->fd, &rec->header, sizeof rec->header, 0);
  return e ? io_error(rec->path, "cannot write the header", e) : EXIT_OK;
}

/* ring_buffer callback: one record into the batch. */
static int on_record(void *ctx, void *data, size_t size) {
  struct recording *rec = ctx;
  if (size != sizeof(vprof_sched_record))
    return 0;
  const vprof_sched_record *r = data;
  rec->batch[rec->batched++] = *r;
  rec->records++;
  rec->sleeps += r->kind == VPROF_SCHED_SLEEP;
  rec->wakeups += r->kind == VPROF_SCHED_WAKE;
  if (rec->batched == BATCH_RECORDS)
    flush_batch(rec);
  return rec->io_errno ? -rec->io_errno : 0;
}

/* ---- recording ---- */

/* The programs' count of traced processes says when to look; the map itself (a scan of its
   buckets, tens of microseconds) confirms. */
static bool tree_is_empty(const struct vprof_sched_bpf *skel, int traced_fd) {
  if (__atomic_load_n(&skel->bss->traced_processes, __ATOMIC_RELAXED) != 0)
    return false;
  uint32_t key;
  return bpf_map_get_next_key(traced_fd, NULL, &key) != 0 && errno == ENOENT;
}

/* The recorder competes for the CPUs with the workload it records: as SCHED_BATCH its
   wake-ups (every poll) never preempt a running thread, and it keeps its fair share, so a
   busy machine does not starve it into losing records (SCHED_IDLE would). */
static void yield_to_the_workload(void) {
  struct sched_param none = {.sched_priority = 0};
  if (sched_setscheduler(0, SCHED_BATCH, &none) != 0)
    fprintf(stderr,
            "vprof-sched: cannot become SCHED_BATCH (%s): its polls may preempt the "
            "workload\n",
            strerror(errno));
}

/* The root exited before the programs were attached (no exit event will come): true when none
   of its tasks is alive (absent, or zombies only). */
static bool process_gone(long pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", pid);
  DIR *dir = opendir(path);
  if (!dir)
    return true;
  bool alive = false;
  struct dirent *d;
  while (!alive && (d = readdir(dir)) != NULL) {
    if (d->d_name[0] == '.')
      continue;
    char stat_path[sizeof path + sizeof d->d_name + 8], buf[512];
    snprintf(stat_path, sizeof stat_path, "%s/%s/stat", path, d->d_name);
    FILE *f = fopen(stat_path, "r");
    if (!f)
      continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *state = strrchr(buf, ')'); /* "tid (comm) S ..." — comm may hold ')' */
    alive = state && state[1] == ' ' && state[2] != 'Z' && state[2] != 'X';
  }
  closedir(dir);
  return !alive;
}

static uint64_t sum_counter(int lost_fd, uint32_t which) {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    return 0;
  uint64_t *values = calloc((size_t)cpus, sizeof *values), sum = 0;
  if (values && bpf_map_lookup_elem(lost_fd, &which, values) == 0)
    for (int i = 0; i < cpus; i++)
      sum += values[i];
  free(values);
  return sum;
}

static int signal_ready(int fd) {
  if (fd < 0)
    return EXIT_OK;
  char byte = 1;
  ssize_t n;
  do
    n = write(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (n != 1) {
    fprintf(stderr, "vprof-sched: --ready-fd %d: cannot write the ready byte: %s\n", fd,
            strerror(n < 0 ? e : EIO));
    return EXIT_ERROR;
  }
  return EXIT_OK;
}

/* ---- the within-run A/B (--alternate) ---- */

struct alternation {
  uint64_t period_ns, next_ns; /* period 0: no alternation */
  FILE *log;
  bool paused;
};

/* The machine's CPU ticks: busy (all but idle and iowait) and in all, from /proc/stat. */
static void cpu_ticks(unsigned long long *busy, unsigned long long *total) {
  unsigned long long t[10] = {0};
  *busy = *total = 0;
  FILE *f = fopen("/proc/stat", "r");
  if (!f)
    return;
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &t[0], &t[1], &t[2],
                 &t[3], &t[4], &t[5], &t[6], &t[7], &t[8], &t[9]);
  fclose(f);
  if (n < 5) /* user nice system idle iowait at least (Linux >= 2.6) */
    return;
  for (int i = 0; i < n && i < 8; i++) /* guest time is counted in user time already */
    *total += t[i];
  *busy = *total - t[3] - t[4];
}

/* One line of the log: the phase that began at `mono_ns` (the records' clock). */
static void log_phase(struct alternation *a, const char *phase, uint64_t mono_ns) {
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  unsigned long long busy, total;
  cpu_ticks(&busy, &total);
  fprintf(a->log, "%lld.%09ld %llu %s %llu %llu\n", (long long)rt.tv_sec, rt.tv_nsec,
          (unsigned long long)mono_ns, phase, busy, total);
  fflush(a->log);
}

/* Flips between recording and paused when the phase is over. A recording phase begins
   before its store (no record precedes it), a paused one after (a program that read the flag
   before the store may still write). */
static void alternate(struct alternation *a, struct vprof_sched_bpf *skel) {
  uint64_t before = monotonic_ns();
  if (a->period_ns == 0 || before < a->next_ns)
    return;
  a->paused = !a->paused;
  __atomic_store_n(&skel->bss->paused, a->paused ? 1u : 0u, __ATOMIC_SEQ_CST);
  a->next_ns += a->period_ns;
  log_phase(a, a->paused ? "paused" : "recording", a->paused ? monotonic_ns() : before);
}

/* The ring's poll timeout: POLL_MS, or less when a phase ends sooner. */
static int poll_timeout_ms(const struct alternation *a) {
  if (a->period_ns == 0)
    return POLL_MS;
  uint64_t now = monotonic_ns();
  uint64_t left_ms = a->next_ns > now ? (a->next_ns - now + 999999) / 1000000 : 0;
  return left_ms < POLL_MS ? (int)left_ms : POLL_MS;
}

/* Polls the ring until a stop signal or until the tree has no process left. */
static void record_until_done(struct recording *rec, struct stack_file *stacks,
                              struct ring_buffer *ring, struct vprof_sched_bpf *skel, int traced_fd,
                              struct alternation *alt) {
  while (!stop_requested && rec->io_errno == 0 && (!stacks || stacks->io_errno == 0)) {
    alternate(alt, skel);
    /* wakes early only when the ring is a quarter full */
    ring_buffer__poll(ring, poll_timeout_ms(alt));
    ring_buffer__consume(ring);
    if (monotonic_ns() - rec->last_flush_ns >= FLUSH_NS) {
      flush_batch(rec);
      if (stacks)
        stack_file_flush(stacks, rec->last_flush_ns, 0);
    }
    if (tree_is_empty(skel, traced_fd))
      break;
  }
}

/* The ring manager over both ring sets: sched.vpk's records to `rec`, stacks.vpk's entries to
   `stacks` (NULL: the stack rings stay unread, nothing writes them). NULL on failure (errno). */
static struct ring_buffer *open_ring_manager(struct recording *rec, struct stack_file *stacks) {
  struct ring_buffer *ring = ring_buffer__new(rings.fd[0], on_record, rec, NULL);
  int err = ring ? 0 : errno;
  for (int i = 1; err == 0 && i < rings.count; i++)
    if (ring_buffer__add(ring, rings.fd[i], on_record, rec) != 0)
      err = errno;
  for (int i = 0; stacks && err == 0 && i < stack_rings.count; i++)
    if (ring_buffer__add(ring, stack_rings.fd[i], stack_file_on_entry, stacks) != 0)
      err = errno;
  if (err != 0 && ring) {
    ring_buffer__free(ring);
    ring = NULL;
  }
  errno = err;
  return ring;
}

/* Starts the on-CPU samples of --stacks. Without them (no privilege for a CPU-wide perf event,
   a kernel without the software clock) recording goes on with the sleep and wake-up stacks
   alone, and one line says so with the fix; the header's sample_hz is then 0. */
static void start_sampling(const struct options *o, struct vprof_sched_bpf *skel,
                           struct stack_file *stacks, struct cpu_clock *clock) {
  *clock = (struct cpu_clock){0, NULL, NULL};
  if (!stacks || o->sample_hz == 0)
    return;
  const char *step = "";
  int e = start_cpu_clock(clock, skel, o->sample_hz, &step);
  if (e == 0)
    return;
  stacks->header.sample_hz = 0;
  fprintf(stderr,
          "vprof-sched: no on-CPU stack samples: cannot %s: %s; sleep and wake-up stacks are "
          "still recorded (needs root or CAP_PERFMON, or kernel.perf_event_paranoid <= 0)\n",
          step, strerror(e));
}

/* Final counts of stacks.vpk; returns the status with the file's error, if any, added. */
static int finish_stacks(struct stack_file *stacks, int lost_fd, int status, bool quiet) {
  stack_file_flush(stacks, monotonic_ns(), 1);
  uint64_t lost = sum_counter(lost_fd, LOST_STACK_ENTRIES),
           empty = sum_counter(lost_fd, EMPTY_STACKS);
  uint64_t samples = stacks->samples, distinct = stacks->stacks;
  int e = stack_file_close(stacks, monotonic_ns(), lost, empty);
  if (e != 0 && status == EXIT_OK)
    status = io_error(stacks->path, "cannot write the stacks", e);
  if (!quiet)
    fprintf(stderr,
            "vprof-sched: %llu stack samples (%llu distinct stacks), %llu lost, %llu "
            "without a user frame\n",
            (unsigned long long)samples, (unsigned long long)distinct, (unsigned long long)lost,
            (unsigned long long)empty);
  return status;
}

static int record(const struct options *o) {
  int status = check_environment();
  if (status != EXIT_OK)
    return status;
  struct recording rec;
  status = open_recording(&rec, o->out, o->root_pid);
  struct stack_file stacks_file, *stacks = o->stacks ? &stacks_file : NULL;
  if (status == EXIT_OK && stacks) {
    int e = stack_file_open(stacks, o->stacks, (uint32_t)o->root_pid, o->sample_hz, monotonic_ns());
    if (e != 0) {
      status = io_error(o->stacks, "cannot create", e);
      stacks = NULL;
    }
  }
  struct vprof_sched_bpf *skel = NULL;
  if (status == EXIT_OK)
    status = load_programs(&skel, o->ring_mb, o->root_pid, stacks != NULL);
  if (status != EXIT_OK) {
    if (rec.fd >= 0) {
      close(rec.fd);
      unlink(o->out);
    }
    if (stacks) {
      stack_file_close(stacks, 0, 0, 0);
      unlink(o->stacks);
    }
    free(rec.batch);
    return status;
  }
  int traced_fd = bpf_map__fd(skel->maps.traced);
  uint32_t root = (uint32_t)o->root_pid;
  if (process_gone(o->root_pid)) {
    fprintf(stderr, "vprof-sched: process %ld exited before recording began\n", o->root_pid);
    bpf_map_delete_elem(traced_fd, &root);
    skel->bss->traced_processes = 0;
  }
  rec.header.start_ns = monotonic_ns();
  rec.last_flush_ns = rec.header.start_ns;
  status = write_header(&rec);
  struct ring_buffer *ring = open_ring_manager(&rec, stacks);
  if (!ring && status == EXIT_OK)
    status = io_error("ring buffer", "cannot map", errno);
  struct cpu_clock clock;
  start_sampling(o, skel, stacks, &clock);
  struct alternation alt = {0, 0, NULL, false};
  if (status == EXIT_OK && o->alternate_ms > 0) {
    alt.log = fopen(o->alternate_log, "w");
    if (!alt.log)
      status = io_error(o->alternate_log, "cannot create", errno);
    alt.period_ns = (uint64_t)o->alternate_ms * 1000000ull;
  }
  if (status == EXIT_OK) {
    yield_to_the_workload();
    status = signal_ready(o->ready_fd);
  }
  if (status == EXIT_OK) {
    if (alt.log) {
      alt.next_ns = monotonic_ns() + alt.period_ns;
      log_phase(&alt, "recording", monotonic_ns());
    }
    record_until_done(&rec, stacks, ring, skel, traced_fd, &alt);
  }
  if (alt.log) {
    log_phase(&alt, "end", monotonic_ns());
    fclose(alt.log);
  }
  /* detach first, so what is left in the ring is all there will be; a program already
     running on another CPU when it was detached commits within microseconds */
  stop_cpu_clock(&clock);
  vprof_sched_bpf__detach(skel);
  if (ring) {
    const struct timespec settle = {0, 5000000};
    nanosleep(&settle, NULL);
    while (rec.io_errno == 0 && ring_buffer__consume(ring) > 0) {
    }
    ring_buffer__free(ring);
  }
  flush_batch(&rec);
  int lost_fd = bpf_map__fd(skel->maps.lost);
  uint64_t lost_children = sum_counter(lost_fd, LOST_CHILDREN);
  rec.header.lost = sum_counter(lost_fd, LOST_RECORDS);
  rec.header.records = rec.records;
  rec.header.end_ns = monotonic_ns();
  rec.header.flags = VPROF_SCHED_CLOSED;
  if (stacks)
    status = finish_stacks(stacks, lost_fd, status, o->quiet);
  vprof_sched_bpf__destroy(skel);
  close_rings();
  if (rec.io_errno != 0)
    status = io_error(rec.path, "cannot write the records", rec.io_errno);
  else if (write_header(&rec) != EXIT_OK)
    status = EXIT_ERROR;
  if (close(rec.fd) != 0 && status == EXIT_OK)
    status = io_error(rec.path, "cannot close", errno);
  free(rec.batch);
  if (lost_children > 0)
    fprintf(stderr, "vprof-sched: %llu processes forked by the tree were not traced (table full)\n",
            (unsigned long long)lost_children);
  if (!o->quiet)
    fprintf(stderr, "vprof-sched: %llu records (%llu sleeps, %llu wake-ups), %llu lost\n",
            (unsigned long long)rec.records, (unsigned long long)rec.sleeps,
            (unsigned long long)rec.wakeups, (unsigned long long)rec.header.lost);
  return status;
}

static int check(const struct options *o) {
  int status = check_environment();
  struct vprof_sched_bpf *skel = NULL;
  if (status == EXIT_OK)
    status = load_programs(&skel, 1, 0, true);
  if (status != EXIT_OK)
    return status;
  struct cpu_clock clock;
  const char *step = "";
  int e = o->sample_hz > 0 ? start_cpu_clock(&clock, skel, 1, &step) : 0;
  if (e == 0 && o->sample_hz > 0)
    stop_cpu_clock(&clock);
  vprof_sched_bpf__destroy(skel);
  close_rings();
  if (e != 0)
    fprintf(stderr,
            "vprof-sched: no on-CPU stack samples here: cannot %s: %s (needs root or "
            "CAP_PERFMON, or kernel.perf_event_paranoid <= 0); sleep and wake-up stacks work\n",
            step, strerror(e));
  if (!o->quiet)
    fprintf(stderr, "vprof-sched: recording works here\n");
  return EXIT_OK;
}

int main(int argc, char **argv) {
  struct options o;
  int status = parse_options(argc, argv, &o);
  if (status < 0) {
    usage(stdout);
    return EXIT_OK;
  }
  if (status != EXIT_OK)
    return status;
  verbose_libbpf = o.verbose;
  libbpf_set_print(on_libbpf_message);
  struct sigaction sa = {.sa_handler = on_stop_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return o.check ? check(&o) : record(&o);
}
