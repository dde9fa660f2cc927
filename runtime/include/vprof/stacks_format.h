/* vprof sampled-stack file (stacks.vpk): the one definition of the bytes the recorder
 * (recorder/, vprof-sched) writes and the analyzer reads. C99 and C++17 clean;
 * docs/trace-format.md, "Sampled stacks", explains it in prose.
 *
 * One file per trace directory, beside sched.vpk, written by the same recorder. It holds the
 * user stacks of the traced threads: sampled while they run (a CPU clock at `sample_hz` on
 * every CPU, a sample when a traced thread is on it), taken when one blocks (the sleeper's
 * stack at each SLEEP of sched.vpk, same time and tid) and when one wakes another (the
 * waker's stack at each WAKE, same time, `other` the woken tid). Stacks are deduplicated: a
 * STACK entry defines an id once, SAMPLE entries name it.
 *
 * File layout (little-endian):
 *
 *   offset 0    vprof_stacks_header (128 bytes)
 *   offset 128  entries, each a vprof_stacks_entry (8 bytes: size, kind) and its payload;
 *               size counts the whole entry and is a multiple of 8. Entries come in the order
 *               the recorder received them (per CPU in time order, CPUs interleaved): a STACK
 *               may come after the first SAMPLE that names it, so readers read the whole file
 *               before they resolve ids. An id is defined once.
 *
 * The recorder writes the header first with counts 0 and flags 0, appends entries, and at its
 * end rewrites the header with the final counts and VPROF_STACKS_CLOSED. A file without that
 * flag was left by a killed recorder: its whole entries are still readable, and readers say so.
 *
 * Clock: CLOCK_MONOTONIC in ns (bpf_ktime_get_ns), as in sched.vpk.
 *
 * Frames are user-space return addresses found through the frame pointers, innermost first:
 * frame 0 is the instruction pointer. A function compiled without frame pointers (Debian's
 * libc) hides its caller: at a system call the walk goes from libc's wrapper straight to the
 * caller's caller. So every stack also carries `sp_word`, the word at the user stack pointer,
 * which is the return address into the caller when frame 0 lies in a function that pushed no
 * frame (a system call wrapper, memcpy); readers decide whether to take it (docs/recorder.md,
 * "Stacks").
 */
#ifndef VPROF_STACKS_FORMAT_H
#define VPROF_STACKS_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VPROF_STACKS_MAGIC "VPROFSTK" /* 8 bytes, no terminator stored */
#define VPROF_STACKS_MAGIC_SIZE 8
#define VPROF_STACKS_VERSION 1u
#define VPROF_STACKS_HEADER_SIZE 128u
#define VPROF_STACKS_MAX_FRAMES 127u /* the kernel's perf_event_max_stack default */
#define VPROF_STACKS_FILE_NAME "stacks.vpk"

/* header flags */
#define VPROF_STACKS_CLOSED (1u << 0) /* the recorder ended normally; counts are final */

/*
 * Header, 128 bytes.
 *
 *   off size field
 *     0    8 magic         "VPROFSTK"
 *     8    4 version       VPROF_STACKS_VERSION
 *    12    4 header_size   128
 *    16    4 flags         VPROF_STACKS_* bits
 *    20    4 root_pid      the process whose tree was recorded
 *    24    4 sample_hz     the on-CPU sampling frequency per CPU (0: no on-CPU samples)
 *    28    4 reserved0     zero
 *    32    8 start_ns      CLOCK_MONOTONIC when recording began
 *    40    8 end_ns        CLOCK_MONOTONIC when it ended (0 while running)
 *    48    8 samples       SAMPLE entries in the file (final when CLOSED)
 *    56    8 stacks        STACK entries in the file (final when CLOSED)
 *    64    8 lost          entries the kernel could not hand over (ring buffer full):
 *                          samples without a stack, or stacks whose samples name no stack
 *    72    8 empty         stacks the kernel could not walk (no user frame: a kernel-only
 *                          task, a user stack not resident): counted, not written
 *    80   48 reserved      zero
 */
typedef struct vprof_stacks_header {
  char magic[VPROF_STACKS_MAGIC_SIZE];
  uint32_t version;
  uint32_t header_size;
  uint32_t flags;
  uint32_t root_pid;
  uint32_t sample_hz;
  uint32_t reserved0;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t samples;
  uint64_t stacks;
  uint64_t lost;
  uint64_t empty;
  uint8_t reserved[48];
} vprof_stacks_header;

