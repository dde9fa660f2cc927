/* vprof trace format: the one definition of the bytes the runtime writes and the
 * analyzer reads. C99 and C++17 clean; docs/trace-format.md explains it in prose.
 *
 * A trace directory holds, for every process of one run:
 *   <pid>.<stream>.vpt   one binary stream per thread (a header, then records)
 *   <pid>.labels         interval type labels, one "<id>\t<text>\n" line each
 *   <pid>.maps           a copy of /proc/<pid>/maps, written when threads start and at
 *                        exit, so addresses of process-shared objects can be turned into
 *                        (device, inode, offset) keys that match across processes
 *
 * Stream file layout (little-endian, x86-64 and aarch64 alike):
 *
 *   offset 0              vprof_stream_header (256 bytes), zero-padded to window_offset
 *   offset window_offset  the window: vprof_record[window_records]
 *   offset data_offset    the data region: vprof_record[committed_records]
 *
 * The writer appends records to the window through a shared mapping, so a killed process
 * leaves every record it finished. The window is a ring of two halves: record i of the
 * stream, once past the data region, lives in slot i % window_records. A full half is
 * copied (pwrite) to the end of the data region, then zeroed and reused, while the writer
 * goes on in the other half: the window's pages are faulted in once, not the whole file's.
 * A record is finished when its kind byte is non-zero (the writer stores `arg` first and
 * `head` second).
 *
 * The records of the stream, in the order written: the data region's committed_records,
 * then records i = committed_records, committed_records + 1, ... from window slot
 * i % window_records, while i < window_base + window_records and the slot's kind is not
 * zero. (window_base < committed_records: the process was killed after a half was
 * appended and before it was zeroed; its records are in the data region, and the bound
 * keeps them from being read twice.) Version 2 wrote whole windows, with window_base
 * either committed_records or a window behind it: the same rule reads it.
 */
#ifndef VPROF_TRACE_FORMAT_H
#define VPROF_TRACE_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VPROF_TRACE_MAGIC "VPROFTRC" /* 8 bytes, no terminator stored */
#define VPROF_TRACE_MAGIC_SIZE 8
#define VPROF_TRACE_VERSION 3u
/* the oldest version the same reading rule reads (see above) */
#define VPROF_TRACE_VERSION_MIN 2u
#define VPROF_STREAM_HEADER_SIZE 256u
#define VPROF_RECORD_SIZE 16u

/* clock_kind */
enum vprof_clock_kind {
  VPROF_CLOCK_TSC = 1,      /* x86 rdtsc; ticks_per_second calibrated at start-up */
  VPROF_CLOCK_MONOTONIC = 2 /* clock_gettime(CLOCK_MONOTONIC) in ns; 1e9 ticks/s */
};

/* features: bits describing what the writer recorded */
#define VPROF_FEATURE_SYNC_INTERPOSE ((uint64_t)1 << 0) /* pthread/sem calls recorded */
#define VPROF_FEATURE_FRAME_DEPTH ((uint64_t)1 << 1)    /* probe records carry frame depth */
/* with SYNC_INTERPOSE: only edge-forming sync records were written (VPROF_SYNC=1);
 * uncontended acquisitions and releases that woke nobody are absent */
#define VPROF_FEATURE_SYNC_EDGES_ONLY ((uint64_t)1 << 2)
/* A LABEL record holds for the stream's later INTERVAL_BEGINs too, until the next LABEL
 * (label id 0: none): the writer emits one only when a thread's label changes. */
#define VPROF_FEATURE_STICKY_LABEL ((uint64_t)1 << 3)

/* flags (updated in place while the process runs) */
#define VPROF_STREAM_CLOSED (1u << 0)     /* the thread or process ended normally */
#define VPROF_STREAM_FORK_CHILD (1u << 1) /* first stream of a forked child */

