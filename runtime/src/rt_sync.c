/* libvprof_rt sync interposition: pthread mutex/cond/rwlock and POSIX semaphore calls
 * of the program land here (symbol interposition, no source change), are recorded as
 * documented in trace_format.h (at the VPROF_SYNC level: 1 = edge-forming records only,
 * 2 = every call), and are passed to the real functions (dlsym RTLD_NEXT).
 * Results and errno of the real calls are returned unchanged. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <time.h>

int vprof_rt_sync_on_;

typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*mutex_timed_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timed_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*cond_fn)(pthread_cond_t *);
typedef int (*rw_fn)(pthread_rwlock_t *);
typedef int (*rw_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*sem_fn)(sem_t *);
typedef int (*sem_timed_fn)(sem_t *, const struct timespec *);
typedef int (*mutex_clock_fn)(pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*cond_clock_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                             const struct timespec *);
typedef int (*rw_clock_fn)(pthread_rwlock_t *, clockid_t, const struct timespec *);
typedef int (*sem_clock_fn)(sem_t *, clockid_t, const struct timespec *);

/* The interposed functions are the one list of <vprof/sync_functions.def> (shared with
 * the instrumenter): VPROF_SYNC_FUNCTION(shape, name, glibc version wanted or NULL). Each
 * list entry gets a slot for the real function (real_<name>) and a resolver below, and an
 * interposer in this file; each shape names its function type, <shape>_fn above, which
 * must be the C library's own type of the function. */
#define VPROF_SYNC_FUNCTION(shape, name, ver)                                                      \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), shape##_fn),                      \
                 #name ": the shape in sync_functions.def is not its type");
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION

#define VPROF_SYNC_FUNCTION(shape, name, ver) static shape##_fn real_##name;
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION

/* glibc's own entry points of the mutex functions, used only if a mutex call arrives
 * while dlsym itself is running on this thread (dlsym may lock or allocate). */
extern int __pthread_mutex_lock(pthread_mutex_t *) __attribute__((weak));
extern int __pthread_mutex_trylock(pthread_mutex_t *) __attribute__((weak));
extern int __pthread_mutex_unlock(pthread_mutex_t *) __attribute__((weak));

static __thread int t_resolving VPROF_TLS_MODEL_;

static void *lookup(const char *name, const char *version) {
  void *p = NULL;
#if defined(__GLIBC__)
  if (version)
    p = dlvsym(RTLD_NEXT, name, version);
#else
  (void)version;
#endif
  if (!p)
    p = dlsym(RTLD_NEXT, name);
  return p;
}

void vprof_sync_resolve_(void) {
  t_resolving = 1;
#define VPROF_SYNC_FUNCTION(shape, name, ver)                                                      \
  if (!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE))                                            \
    __atomic_store_n(&real_##name, (shape##_fn)lookup(#name, ver), __ATOMIC_RELEASE);
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION
  t_resolving = 0;
}

/* The real function, resolved on first use if the constructor has not run yet. */
#define REAL(name) (__builtin_expect(real_##name != NULL, 1) ? real_##name : resolve_##name())

#define VPROF_SYNC_FUNCTION(shape, name, ver)                                                      \
  static shape##_fn resolve_##name(void) {                                                         \
    if (!t_resolving)                                                                              \
      vprof_sync_resolve_();                                                                       \
    return __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                                        \
  }
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION

/* Records a sync event if sync recording is on: one clock read, one 16-byte record. */
static VPROF_ALWAYS_INLINE_ void sync_emit(unsigned kind, const void *obj) {
  if (__builtin_expect(__atomic_load_n(&vprof_rt_sync_on_, __ATOMIC_RELAXED), 1))
    vprof_emit_(kind, (uint64_t)(uintptr_t)obj);
}

/* The sync level: 0 = nothing recorded, 1 = edge-forming records only, 2 = every call. */
#define SYNC_LEVEL() __atomic_load_n(&vprof_rt_sync_on_, __ATOMIC_RELAXED)
#define SYNC_ON() __builtin_expect(SYNC_LEVEL() != 0, 1)
#define SYNC_ALL() __builtin_expect(SYNC_LEVEL() >= 2, 0)