/* entry kinds */
enum vprof_stacks_kind {
  VPROF_STACKS_NONE = 0,
  VPROF_STACKS_STACK = 1,  /* vprof_stacks_stack and its frames */
  VPROF_STACKS_SAMPLE = 2, /* vprof_stacks_sample */
};

/* Every entry begins with these 8 bytes. */
typedef struct vprof_stacks_entry {
  uint32_t size; /* the whole entry in bytes, a multiple of 8, at least 8 */
  uint32_t kind; /* enum vprof_stacks_kind */
} vprof_stacks_entry;

/*
 * STACK: 32 bytes, then `frames` 8-byte return addresses (innermost first).
 *
 *   off size field
 *     0    8 entry     size = 32 + 8 * frames, kind STACK
 *     8    8 id        the stack's id (a hash of its frames and sp_word; never 0)
 *    16    4 frames    1..VPROF_STACKS_MAX_FRAMES
 *    20    4 flags     VPROF_STACKS_TRUNCATED
 *    24    8 sp_word   the word at the user stack pointer (0: unreadable)
 */
typedef struct vprof_stacks_stack {
  vprof_stacks_entry entry;
  uint64_t id;
  uint32_t frames;
  uint32_t flags;
  uint64_t sp_word;
  /* uint64_t pc[frames] follows */
} vprof_stacks_stack;

/* STACK flags */
#define VPROF_STACKS_TRUNCATED (1u << 0) /* the walk stopped at VPROF_STACKS_MAX_FRAMES */

/* what a SAMPLE is */
enum vprof_stacks_what {
  VPROF_STACKS_ONCPU = 1, /* the CPU clock found tid running */
  VPROF_STACKS_SLEEP = 2, /* tid blocked: the SLEEP record of sched.vpk at the same time */
  VPROF_STACKS_WAKER = 3, /* tid woke `other`: the WAKE record of sched.vpk at the same time */
};

/* SAMPLE flags */
#define VPROF_STACKS_IN_KERNEL (1u << 0) /* ONCPU: the CPU was in the kernel (a system call) */

/*
 * SAMPLE: 40 bytes.
 *
 *   off size field
 *     0    8 entry     size = 40, kind SAMPLE
 *     8    8 time_ns   CLOCK_MONOTONIC
 *    16    8 stack     the STACK id
 *    24    4 tid       the sampled (ONCPU), sleeping (SLEEP) or waking (WAKER) thread
 *    28    4 pid       tid's process id
 *    32    4 other     WAKER: the woken tid; otherwise 0
 *    36    1 what      enum vprof_stacks_what
 *    37    1 flags     VPROF_STACKS_IN_KERNEL
 *    38    2 cpu       the CPU the sample was taken on
 */
typedef struct vprof_stacks_sample {
  vprof_stacks_entry entry;
  uint64_t time_ns;
  uint64_t stack;
  uint32_t tid;
  uint32_t pid;
  uint32_t other;
  uint8_t what;
  uint8_t flags;
  uint16_t cpu;
} vprof_stacks_sample;

#define VPROF_STACKS_STACK_SIZE 32u
#define VPROF_STACKS_SAMPLE_SIZE 40u

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(vprof_stacks_header) == VPROF_STACKS_HEADER_SIZE,
              "stacks header is 128 bytes");
static_assert(sizeof(vprof_stacks_stack) == VPROF_STACKS_STACK_SIZE, "STACK is 32 bytes");
static_assert(sizeof(vprof_stacks_sample) == VPROF_STACKS_SAMPLE_SIZE, "SAMPLE is 40 bytes");
#else
typedef char
    vprof_assert_stacks_header_size_[sizeof(vprof_stacks_header) == VPROF_STACKS_HEADER_SIZE ? 1
                                                                                             : -1];
typedef char
    vprof_assert_stacks_stack_size_[sizeof(vprof_stacks_stack) == VPROF_STACKS_STACK_SIZE ? 1 : -1];
typedef char
    vprof_assert_stacks_sample_size_[sizeof(vprof_stacks_sample) == VPROF_STACKS_SAMPLE_SIZE ? 1
                                                                                             : -1];
#endif

#endif /* VPROF_STACKS_FORMAT_H */
