/* vprof kernel wake-up file (sched.vpk): the one definition of the bytes the recorder
 * (recorder/, vprof-sched) writes and the analyzer reads. C99 and C++17 clean;
 * docs/trace-format.md, "Kernel wake-ups", explains it in prose.
 *
 * One file per trace directory, `sched.vpk`, written by the recorder the driver starts
 * beside the workload (never linked into the profiled program). It holds the scheduler's
 * view of the profiled process tree: when a traced thread went to sleep in the kernel
 * (and in which system call), who woke it and when, and when it ran again. The analyzer
 * turns each sleep into a wait whose waker is the waking thread (a wake-up edge) or, when
 * no traced thread woke it, a named pseudo-waker (an interrupt, another process).
 *
 * File layout (little-endian):
 *
 *   offset 0    vprof_sched_header (128 bytes)
 *   offset 128  vprof_sched_record[records], in the order the recorder received them
 *               (per CPU in time order; across CPUs interleaved by batch, one ring
 *               buffer per CPU since version 2: readers sort by time)
 *
 * The recorder writes the header first with records = 0 and flags = 0, appends records,
 * and at its end rewrites the header with the final counts and VPROF_SCHED_CLOSED. A
 * file without that flag was left by a killed recorder: its whole records (the file size
 * rounded down to the record size) are still readable, and readers say so.
 *
 * Clock: CLOCK_MONOTONIC in ns (bpf_ktime_get_ns). A stream header's (base_ticks,
 * base_monotonic_ns) and ticks_per_second put these times on the streams' clock.
 */
#ifndef VPROF_SCHED_FORMAT_H
#define VPROF_SCHED_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VPROF_SCHED_MAGIC "VPROFSCH" /* 8 bytes, no terminator stored */
#define VPROF_SCHED_MAGIC_SIZE 8
#define VPROF_SCHED_VERSION 3u     /* what the recorder writes */
#define VPROF_SCHED_MIN_VERSION 1u /* the oldest that readers read (no NEXT_RUNS) */
#define VPROF_SCHED_HEADER_SIZE 128u
#define VPROF_SCHED_RECORD_SIZE 32u
#define VPROF_SCHED_FILE_NAME "sched.vpk"

/* header flags */
#define VPROF_SCHED_CLOSED (1u << 0) /* the recorder ended normally; counts are final */

/*
 * Header, 128 bytes.
 *
 *   off size field
 *     0    8 magic           "VPROFSCH"
 *     8    4 version         VPROF_SCHED_VERSION (3; 2 has no waker system calls and
 *                            no room or data wake-ups, 1 no NEXT_RUNS records either)
 *    12    4 header_size     128
 *    16    4 record_size     32
 *    20    4 flags           VPROF_SCHED_* bits
 *    24    4 root_pid        the process whose tree was recorded (its children and
 *                            threads join as they are created)
 *    28    4 reserved0       zero
 *    32    8 start_ns        CLOCK_MONOTONIC when recording began
 *    40    8 end_ns          CLOCK_MONOTONIC when it ended (0 while running)
 *    48    8 records         records in the file (final when CLOSED)
 *    56    8 lost            records the kernel could not hand over (ring buffer full),
 *                            counted as readers expand them (a lost SLEEP with NEXT_RUNS is
 *                            two): the waits they belonged to have no kernel waker
 *    64   64 reserved        zero
 */
typedef struct vprof_sched_header {
  char magic[VPROF_SCHED_MAGIC_SIZE];
  uint32_t version;
  uint32_t header_size;
  uint32_t record_size;
  uint32_t flags;
  uint32_t root_pid;
  uint32_t reserved0;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t records;
  uint64_t lost;
  uint8_t reserved[64];
} vprof_sched_header;

/* record kinds */
enum vprof_sched_kind {
  VPROF_SCHED_NONE = 0,
  /* tid left the CPU blocked (prev_state not TASK_RUNNING): a wait begins.
     state = the task state the scheduler acted on; syscall = the system call it blocked
     in (-1: none, e.g. a page fault); other = the tid that ran next (0: idle) */
  VPROF_SCHED_SLEEP = 1,
  /* a wake-up of tid (sched_waking): other = the waker's tid (0: the idle task, that is
     an interrupt on an idle CPU), other_pid = the waker's process id; flags may hold
     VPROF_SCHED_WAKER_IRQ, VPROF_SCHED_WAKE_ROOM or VPROF_SCHED_WAKE_DATA; since version 3
     arg = the system call the waker was in (as a SLEEP's, state 0; none in an interrupt) */
  VPROF_SCHED_WAKE = 2,
  /* tid ran again after a SLEEP: the wait ends. other = the tid that ran before it. Not
     written when the task before it was a traced thread going to sleep: that SLEEP carries
     VPROF_SCHED_NEXT_RUNS instead */
  VPROF_SCHED_RUN = 3,
  /* tid (a process's last thread or any thread) exited: later records of the same tid
     are another task's (tids are reused) */
  VPROF_SCHED_EXIT = 4
};

