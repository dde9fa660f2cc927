/* libvprof_rt's drain: a process-wide thread, started with the runtime (or, in a fork
 * child, by its first half handed over), that appends halves of the threads' windows to
 * their stream files. Started at start-up rather than from a probe's slow path because
 * pthread_create is not async-signal-safe: a probe in a signal handler that interrupted
 * malloc must not be the one to create it. Recording threads push their job on a
 * lock-free stack and wake the drain only if it sleeps. A thread that needs its other half
 * back before the drain has begun appending it takes the job back and appends it itself:
 * on a machine with more runnable threads than CPUs the drain may wait milliseconds for
 * one, and one append is the shorter stall. A job the drain has begun is waited for. Both
 * spin a little before they sleep, so that a thread filling halves faster than a wake-up
 * takes does not pay one per half: the drain, for twice the time between the last two
 * pushes when that is short (at most VPROF_DRAIN_SPIN_US); a waiting thread, up to
 * VPROF_DRAIN_SPIN_US. A job taken back stays in the drain's queue until the drain passes
 * it (JOB_LINKED), and is queued there again rather than pushed twice. The
 * drain takes no lock a recording thread could hold, records nothing and blocks the
 * program's signals (they stay with the program's threads). */
#define _GNU_SOURCE
#include "rt_drain.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_stream.h"
#include <vprof/rt_testing.h>

/* The longest a drain or a waiting thread spins before it sleeps, in microseconds. */
#define VPROF_DRAIN_SPIN_US 100

enum { DRAIN_NONE = 0, DRAIN_STARTING = 1, DRAIN_RUNNING = 2, DRAIN_UNAVAILABLE = 3 };

/* The process's drain: its queue of jobs, whether it sleeps, whether it runs. */
static struct {
  rt_drain_job *queue; /* pushed by recording threads, taken whole by the drain */
  int sleeping;        /* 1: the drain waits on this word for a push */
  int state;           /* DRAIN_* */
  uint64_t last_push;  /* clock of the last push (written by pushers, relaxed) */
  uint64_t push_gap;   /* clock ticks between the last two pushes (relaxed) */
  int held;            /* tests: 1 while vprof_rt_hold_drain holds it */
} g_drain;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* VPROF_DRAIN_SPIN_US in clock ticks. */
static uint64_t spin_limit(void) {
  return vprof_rt_clock_base_.hz / 1000000u * VPROF_DRAIN_SPIN_US;
}

/* Spins until *word is no longer `value` or `ticks` have passed. Returns 1 if it changed. */
static int spin_while(int *word, int value, uint64_t ticks) {
  uint64_t until = vprof_clock_() + ticks;
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value) {
    if (vprof_clock_() >= until)
      return 0;
    cpu_relax();
  }
  return 1;
}

/* Spins until something is queued or `ticks` have passed. */
static int spin_until_queued(uint64_t ticks) {
  uint64_t until = vprof_clock_() + ticks;
  while (__atomic_load_n(&g_drain.queue, __ATOMIC_ACQUIRE) == NULL) {
    if (vprof_clock_() >= until)
      return 0;
    cpu_relax();
  }
  return 1;
}

