/* libvprof_rt's drain (rt_drain.c): one thread per traced process that appends full halves of
 * the threads' windows to their stream files, so that a recording thread hands a half
 * over and goes on writing into the other instead of stalling in pwrite inside whatever
 * interval it is running. Without the thread (VPROF_DRAIN=0, or it could not be started)
 * the recording thread appends the half itself, as before. */
#ifndef VPROF_RT_DRAIN_H
#define VPROF_RT_DRAIN_H

#include <stdint.h>

#include "rt_internal.h"

struct rt_thread;

/* A job's state word: its phase, and JOB_LINKED while the job sits in the drain's queue
 * (pushed and not yet passed by the drain: it must not be pushed again before that). */
enum drain_job_state {
  JOB_IDLE = 0,           /* nothing on its way */
  JOB_QUEUED = 1,         /* handed over, not begun: its owner may take it back */
  JOB_RUNNING = 2,        /* the drain appends it */
  JOB_RUNNING_WAITED = 3, /* ... and its owner sleeps on the word until it is done */
  JOB_OWNER = 4,          /* taken back: its owner appends it itself */
  JOB_PHASE = 7,          /* the phase's bits */
  JOB_LINKED = 8
};

/* One half of a thread's window on its way to the data region. A thread has at most one
 * in flight: it writes into the other half meanwhile. */
typedef struct rt_drain_job {
  struct rt_drain_job *next; /* the drain's queue */
  struct rt_thread *owner;
  vprof_record *half;
  uint64_t records; /* records of the half */
  uint64_t index;   /* the stream index of its first record */
  int state;        /* enum drain_job_state: a phase | JOB_LINKED, changed atomically */
  int err;          /* errno of a failed append (0: none); read after the job is idle */
} rt_drain_job;

/* Appends the owner's half `half` of `records` records, the stream's records from `index`
 * on, to its data region, then counts them as committed, zeroes the half and moves the
 * window's base past it. On the drain thread, or at once on the calling thread if there is
 * none; returns 1 if the caller did the work itself (it stalled), 0 if it was handed over. */
int vprof_rt_drain_submit_(struct rt_thread *t, vprof_record *half, uint64_t records,
                           uint64_t index) VPROF_RT_HIDDEN_;

/* Starts the drain thread now, at start-up, where creating a thread is safe; a fork child
 * starts its own at its first hand-over. Nothing if VPROF_DRAIN=0. */
void vprof_rt_drain_start_(void) VPROF_RT_HIDDEN_;

/* Waits until the thread's job is done; a job the drain has not begun yet is taken back
 * and appended by the caller, so a drain that waits for a CPU costs the caller one append,
 * not the wait. Returns 1 if the thread stalled (waited or appended). */
int vprof_rt_drain_wait_(struct rt_thread *t) VPROF_RT_HIDDEN_;

/* Before the thread's stream goes (its job lives in the thread's memory): waits until
 * the job is done and the drain has passed it. */
void vprof_rt_drain_settle_(struct rt_thread *t) VPROF_RT_HIDDEN_;

/* In a fork child: the drain thread is the parent's; the child starts its own when needed. */
void vprof_rt_drain_after_fork_(void) VPROF_RT_HIDDEN_;

#endif /* VPROF_RT_DRAIN_H */