/* record flags */
#define VPROF_SCHED_WAKER_IRQ (1u << 0) /* WAKE: the wake-up ran in interrupt context */
/* SLEEP (version 2): `other` is a traced thread that had slept and runs now; the record also
   stands for its RUN (tid = other, pid = other_pid, other = this tid, other_pid = this pid, same
   time and CPU), which readers expand it into, before the SLEEP. Version 1 files never set it. */
#define VPROF_SCHED_NEXT_RUNS (1u << 1)
/* WAKE (version 3): a room wake-up. The waker, receiving from a socket, freed room in the
   sender's buffer and the kernel woke every sleeper on that socket, among them tid, which
   sleeps to receive: no data for it came with this wake-up. */
#define VPROF_SCHED_WAKE_ROOM (1u << 2)
/* WAKE (version 3): a data wake-up, written by the recorder, not the scheduler: the waker of
   a room wake-up ended its next socket send (write, send, sendto, sendmsg, sendmmsg), the
   data tid sleeps for. tid may have run since the room wake-up; readers then ignore it. */
#define VPROF_SCHED_WAKE_DATA (1u << 3)

/*
 * Record, 32 bytes.
 *
 *   off size field
 *     0    8 time_ns    CLOCK_MONOTONIC
 *     8    4 tid        the task the record is about (the sleeper, the wakee, the runner)
 *    12    4 pid        tid's process id (thread group id)
 *    16    4 other      kind-specific tid (see enum vprof_sched_kind)
 *    20    4 other_pid  other's process id (0 if unknown)
 *    24    1 kind       enum vprof_sched_kind
 *    25    1 flags      VPROF_SCHED_WAKER_IRQ, _WAKE_ROOM, _WAKE_DATA (WAKE);
 *                       VPROF_SCHED_NEXT_RUNS (SLEEP)
 *    26    2 cpu        the CPU the record was taken on
 *    28    4 arg        SLEEP: (syscall & 0xffff) | (state & 0xffff) << 16, syscall
 *                       0xffff meaning none; WAKE (version 3): the waker's system call
 *                       the same way, state 0; otherwise zero
 */
typedef struct vprof_sched_record {
  uint64_t time_ns;
  uint32_t tid;
  uint32_t pid;
  uint32_t other;
  uint32_t other_pid;
  uint8_t kind;
  uint8_t flags;
  uint16_t cpu;
  uint32_t arg;
} vprof_sched_record;

#define VPROF_SCHED_NO_SYSCALL 0xffffu

static __inline__ uint32_t vprof_sched_sleep_arg(int64_t syscall, uint32_t state) {
  uint32_t nr = (syscall < 0 || syscall >= 0xffff) ? VPROF_SCHED_NO_SYSCALL : (uint32_t)syscall;
  return nr | ((state & 0xffffu) << 16);
}
/* The system call a SLEEP blocked in (a version-3 WAKE: its waker was in), or -1. */
static __inline__ int32_t vprof_sched_syscall(const vprof_sched_record *r) {
  uint32_t nr = r->arg & 0xffffu;
  return nr == VPROF_SCHED_NO_SYSCALL ? -1 : (int32_t)nr;
}
static __inline__ uint32_t vprof_sched_state(const vprof_sched_record *r) { return r->arg >> 16; }

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(vprof_sched_header) == VPROF_SCHED_HEADER_SIZE, "sched header is 128 bytes");
static_assert(sizeof(vprof_sched_record) == VPROF_SCHED_RECORD_SIZE, "sched record is 32 bytes");
#else
typedef char
    vprof_assert_sched_header_size_[sizeof(vprof_sched_header) == VPROF_SCHED_HEADER_SIZE ? 1 : -1];
typedef char
    vprof_assert_sched_record_size_[sizeof(vprof_sched_record) == VPROF_SCHED_RECORD_SIZE ? 1 : -1];
#endif

#endif /* VPROF_SCHED_FORMAT_H */