/*
 * Stream header, 256 bytes.
 *
 *   off size field
 *     0    8 magic             "VPROFTRC"
 *     8    4 version           VPROF_TRACE_VERSION
 *    12    4 header_size       256
 *    16    4 record_size       16
 *    20    4 clock_kind        enum vprof_clock_kind
 *    24    8 ticks_per_second  clock frequency (TSC Hz, or 1e9)
 *    32    8 base_ticks        full clock value at process start-up; the same for
 *                              every stream of one process
 *    40    8 base_monotonic_ns CLOCK_MONOTONIC at base_ticks
 *    48    8 base_realtime_ns  CLOCK_REALTIME at base_ticks (for reports only)
 *    56    4 pid
 *    60    4 tid               kernel thread id
 *    64    4 ppid
 *    68    4 stream_seq        0, 1, 2 … per process, in creation order
 *    72    8 features          VPROF_FEATURE_* bits
 *    80    8 dropped           records lost because the stream reached its size limit
 *    88    8 window_records    records the window holds
 *    96    4 flags             VPROF_STREAM_* bits
 *   100    4 reserved0         zero
 *   104   16 thread_name       NUL-padded (pthread name at stream creation)
 *   120    8 window_offset     file offset of the window (a multiple of the page size)
 *   128    8 data_offset       file offset of the data region (window_offset +
 *                              16 * window_records)
 *   136    8 committed_records records in the data region (a multiple of half the
 *                              window); updated after each append
 *   144    8 window_base       the window holds records window_base ..
 *                              window_base + window_records - 1 at most; equal to
 *                              committed_records except between an append and the
 *                              zeroing of its half
 *   152    8 end_ticks         clock value of the end clock sample (0: none yet): written
 *                              when the thread or the process ends, after end_realtime_ns
 *   160    8 end_realtime_ns   CLOCK_REALTIME at end_ticks
 *   168   64 hostname          NUL-padded gethostname() of the process at start-up: names
 *                              the host of this trace (several hosts: docs/multihost.md)
 *   232   24 reserved          zero
 *
 * Clock samples: (base_ticks, base_realtime_ns), (end_ticks, end_realtime_ns) and the
 * CLOCK records of the streams pair the stream clock with CLOCK_REALTIME, so that the
 * analyzer can put the traces of several hosts on one time line (docs/multihost.md).
 */
typedef struct vprof_stream_header {
  char magic[VPROF_TRACE_MAGIC_SIZE];
  uint32_t version;
  uint32_t header_size;
  uint32_t record_size;
  uint32_t clock_kind;
  uint64_t ticks_per_second;
  uint64_t base_ticks;
  uint64_t base_monotonic_ns;
  uint64_t base_realtime_ns;
  uint32_t pid;
  uint32_t tid;
  uint32_t ppid;
  uint32_t stream_seq;
  uint64_t features;
  uint64_t dropped;
  uint64_t window_records;
  uint32_t flags;
  uint32_t reserved0;
  char thread_name[16];
  uint64_t window_offset;
  uint64_t data_offset;
  uint64_t committed_records;
  uint64_t window_base;
  uint64_t end_ticks;
  uint64_t end_realtime_ns;
  char hostname[64];
  uint8_t reserved[24];
} vprof_stream_header;

/*
 * Record, 16 bytes.
 *
 *   off size field
 *     0    8 head  bits 0..55  low 56 bits of the clock; the time since the
 *                              stream's base is (ticks - base_ticks) mod 2^56
 *                              (unambiguous for runs shorter than 2^56 ticks,
 *                              about 270 days at 3 GHz)
 *                  bits 56..63 kind (enum vprof_record_kind, never 0)
 *     8    8 arg   kind-specific, see the enum
 */
typedef struct vprof_record {
  uint64_t head;
  uint64_t arg;
} vprof_record;

#define VPROF_TICKS_MASK (~(uint64_t)0 >> 8) /* low 56 bits */
#define VPROF_KIND_SHIFT 56

/* What `arg` holds is given after each kind. `obj` is the address of the
 * synchronization object in the writing process. A probe's arg is
 * site | (depth << 32): `site` the dense site id of the workspace site table,
 * `depth` the low 32 bits of minus the frame address (larger = deeper in the stack;
 * compare two depths of one thread as (int32_t)(a - b)). Depth lets the analyzer
 * close frames that longjmp/siglongjmp left without running their exit probe. */

/* The site of the runtime's own frame: an ENTER/EXIT pair with it, written after a record
 * whose window was full, spans the time the thread spent making room (the window's flush,
 * or the stream's opening) so that readers charge that stall to "(profiler)" and not to the
 * function it interrupted. Its depth is the runtime's frame, deeper than the program's. No
 * workspace site has this id. */
#define VPROF_SITE_PROFILER 0xFFFFFFFFu

enum vprof_record_kind {
  VPROF_REC_NONE = 0, /* empty slot: end of stream */

  /* probes inserted by the instrumenter */
  VPROF_REC_ENTER = 1, /* arg: site | depth << 32 */
  VPROF_REC_EXIT = 2,  /* arg: site | depth << 32 */

  /* a clock sample: arg = CLOCK_REALTIME in ns at this record's clock value (written at
     most once a VPROF_CLOCK_SAMPLE_MS, when a full window is flushed) */
  VPROF_REC_CLOCK = 8,

  /* intervals (annotations) */
  VPROF_REC_INTERVAL_BEGIN = 16, /* arg: interval id; this thread is attached */
  VPROF_REC_INTERVAL_END = 17,   /* arg: interval id; may be on another thread */
  VPROF_REC_ATTACH = 18,         /* arg: interval id; thread now works for it */
  VPROF_REC_DETACH = 19,         /* arg: interval id; thread stops working for it */
  VPROF_REC_LABEL = 20,          /* arg: label id (<pid>.labels); follows BEGIN,
                                    same timestamp */

