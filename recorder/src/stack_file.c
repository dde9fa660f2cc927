/* stacks.vpk: see stack_file.h and runtime/include/vprof/stacks_format.h. */
#define _GNU_SOURCE
#include "stack_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_BYTES (1u << 20)
#define MAPS_EVERY_NS 1000000000ull /* a sampled process's map is copied at most once a second */

/* ---- the set of written ids ---- */

static size_t id_slot(const struct id_set *s, uint64_t id) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull;
  size_t i = (size_t)(h >> 17) & (s->capacity - 1);
  while (s->slot[i] != 0 && s->slot[i] != id)
    i = (i + 1) & (s->capacity - 1);
  return i;
}

static int id_set_grow(struct id_set *s) {
  struct id_set bigger = {calloc(s->capacity ? s->capacity * 2 : 4096, sizeof(uint64_t)),
                          s->capacity ? s->capacity * 2 : 4096, 0};
  if (!bigger.slot)
    return ENOMEM;
  for (size_t i = 0; i < s->capacity; i++)
    if (s->slot[i] != 0) {
      bigger.slot[id_slot(&bigger, s->slot[i])] = s->slot[i];
      bigger.used++;
    }
  free(s->slot);
  *s = bigger;
  return 0;
}

/* Adds `id`; returns 1 when it is new, 0 when it was there, -1 without memory. */
static int id_set_add(struct id_set *s, uint64_t id) {
  if ((s->used + 1) * 2 > s->capacity && id_set_grow(s) != 0)
    return -1;
  size_t i = id_slot(s, id);
  if (s->slot[i] == id)
    return 0;
  s->slot[i] = id;
  s->used++;
  return 1;
}

/* ---- writing ---- */

int write_all(int fd, const void *data, size_t size, off_t at) {
  const char *p = data;
  while (size > 0) {
    ssize_t n = pwrite(fd, p, size, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    p += n;
    size -= (size_t)n;
    at += n;
  }
  return 0;
}

static void write_batch(struct stack_file *f) {
  if (f->batched > 0 && f->io_errno == 0)
    f->io_errno = write_all(f->fd, f->batch, f->batched, f->end);
  f->end += (off_t)f->batched;
  f->batched = 0;
}

static void append(struct stack_file *f, const void *entry, size_t size) {
  if (f->batched + size > BATCH_BYTES)
    write_batch(f);
  memcpy(f->batch + f->batched, entry, size);
  f->batched += size;
}

int stack_file_open(struct stack_file *f, const char *path, uint32_t root_pid, uint32_t sample_hz,
                    uint64_t start_ns) {
  *f = (struct stack_file){.path = path, .fd = -1, .end = VPROF_STACKS_HEADER_SIZE};
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(f->dir, sizeof f->dir, ".");
  else
    snprintf(f->dir, sizeof f->dir, "%.*s", (int)(slash - path), path);
  if (f->dir[0] == '\0')
    snprintf(f->dir, sizeof f->dir, "/");
  f->batch = malloc(BATCH_BYTES);
  if (!f->batch || id_set_grow(&f->written) != 0) {
    free(f->batch);
    free(f->written.slot);
    return ENOMEM;
  }
  f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    int e = errno;
    free(f->batch);
    free(f->written.slot);
    return e;
  }
  vprof_stacks_header *h = &f->header;
  memcpy(h->magic, VPROF_STACKS_MAGIC, VPROF_STACKS_MAGIC_SIZE);
  h->version = VPROF_STACKS_VERSION;
  h->header_size = VPROF_STACKS_HEADER_SIZE;
  h->root_pid = root_pid;
  h->sample_hz = sample_hz;
  h->start_ns = start_ns;
  return write_all(f->fd, h, sizeof *h, 0);
}

/* ---- processes and their maps ---- */

static struct seen_process *process_of(struct stack_file *f, uint32_t pid) {
  for (size_t i = 0; i < f->nprocesses; i++)
    if (f->processes[i].pid == pid)
      return &f->processes[i];
  if (f->nprocesses == f->processes_cap) {
    size_t cap = f->processes_cap ? f->processes_cap * 2 : 16;
    struct seen_process *p = realloc(f->processes, cap * sizeof *p);
    if (!p)
      return NULL;
    f->processes = p;
    f->processes_cap = cap;
  }
  f->processes[f->nprocesses] = (struct seen_process){pid, 0, 0};
  return &f->processes[f->nprocesses++];
}