static void futex_wait(int *word, int value) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(int *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void job_append(rt_drain_job *j) {
  j->err = vprof_rt_stream_append_(j->owner, j->half, j->records, j->index) == 0 ? 0 : errno;
}

/* Sets the phase of the job's state word (and JOB_LINKED if `phase` has it), keeping a
 * JOB_LINKED already there (the drain may clear it meanwhile). Returns the word it
 * replaced. */
static int job_set_phase(rt_drain_job *j, int phase) {
  int s = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
  while (!__atomic_compare_exchange_n(&j->state, &s, (s & JOB_LINKED) | phase, 1, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
    ;
  return s;
}

/* The drain's append of a job it claimed, then the job is idle again and its owner, if it
 * sleeps on it, woken. */
static void job_run(rt_drain_job *j) {
  job_append(j);
  if (__atomic_exchange_n(&j->state, JOB_IDLE, __ATOMIC_ACQ_REL) == JOB_RUNNING_WAITED)
    futex_wake(&j->state);
}

/* The drain passes a job of its queue: it claims and appends one still queued, and in any
 * case unlinks it (a job its owner took back was appended already). After this the drain
 * does not touch the job again: its owner may push it anew. */
static void job_pass(rt_drain_job *j) {
  int s = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE), queued;
  do
    queued = (s & JOB_PHASE) == JOB_QUEUED;
  while (!__atomic_compare_exchange_n(&j->state, &s, queued ? JOB_RUNNING : s & JOB_PHASE, 1,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  if (queued)
    job_run(j);
}

/* Everything queued, oldest first. Null when the queue is empty. */
static rt_drain_job *take_queue(void) {
  rt_drain_job *newest = __atomic_exchange_n(&g_drain.queue, NULL, __ATOMIC_ACQ_REL),
               *oldest = NULL;
  while (newest) {
    rt_drain_job *next = newest->next;
    newest->next = oldest;
    oldest = newest;
    newest = next;
  }
  return oldest;
}

/* Sleeps until a job is pushed: says it sleeps, then looks once more (a push between the
 * two sees `sleeping` and wakes it, or the futex finds the word changed). */
static void sleep_until_pushed(void) {
  uint64_t gap = __atomic_load_n(&g_drain.push_gap, __ATOMIC_RELAXED), limit = spin_limit();
  if (gap && gap < limit / 2 && spin_until_queued(2 * gap))
    return;
  __atomic_store_n(&g_drain.sleeping, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&g_drain.queue, __ATOMIC_SEQ_CST) == NULL)
    futex_wait(&g_drain.sleeping, 1);
  __atomic_store_n(&g_drain.sleeping, 0, __ATOMIC_SEQ_CST);
}

static void *drain_main(void *unused) {
  (void)unused;
  /* this thread records nothing: a probe or an interposed call here is ignored */
  vprof_rt_thread_.state = TS_FAILED;
  for (;;) {
    rt_drain_job *j;
    if (__atomic_load_n(&g_drain.held, __ATOMIC_ACQUIRE)) {
      struct timespec nap = {0, 50000};
      nanosleep(&nap, NULL);
      continue;
    }
    j = take_queue();
    if (!j) {
      sleep_until_pushed();
      continue;
    }
    while (j) {
      rt_drain_job *next = j->next; /* read first: the owner may push the job once passed */
      job_pass(j);
      j = next;
    }
  }
  return NULL;
}

/* Starts the drain thread with every signal blocked (it inherits the mask), small and
 * detached. Returns 1 if it runs. */
static int drain_start(void) {
  pthread_attr_t attr;
  pthread_t th;
  sigset_t all, old;
  int rc;
  if (pthread_attr_init(&attr) != 0)
    return 0;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&th, &attr, drain_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    vprof_rt_log_("cannot start the drain thread (%s): threads append their own windows",
                  strerror(rc));
    return 0;
  }
  pthread_setname_np(th, "vprof-drain");
  vprof_rt_log_("drain thread started");
  return 1;
}

/* 1 if the drain runs (started now by this caller if it is the first), 0 if the caller
 * must append itself: drain off, not startable, or being started by another thread. */
static int drain_ready(void) {
  int s = __atomic_load_n(&g_drain.state, __ATOMIC_ACQUIRE);
  if (s == DRAIN_RUNNING)
    return 1;
  if (s != DRAIN_NONE)
    return 0;
  if (!vprof_rt_process_.opt.DRAIN) {
    __atomic_store_n(&g_drain.state, DRAIN_UNAVAILABLE, __ATOMIC_RELEASE);
    return 0;
  }
  if (!__atomic_compare_exchange_n(&g_drain.state, &s, DRAIN_STARTING, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return s == DRAIN_RUNNING;
  s = drain_start() ? DRAIN_RUNNING : DRAIN_UNAVAILABLE;
  __atomic_store_n(&g_drain.state, s, __ATOMIC_RELEASE);
  return s == DRAIN_RUNNING;
}

static void push(rt_drain_job *j) {
  uint64_t now = vprof_clock_(),
           last = __atomic_exchange_n(&g_drain.last_push, now, __ATOMIC_RELAXED);
  rt_drain_job *head = __atomic_load_n(&g_drain.queue, __ATOMIC_RELAXED);
  __atomic_store_n(&g_drain.push_gap, last && now > last ? now - last : 0, __ATOMIC_RELAXED);
  do
    j->next = head;
  while (!__atomic_compare_exchange_n(&g_drain.queue, &head, j, 1, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED));
  if (__atomic_exchange_n(&g_drain.sleeping, 0, __ATOMIC_SEQ_CST) == 1)
    futex_wake(&g_drain.sleeping);
}

/* The caller appends its job itself. */
static void job_run_here(rt_drain_job *j) {
  job_append(j);
  job_set_phase(j, JOB_IDLE);
}

/* Hands an idle job to the drain: pushed, or — still linked in the drain's queue, taken
 * back before the drain passed it — queued where it is, for the drain to find. */
static void hand_over(rt_drain_job *j) {
  if (!(job_set_phase(j, JOB_QUEUED | JOB_LINKED) & JOB_LINKED))
    push(j);
}

int vprof_rt_drain_submit_(rt_thread *t, vprof_record *half, uint64_t records, uint64_t index) {
  rt_drain_job *j = &t->job;
  j->owner = t;
  j->half = half;
  j->records = records;
  j->index = index;
  j->err = 0;
  if (drain_ready()) {
    hand_over(j);
    return 0;
  }
  job_set_phase(j, JOB_OWNER);
  job_run_here(j);
  return 1;
}

/* Sleeps until the drain has appended the job it claimed, after spinning up to the limit. */
static void wait_for_drain(rt_drain_job *j) {
  int s;
  if (spin_while(&j->state, JOB_RUNNING, spin_limit()))
    return;
  s = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
  while (s != JOB_IDLE) {
    if (s == JOB_RUNNING_WAITED || __atomic_compare_exchange_n(&j->state, &s, JOB_RUNNING_WAITED, 0,
                                                               __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      futex_wait(&j->state, JOB_RUNNING_WAITED);
    s = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
  }
}

int vprof_rt_drain_wait_(rt_thread *t) {
  rt_drain_job *j = &t->job;
  int s = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((s & JOB_PHASE) == JOB_IDLE)
      return 0;
    if ((s & JOB_PHASE) != JOB_QUEUED)
      break; /* the drain appends it */
    if (__atomic_compare_exchange_n(&j->state, &s, (s & JOB_LINKED) | JOB_OWNER, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      job_run_here(j); /* the drain has not begun it: appending it here is the shorter wait */
      return 1;
    }
  }
  wait_for_drain(j);
  return 1;
}

void vprof_rt_drain_settle_(rt_thread *t) {
  rt_drain_job *j = &t->job;
  struct timespec nap = {0, 20000};
  vprof_rt_drain_wait_(t);
  while (__atomic_load_n(&j->state, __ATOMIC_ACQUIRE) != JOB_IDLE)
    nanosleep(&nap, NULL); /* taken back, still in the drain's queue: the drain passes it */
}

void vprof_rt_drain_start_(void) { drain_ready(); }

int vprof_rt_hold_drain(int on) {
  if (__atomic_load_n(&g_drain.state, __ATOMIC_ACQUIRE) != DRAIN_RUNNING)
    return -1;
  __atomic_store_n(&g_drain.held, on != 0, __ATOMIC_RELEASE);
  return 0;
}

void vprof_rt_drain_after_fork_(void) {
  g_drain.queue = NULL;
  g_drain.sleeping = 0;
  g_drain.state = DRAIN_NONE;
  g_drain.last_push = g_drain.push_gap = 0;
}