  /* Sync records below: every call at VPROF_SYNC=2. In streams with
   * VPROF_FEATURE_SYNC_EDGES_ONLY (VPROF_SYNC=1, the default) an *_ACQUIRE appears only
   * after its *_WAIT, LOCK_RELEASE / COND_SIGNAL / COND_BROADCAST / SEM_POST only when a
   * waiter may exist, and a condvar wait lacks its final LOCK_ACQUIRE
   * (docs/trace-format.md, "Sync levels"). */

  /* pthread_mutex_* (interposed) */
  VPROF_REC_LOCK_WAIT = 32,    /* arg: obj; the lock was busy, thread blocks */
  VPROF_REC_LOCK_ACQUIRE = 33, /* arg: obj; owned now (after WAIT: was blocked) */
  VPROF_REC_LOCK_RELEASE = 34, /* arg: obj; written before the real unlock */

  /* pthread_rwlock_* (interposed) */
  VPROF_REC_RWLOCK_WAIT_RD = 40,    /* arg: obj */
  VPROF_REC_RWLOCK_WAIT_WR = 41,    /* arg: obj */
  VPROF_REC_RWLOCK_ACQUIRE_RD = 42, /* arg: obj */
  VPROF_REC_RWLOCK_ACQUIRE_WR = 43, /* arg: obj */
  VPROF_REC_RWLOCK_RELEASE = 44,    /* arg: obj; written before the real unlock */

  /* pthread_cond_* (interposed). A wait is written as
   *   LOCK_RELEASE(mutex) COND_WAIT_BEGIN(cond) … COND_WAIT_END(cond)
   *   LOCK_ACQUIRE(mutex)
   * COND_WAIT_TIMEOUT replaces COND_WAIT_END when the wait timed out. */
  VPROF_REC_COND_WAIT_BEGIN = 48,   /* arg: cond */
  VPROF_REC_COND_WAIT_END = 49,     /* arg: cond */
  VPROF_REC_COND_WAIT_TIMEOUT = 50, /* arg: cond */
  VPROF_REC_COND_SIGNAL = 51,       /* arg: cond; written before the real call */
  VPROF_REC_COND_BROADCAST = 52,    /* arg: cond; written before the real call */

  /* sem_* (interposed) */
  VPROF_REC_SEM_WAIT = 56,    /* arg: obj; count was zero, thread blocks */
  VPROF_REC_SEM_ACQUIRE = 57, /* arg: obj; decremented (after WAIT: was blocked) */
  VPROF_REC_SEM_POST = 58,    /* arg: obj; written before the real post */

  /* hand-offs and custom primitives (annotations) */
  VPROF_REC_HANDOFF_SEND = 64, /* arg: obj (queue or message) */
  VPROF_REC_HANDOFF_RECV = 65, /* arg: obj */
  VPROF_REC_WAIT_BEGIN = 66,   /* arg: obj; thread blocks on a custom primitive */
  VPROF_REC_WAIT_END = 67,     /* arg: obj */
  VPROF_REC_WAKE = 68,         /* arg: obj; releases waiters of obj */

  /* messages (annotations): hand-offs keyed by a value the program carries in its
   * protocol (a request id), so that they pair across processes and hosts */
  VPROF_REC_MSG_SEND = 72, /* arg: message key; written before the message leaves */
  VPROF_REC_MSG_RECV = 73  /* arg: message key; written after it arrived */
};

static __inline__ uint64_t vprof_record_head(unsigned kind, uint64_t ticks) {
  return ((uint64_t)kind << VPROF_KIND_SHIFT) | (ticks & VPROF_TICKS_MASK);
}
static __inline__ unsigned vprof_record_kind_of(const vprof_record *r) {
  return (unsigned)(r->head >> VPROF_KIND_SHIFT);
}
static __inline__ uint64_t vprof_record_ticks(const vprof_record *r) {
  return r->head & VPROF_TICKS_MASK;
}

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(vprof_stream_header) == VPROF_STREAM_HEADER_SIZE,
              "stream header is 256 bytes");
static_assert(sizeof(vprof_record) == VPROF_RECORD_SIZE, "record is 16 bytes");
#else /* C99 has no _Static_assert: a negative array size fails the build */
typedef char
    vprof_assert_header_size_[sizeof(vprof_stream_header) == VPROF_STREAM_HEADER_SIZE ? 1 : -1];
typedef char vprof_assert_record_size_[sizeof(vprof_record) == VPROF_RECORD_SIZE ? 1 : -1];
#endif

#endif /* VPROF_TRACE_FORMAT_H */