/* At level 1 the waiter checks below read glibc's private object layouts (glibc >= 2.25,
 * checked against 2.36) on 64-bit x86 and Arm; elsewhere they answer "maybe" and the
 * record is written as at level 2. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25)) &&          \
    defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define VPROF_GLIBC_LAYOUT_ 1
#else
#define VPROF_GLIBC_LAYOUT_ 0
#endif

/* 1 if unlocking `m` (owned by the caller) may wake a thread blocked on it, 0 if it
 * cannot right now (or does not release the mutex at all). glibc's normal, recursive,
 * errorcheck and adaptive mutexes without the robust, priority-inherit, priority-protect
 * or elision flags keep a lock word that is 0 (free), 1 (locked, no waiter) or 2 (locked,
 * waiters may be blocked): a thread blocks in the kernel only after setting it to 2, a
 * woken thread takes the mutex by setting 2 again, and the unlock wakes a thread only if
 * the word was 2. Every other kind, and every other libc, answers 1. The answer can go
 * stale at once: a waiter may set 2 between this check and the real unlock; see
 * docs/trace-format.md, "Sync levels", for what the analyzer does then. */
static VPROF_ALWAYS_INLINE_ int mutex_unlock_may_wake(pthread_mutex_t *m) {
#if VPROF_GLIBC_LAYOUT_
  int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
  /* & 127 = type (0..3) | robust 16 | PI 32 | PP 64; 256 = elision; 128 (pshared) is fine */
  if (__builtin_expect((kind & 127) > 3 || (kind & 256), 0))
    return 1;
  if ((kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP && m->__data.__count > 1)
    return 0; /* a nested unlock: the mutex stays owned */
  return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 1;
#else
  (void)m;
  return 1;
#endif
}

/* 1 if a thread may be waiting on `s`: glibc's 64-bit semaphore word holds the value in
 * its low 32 bits and the registered waiters in the high 32 (a waiter registers before it
 * sleeps), and sem_post wakes only if that count is non-zero. */
static VPROF_ALWAYS_INLINE_ int sem_may_have_waiters(sem_t *s) {
#if VPROF_GLIBC_LAYOUT_
  return (__atomic_load_n((const uint64_t *)(const void *)s, __ATOMIC_RELAXED) >> 32) != 0;
#else
  (void)s;
  return 1;
#endif
}

/* 1 if a thread may be waiting on `c`: glibc's signal and broadcast return at once,
 * waking nobody, when __wrefs >> 3 (waiters holding a reference) is 0 — the same test. */
static VPROF_ALWAYS_INLINE_ int cond_may_have_waiters(pthread_cond_t *c) {
#if VPROF_GLIBC_LAYOUT_
  return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
#else
  (void)c;
  return 1;
#endif
}

/* ---------------------------------------------------------------- mutex */

/* The blocking call of a mutex acquisition: exactly one of the three is set. */
typedef struct mutex_call {
  mutex_fn lock;
  mutex_timed_fn timed;
  mutex_clock_fn clocked;
  clockid_t clock;
  const struct timespec *abstime;
} mutex_call;

static int mutex_block(pthread_mutex_t *m, const mutex_call *c) {
  if (c->lock)
    return c->lock(m);
  if (c->timed)
    return c->timed(m, c->abstime);
  return c->clocked(m, c->clock, c->abstime);
}

/* A real trylock first (mutex_try); busy -> LOCK_WAIT, the blocking call, LOCK_ACQUIRE
 * (mutex_acquire_slow). An acquisition that did not wait writes its LOCK_ACQUIRE only at
 * level 2. */
static VPROF_ALWAYS_INLINE_ int mutex_try(pthread_mutex_t *m) {
  mutex_fn trylock = REAL(pthread_mutex_trylock);
  int rc = trylock ? trylock(m) : EBUSY;
  if (__builtin_expect(rc == 0, 1) && SYNC_ALL())
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

static __attribute__((noinline)) int mutex_acquire_slow(pthread_mutex_t *m, int rc,
                                                        const mutex_call *c) {
  int waited = 0;
  if (rc == EBUSY) {
    sync_emit(VPROF_REC_LOCK_WAIT, m);
    waited = 1;
    rc = mutex_block(m, c);
  } else if (rc != EOWNERDEAD) {
    rc = mutex_block(m, c); /* let the real call decide (and report) this case */
  }
  if ((rc == 0 || rc == EOWNERDEAD) && (waited || SYNC_ALL()))
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
  mutex_fn lock = REAL(pthread_mutex_lock);
  if (!lock)
    return __pthread_mutex_lock ? __pthread_mutex_lock(m) : EINVAL;
  if (!SYNC_ON())
    return lock(m);
  int rc = mutex_try(m);
  if (__builtin_expect(rc == 0, 1))
    return 0;
  mutex_call c = {lock, NULL, NULL, 0, NULL};
  return mutex_acquire_slow(m, rc, &c);
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
  mutex_fn trylock = REAL(pthread_mutex_trylock);
  int rc;
  if (!trylock)
    return __pthread_mutex_trylock ? __pthread_mutex_trylock(m) : EINVAL;
  rc = trylock(m);
  if ((rc == 0 || rc == EOWNERDEAD) && SYNC_ALL())
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
  mutex_timed_fn timedlock = REAL(pthread_mutex_timedlock);
  if (!timedlock)
    return EINVAL;
  if (!SYNC_ON())
    return timedlock(m, abstime);
  int rc = mutex_try(m);
  if (__builtin_expect(rc == 0, 1))
    return 0;
  mutex_call c = {NULL, timedlock, NULL, 0, abstime};
  return mutex_acquire_slow(m, rc, &c);
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime) {
  mutex_clock_fn clocklock = REAL(pthread_mutex_clocklock);
  if (!clocklock)
    return EINVAL;
  if (!SYNC_ON())
    return clocklock(m, clock, abstime);
  int rc = mutex_try(m);
  if (__builtin_expect(rc == 0, 1))
    return 0;
  mutex_call c = {NULL, NULL, clocklock, clock, abstime};
  return mutex_acquire_slow(m, rc, &c);
}

/* LOCK_RELEASE before the real unlock: always at level 2; at level 1 only if the unlock
 * may wake a blocked thread. */
static VPROF_ALWAYS_INLINE_ void mutex_release(pthread_mutex_t *m) {
  int level = SYNC_LEVEL();
  if (__builtin_expect(level >= 2, 0) || (level == 1 && mutex_unlock_may_wake(m)))
    vprof_emit_(VPROF_REC_LOCK_RELEASE, (uint64_t)(uintptr_t)m);
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
  mutex_fn unlock = REAL(pthread_mutex_unlock);
  if (!unlock)
    return __pthread_mutex_unlock ? __pthread_mutex_unlock(m) : EINVAL;
  mutex_release(m);
  return unlock(m);
}

/* ---------------------------------------------------------------- condvar */

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  cond_wait_fn wait = REAL(pthread_cond_wait);
  int rc;
  if (!wait)
    return EINVAL;
  if (!SYNC_ON())
    return wait(c, m);
  mutex_release(m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m);
  sync_emit(VPROF_REC_COND_WAIT_END, c);
  if (SYNC_ALL()) /* the re-acquisition is not seen as a wait: never part of an edge */
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
  cond_timed_fn wait = REAL(pthread_cond_timedwait);
  int rc;
  if (!wait)
    return EINVAL;
  if (!SYNC_ON())
    return wait(c, m, abstime);
  mutex_release(m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m, abstime);
  sync_emit(rc == ETIMEDOUT ? VPROF_REC_COND_WAIT_TIMEOUT : VPROF_REC_COND_WAIT_END, c);
  if (SYNC_ALL()) /* the re-acquisition is not seen as a wait: never part of an edge */
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

/* std::condition_variable::wait_for/wait_until (libstdc++ on glibc >= 2.30) use this. */
int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                           const struct timespec *abstime) {
  cond_clock_fn wait = REAL(pthread_cond_clockwait);
  int rc;
  if (!wait)
    return EINVAL;
  if (!SYNC_ON())
    return wait(c, m, clock, abstime);
  mutex_release(m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m, clock, abstime);
  sync_emit(rc == ETIMEDOUT ? VPROF_REC_COND_WAIT_TIMEOUT : VPROF_REC_COND_WAIT_END, c);
  if (SYNC_ALL()) /* the re-acquisition is not seen as a wait: never part of an edge */
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_cond_signal(pthread_cond_t *c) {
  cond_fn signal = REAL(pthread_cond_signal);
  if (!signal)
    return EINVAL;
  if (SYNC_ALL() || cond_may_have_waiters(c))
    sync_emit(VPROF_REC_COND_SIGNAL, c);
  return signal(c);
}

int pthread_cond_broadcast(pthread_cond_t *c) {
  cond_fn broadcast = REAL(pthread_cond_broadcast);
  if (!broadcast)
    return EINVAL;
  if (SYNC_ALL() || cond_may_have_waiters(c))
    sync_emit(VPROF_REC_COND_BROADCAST, c);
  return broadcast(c);
}

/* ---------------------------------------------------------------- rwlock */

/* The blocking call of an rwlock acquisition: exactly one of the three is set. */
typedef struct rw_call {
  rw_fn lock;
  rw_timed_fn timed;
  rw_clock_fn clocked;
  clockid_t clock;
  const struct timespec *abstime;
} rw_call;

static int rw_block(pthread_rwlock_t *l, const rw_call *c) {
  if (c->lock)
    return c->lock(l);
  if (c->timed)
    return c->timed(l, c->abstime);
  return c->clocked(l, c->clock, c->abstime);
}

/* Blocking acquisition: try first; WAIT only if the lock was busy. An acquisition that
 * did not wait writes its ACQUIRE only at level 2. */
static int rw_acquire(pthread_rwlock_t *l, rw_fn try_fn, const rw_call *c, unsigned wait_kind,
                      unsigned acq_kind) {
  int rc = try_fn ? try_fn(l) : EBUSY, waited = 0;
  if (rc == EBUSY) {
    sync_emit(wait_kind, l);
    waited = 1;
    rc = rw_block(l, c);
  } else if (rc != 0) {
    rc = rw_block(l, c);
  }
  if (rc == 0 && (waited || SYNC_ALL()))
    sync_emit(acq_kind, l);
  return rc;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  rw_fn lock = REAL(pthread_rwlock_rdlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l);
  rw_call c = {lock, NULL, NULL, 0, NULL};
  return rw_acquire(l, REAL(pthread_rwlock_tryrdlock), &c, VPROF_REC_RWLOCK_WAIT_RD,
                    VPROF_REC_RWLOCK_ACQUIRE_RD);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  rw_fn lock = REAL(pthread_rwlock_wrlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l);
  rw_call c = {lock, NULL, NULL, 0, NULL};
  return rw_acquire(l, REAL(pthread_rwlock_trywrlock), &c, VPROF_REC_RWLOCK_WAIT_WR,
                    VPROF_REC_RWLOCK_ACQUIRE_WR);
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime) {
  rw_timed_fn lock = REAL(pthread_rwlock_timedrdlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l, abstime);
  rw_call c = {NULL, lock, NULL, 0, abstime};
  return rw_acquire(l, REAL(pthread_rwlock_tryrdlock), &c, VPROF_REC_RWLOCK_WAIT_RD,
                    VPROF_REC_RWLOCK_ACQUIRE_RD);
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime) {
  rw_timed_fn lock = REAL(pthread_rwlock_timedwrlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l, abstime);
  rw_call c = {NULL, lock, NULL, 0, abstime};
  return rw_acquire(l, REAL(pthread_rwlock_trywrlock), &c, VPROF_REC_RWLOCK_WAIT_WR,
                    VPROF_REC_RWLOCK_ACQUIRE_WR);
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock,
                               const struct timespec *abstime) {
  rw_clock_fn lock = REAL(pthread_rwlock_clockrdlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l, clock, abstime);
  rw_call c = {NULL, NULL, lock, clock, abstime};
  return rw_acquire(l, REAL(pthread_rwlock_tryrdlock), &c, VPROF_REC_RWLOCK_WAIT_RD,
                    VPROF_REC_RWLOCK_ACQUIRE_RD);
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
                               const struct timespec *abstime) {
  rw_clock_fn lock = REAL(pthread_rwlock_clockwrlock);
  if (!lock)
    return EINVAL;
  if (!SYNC_ON())
    return lock(l, clock, abstime);
  rw_call c = {NULL, NULL, lock, clock, abstime};
  return rw_acquire(l, REAL(pthread_rwlock_trywrlock), &c, VPROF_REC_RWLOCK_WAIT_WR,
                    VPROF_REC_RWLOCK_ACQUIRE_WR);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) {
  rw_fn try_fn = REAL(pthread_rwlock_tryrdlock);
  int rc;
  if (!try_fn)
    return EINVAL;
  rc = try_fn(l);
  if (rc == 0 && SYNC_ALL())
    sync_emit(VPROF_REC_RWLOCK_ACQUIRE_RD, l);
  return rc;
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l) {
  rw_fn try_fn = REAL(pthread_rwlock_trywrlock);
  int rc;
  if (!try_fn)
    return EINVAL;
  rc = try_fn(l);
  if (rc == 0 && SYNC_ALL())
    sync_emit(VPROF_REC_RWLOCK_ACQUIRE_WR, l);
  return rc;
}

int pthread_rwlock_unlock(pthread_rwlock_t *l) {
  rw_fn unlock = REAL(pthread_rwlock_unlock);
  if (!unlock)
    return EINVAL;
  /* written at every level: glibc's rwlock keeps its waiters in three words (reader
   * count and flags, writer and phase futexes); no single cheap check is sound */
  sync_emit(VPROF_REC_RWLOCK_RELEASE, l);
  return unlock(l);
}

/* ---------------------------------------------------------------- semaphores */

/* sem_* report errors through errno: the trywait probe's EAGAIN must not leak into a
 * wait that then succeeds, so errno is restored before the real blocking call. */
static int sem_acquire(sem_t *s, sem_fn wait_fn, sem_timed_fn timed_fn, sem_clock_fn clock_fn,
                       clockid_t clock, const struct timespec *abstime) {
  sem_fn try_fn = REAL(sem_trywait);
  int saved = errno, rc;
  rc = try_fn ? try_fn(s) : -1;
  if (rc == 0) {
    if (SYNC_ALL())
      sync_emit(VPROF_REC_SEM_ACQUIRE, s);
    errno = saved;
    return 0;
  }
  if (try_fn && errno == EAGAIN)
    sync_emit(VPROF_REC_SEM_WAIT, s);
  errno = saved;
  rc = wait_fn ? wait_fn(s) : timed_fn ? timed_fn(s, abstime) : clock_fn(s, clock, abstime);
  if (rc == 0)
    sync_emit(VPROF_REC_SEM_ACQUIRE, s);
  return rc;
}

int sem_wait(sem_t *s) {
  sem_fn wait_fn = REAL(sem_wait);
  if (!wait_fn) {
    errno = ENOSYS;
    return -1;
  }
  if (!SYNC_ON())
    return wait_fn(s);
  return sem_acquire(s, wait_fn, NULL, NULL, 0, NULL);
}

int sem_timedwait(sem_t *s, const struct timespec *abstime) {
  sem_timed_fn wait_fn = REAL(sem_timedwait);
  if (!wait_fn) {
    errno = ENOSYS;
    return -1;
  }
  if (!SYNC_ON())
    return wait_fn(s, abstime);
  return sem_acquire(s, NULL, wait_fn, NULL, 0, abstime);
}

int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime) {
  sem_clock_fn wait_fn = REAL(sem_clockwait);
  if (!wait_fn) {
    errno = ENOSYS;
    return -1;
  }
  if (!SYNC_ON())
    return wait_fn(s, clock, abstime);
  return sem_acquire(s, NULL, NULL, wait_fn, clock, abstime);
}

int sem_trywait(sem_t *s) {
  sem_fn try_fn = REAL(sem_trywait);
  int rc;
  if (!try_fn) {
    errno = ENOSYS;
    return -1;
  }
  rc = try_fn(s);
  if (rc == 0 && SYNC_ALL())
    sync_emit(VPROF_REC_SEM_ACQUIRE, s);
  return rc;
}

int sem_post(sem_t *s) {
  sem_fn post = REAL(sem_post);
  if (!post) {
    errno = ENOSYS;
    return -1;
  }
  if (SYNC_ALL() || sem_may_have_waiters(s))
    sync_emit(VPROF_REC_SEM_POST, s);
  return post(s);
}