/* Copies /proc/<pid>/maps to <dir>/<pid>.stackmaps (a temporary file, then renamed: a reader
   sees the old copy or the new one). A process already gone keeps its last copy. */
static void copy_maps(const struct stack_file *f, uint32_t pid) {
  char from[64], tmp[4224], to[4200];
  snprintf(from, sizeof from, "/proc/%u/maps", pid);
  snprintf(to, sizeof to, "%s/%u.stackmaps", f->dir, pid);
  snprintf(tmp, sizeof tmp, "%s.tmp", to);
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return;
  int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[65536];
  off_t at = 0;
  int ok = out >= 0;
  while (ok) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      break;
    ok = n > 0 && write_all(out, buf, (size_t)n, at) == 0;
    at += n;
  }
  close(in);
  if (out >= 0 && close(out) != 0)
    ok = 0;
  if (ok)
    ok = rename(tmp, to) == 0;
  if (!ok && out >= 0)
    unlink(tmp);
}

/* ---- the ring's entries ---- */

static int on_stack(struct stack_file *f, const vprof_stacks_stack *s, size_t size) {
  if (s->frames == 0 || s->frames > VPROF_STACKS_MAX_FRAMES ||
      size != VPROF_STACKS_STACK_SIZE + (size_t)s->frames * sizeof(uint64_t) || s->id == 0) {
    f->malformed++;
    return 0;
  }
  int fresh = id_set_add(&f->written, s->id);
  if (fresh < 0)
    return -ENOMEM;
  if (fresh == 0) {
    f->repeats++; /* an id evicted from the kernel's table and written again, or a race */
    return 0;
  }
  append(f, s, size);
  f->stacks++;
  return 0;
}

int stack_file_on_entry(void *ctx, void *data, size_t size) {
  struct stack_file *f = ctx;
  const vprof_stacks_entry *e = data;
  if (size < sizeof *e || e->size != size || size % 8 != 0) {
    f->malformed++;
    return 0;
  }
  if (e->kind == VPROF_STACKS_STACK && size >= VPROF_STACKS_STACK_SIZE) {
    int err = on_stack(f, data, size);
    if (err != 0)
      return err;
  } else if (e->kind == VPROF_STACKS_SAMPLE && size == VPROF_STACKS_SAMPLE_SIZE) {
    const vprof_stacks_sample *s = data;
    struct seen_process *p = process_of(f, s->pid);
    if (p && p->copied_ns == 0) { /* at first sight: a short-lived process is gone by the flush */
      copy_maps(f, p->pid);
      p->copied_ns = s->time_ns ? s->time_ns : 1;
    } else if (p) {
      p->sampled_ns = s->time_ns ? s->time_ns : 1;
    }
    append(f, s, size);
    f->samples++;
  } else {
    f->malformed++;
  }
  return f->io_errno ? -f->io_errno : 0;
}

void stack_file_flush(struct stack_file *f, uint64_t now_ns, int final) {
  write_batch(f);
  for (size_t i = 0; i < f->nprocesses; i++) {
    struct seen_process *p = &f->processes[i];
    if (p->sampled_ns <= p->copied_ns)
      continue;
    if (!final && p->copied_ns != 0 && now_ns - p->copied_ns < MAPS_EVERY_NS)
      continue;
    copy_maps(f, p->pid);
    p->copied_ns = now_ns > p->sampled_ns ? now_ns : p->sampled_ns;
  }
}

int stack_file_close(struct stack_file *f, uint64_t end_ns, uint64_t lost, uint64_t empty) {
  write_batch(f);
  vprof_stacks_header *h = &f->header;
  h->end_ns = end_ns;
  h->samples = f->samples;
  h->stacks = f->stacks;
  h->lost = lost;
  h->empty = empty;
  h->flags = VPROF_STACKS_CLOSED;
  int err = f->io_errno;
  if (err == 0)
    err = write_all(f->fd, h, sizeof *h, 0);
  if (close(f->fd) != 0 && err == 0)
    err = errno;
  free(f->batch);
  free(f->written.slot);
  free(f->processes);
  f->batch = NULL;
  f->written.slot = NULL;
  f->processes = NULL;
  return err;
}
