/* libvprof_rt's per-thread streams (rt_stream.c): a thread's trace file, written through
 * a fixed MAP_SHARED window of two halves; a full half is appended to the file (by the
 * drain, rt_drain.h) while the thread writes into the other. */
#ifndef VPROF_RT_STREAM_H
#define VPROF_RT_STREAM_H

#include <stddef.h>

#include "rt_drain.h"
#include "rt_internal.h"

enum thread_state {
  TS_NONE = 0, /* no stream yet: the next record opens one */
  TS_OPEN,     /* the thread window points into the stream's window */
  TS_DROPPING, /* size limit reached (or a flush failed): records are counted only */
  TS_CLOSED,   /* thread exited: late records are counted as dropped */
  TS_FAILED    /* the stream could not be created: this thread records nothing */
};

/* A thread's stream, and the thread's annotation state that starts over with it in a fork
 * child (its label and its block of interval numbers). */
typedef struct rt_thread {
  vprof_stream_header *hdr; /* header page, mapped until process exit */
  vprof_record *win;        /* the write window: a fixed, reused MAP_SHARED range */
  const char *dir;          /* directory of this stream (never freed) */
  uint64_t win_records;     /* records the window holds: two halves */
  uint64_t data_offset;     /* file offset of the data region */
  uint64_t committed;       /* records handed over to the data region (appended or on the way) */
  uint64_t max_records;     /* 0 = unlimited */
  rt_drain_job job;         /* the half on its way to the data region */
  uint32_t seq;
  unsigned char state;
  unsigned char half;     /* the half being written: 0 or 1 */
  unsigned char last_lap; /* the size limit allows no more appends: the other half is the last */
  unsigned char busy;     /* inside the slow path: nested records are ignored */
  unsigned char exact;    /* an injected timeline (rt_testing.h): no profiler frame */
  unsigned char hold;     /* a record pair that must stay together: the frame waits for it */
  uint64_t held_from, held_to; /* a profiler frame held back (held_to 0: none) */
  uint32_t label;              /* the label of this stream's last LABEL record (0: none) */
  uint64_t next_id;            /* the thread's block of interval numbers: next_id .. id_end - 1 */
  uint64_t id_end;
} rt_thread;

extern __thread rt_thread vprof_rt_thread_ VPROF_TLS_MODEL_ VPROF_RT_HIDDEN_;

/* How the process's streams are laid out and numbered. */
typedef struct vprof_rt_stream_layout {
  uint64_t window_bytes; /* a whole number of pages */
  uint64_t max_bytes;    /* a stream's size limit (0: none) */
  size_t page;
  uint32_t next_seq;      /* the next stream's number in this process */
  int fork_child_pending; /* the next stream is a fork child's first */
} vprof_rt_stream_layout;

extern vprof_rt_stream_layout vprof_rt_stream_layout_ VPROF_RT_HIDDEN_;

/* The window: `window_bytes` rounded up to whole pages, at most half the size limit
 * (so that at least one append fits), at least one page. Needs the page size set. */
void vprof_rt_stream_sizes_(uint64_t window_bytes, uint64_t max_bytes) VPROF_RT_HIDDEN_;

/* <dir>/<pid>.<seq>.vpt of `t`, into `buf` of `n` bytes. */
void vprof_rt_stream_path_(char *buf, size_t n, const rt_thread *t) VPROF_RT_HIDDEN_;

/* Marks the stream closed (its end clock sample written) and releases its window; the
 * header page stays mapped. The thread goes to `next_state`. Nothing if not open. */
void vprof_rt_stream_close_(rt_thread *t, unsigned char next_state) VPROF_RT_HIDDEN_;

/* Appends the stream's records [index, index + records), in `half` of its window, to its
 * data region with pwrite, then counts them as committed, zeroes the half and moves the
 * window's base past them — the order that keeps the file readable if the process is
 * killed between any two steps. Returns 0, or -1 with errno (nothing counted). Called by
 * the drain, or by the thread itself without one. */
int vprof_rt_stream_append_(rt_thread *t, vprof_record *half, uint64_t records,
                            uint64_t index) VPROF_RT_HIDDEN_;

/* Writes the profiler frame held back while `hold` was set (rt_thread.held_from/held_to). */
void vprof_rt_release_profiler_frame_(rt_thread *t) VPROF_RT_HIDDEN_;

/* Holds back the profiler frame of a record written from now on (a BEGIN and its LABEL
 * stay together), or, with 0, writes the frame held since: a flag on the interval-begin
 * path, a call only when a flush did happen. */
static VPROF_ALWAYS_INLINE_ void vprof_rt_hold_profiler_frame_(int hold) {
  rt_thread *t = &vprof_rt_thread_;
  t->hold = (unsigned char)(hold != 0);
  if (!hold && __builtin_expect(t->held_to != 0, 0))
    vprof_rt_release_profiler_frame_(t);
}

/* In a fork child: forgets the parent's streams without writing into their mappings and
 * numbers the child's streams from 0, its first one flagged as a fork child's. */
void vprof_rt_streams_after_fork_(void) VPROF_RT_HIDDEN_;

/* At process exit: writes the refined frequency `hz` and the end clock sample into every
 * stream header of the process and marks the streams closed. Returns how many streams
 * the process numbered (at most the headers it keeps) and adds their drops to *dropped. */
uint32_t vprof_rt_streams_end_(uint64_t hz, uint64_t end_ticks, uint64_t end_real,
                               uint64_t *dropped) VPROF_RT_HIDDEN_;

#endif /* VPROF_RT_STREAM_H */
