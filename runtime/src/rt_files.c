/* libvprof_rt's files beside the streams: creating the trace directory, the note left
 * when it is unusable, and the side files of a process — <pid>.maps, <pid>.units (the
 * instrumented units registered by their constructors) and <pid>.cpu. */
#define _GNU_SOURCE
#include "rt_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Instrumented translation units a process can name in <pid>.units. */
#define VPROF_MAX_UNITS 16384

/* ---------------------------------------------------------------- the trace directory */

/* A process that cannot write its trace directory (a server running as another user, a
 * path that is not a directory) records nothing and must stay silent, but the loss must not
 * go unnoticed: it leaves one small note in the system's temporary directory,
 * $TMPDIR/vprof-unusable-trace-dir.<pid> ("pid uid errno dir"), which `vprof loop` and
 * `vprof run` read after the workload to say which process and which setting. Once per
 * process; best effort. */
void vprof_rt_note_unusable_dir_(const char *dir, int err) {
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

int vprof_rt_make_dirs_(const char *dir) {
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

char *vprof_rt_absolute_dir_(const char *dir) {
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

int vprof_rt_copy_file_(const char *from, const char *to, int flags) {
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

/* ---------------------------------------------------------------- side files */

/* The side files of a process (<dir>/<pid>.<ext>) are written to a temporary file and
 * renamed, so that a reader never sees a half-written one: the two paths. */
static void side_file_paths(const char *dir, const char *ext, char *tmp, char *dst) {
  int pid = (int)vprof_rt_process_.pid;
  snprintf(tmp, PATH_MAX, "%s/.%d.%s.%d.tmp", dir, pid, ext, (int)gettid());
  snprintf(dst, PATH_MAX, "%s/%d.%s", dir, pid, ext);
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

void vprof_rt_write_maps_(const char *dir) {
  char tmp[PATH_MAX], dst[PATH_MAX];
  side_file_paths(dir, "maps", tmp, dst);
  if (vprof_rt_copy_file_("/proc/self/maps", tmp, O_TRUNC) == 0)
    rename(tmp, dst);
}

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

/* One line "workspace\tstamp\titeration\tsource" per unit, then "overflow\t<count>" if
 * more registered than the table holds. No stdio streams: this runs on the probe's slow
 * path, wherever a thread's first event happens. */
void vprof_rt_write_units_(const char *dir) {
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

/* Written at exit: the process's CPU time, "<user ns>\t<system ns>\n" (getrusage, every
 * thread), stored with the analysed run (analysis_runs.cpu_ns). */
void vprof_rt_write_cpu_(const char *dir) {
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
