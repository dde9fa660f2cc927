/* The sampled-stack file vprof-sched writes beside sched.vpk (stacks.vpk,
 * runtime/include/vprof/stacks_format.h): its entries as the BPF programs hand them over, each
 * stack id defined once, and a copy of each sampled process's memory map
 * (<pid>.stackmaps beside it) so that frames can be symbolized after the process is gone. */
#ifndef VPROF_RECORDER_STACK_FILE_H
#define VPROF_RECORDER_STACK_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vprof/stacks_format.h>

/* The ids written so far (open addressing; 0 is the empty slot, never an id). */
struct id_set {
  uint64_t *slot;
  size_t capacity, used;
};

/* A process seen in samples, and when its memory map was last copied. */
struct seen_process {
  uint32_t pid;
  uint64_t copied_ns;  /* 0: never */
  uint64_t sampled_ns; /* its latest entry's arrival */
};

struct stack_file {
  const char *path;
  char dir[4096]; /* the folder of `path`: where the map copies go */
  int fd;
  off_t end; /* where the next batch goes */
  vprof_stacks_header header;
  uint8_t *batch;
  size_t batched; /* bytes */
  struct id_set written;
  struct seen_process *processes;
  size_t nprocesses, processes_cap;
  uint64_t samples, stacks, repeats, malformed;
  int io_errno; /* first write error; writing stops on it */
};

/* pwrite()s all of `data` at `at`; returns 0 or the errno (shared with sched.vpk's writer). */
int write_all(int fd, const void *data, size_t size, off_t at);

/* Creates `path` and writes its first header; returns 0 or an errno (the file is not kept). */
int stack_file_open(struct stack_file *f, const char *path, uint32_t root_pid, uint32_t sample_hz,
                    uint64_t start_ns);

/* ring_buffer callback: one entry (STACK or SAMPLE) from a BPF program. */
int stack_file_on_entry(void *ctx, void *data, size_t size);

/* Writes the batch, and copies the maps of the processes sampled since their last copy at
   most once a second (`final`: every process sampled since its last copy, now). */
void stack_file_flush(struct stack_file *f, uint64_t now_ns, int final);

/* Final counts into the header, rewritten with VPROF_STACKS_CLOSED; closes and frees.
   Returns 0 or the first errno. */
int stack_file_close(struct stack_file *f, uint64_t end_ns, uint64_t lost, uint64_t empty);

#endif /* VPROF_RECORDER_STACK_FILE_H */
