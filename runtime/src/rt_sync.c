/* libvprof_rt sync interposition: pthread mutex/cond/rwlock and POSIX semaphore calls
 * of the program land here (symbol interposition, no source change), are recorded as
 * documented in trace_format.h, and are passed to the real functions (dlsym RTLD_NEXT).
 * Results and errno of the real calls are returned unchanged. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <time.h>

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

/* One table of the interposed functions: name, glibc version wanted (NULL = default),
 * slot. pthread_cond_* must be the GLIBC_2.3.2 versions: plain dlsym returns the
 * GLIBC_2.2.5 compatibility ones, which use another condvar layout. */
#define VPROF_SYNC_FUNCTIONS(X)                                                        \
  X(mutex_fn, pthread_mutex_lock, NULL)                                                \
  X(mutex_fn, pthread_mutex_trylock, NULL)                                             \
  X(mutex_timed_fn, pthread_mutex_timedlock, NULL)                                     \
  X(mutex_fn, pthread_mutex_unlock, NULL)                                              \
  X(cond_wait_fn, pthread_cond_wait, "GLIBC_2.3.2")                                    \
  X(cond_timed_fn, pthread_cond_timedwait, "GLIBC_2.3.2")                              \
  X(cond_fn, pthread_cond_signal, "GLIBC_2.3.2")                                       \
  X(cond_fn, pthread_cond_broadcast, "GLIBC_2.3.2")                                    \
  X(rw_fn, pthread_rwlock_rdlock, NULL)                                                \
  X(rw_fn, pthread_rwlock_wrlock, NULL)                                                \
  X(rw_fn, pthread_rwlock_tryrdlock, NULL)                                             \
  X(rw_fn, pthread_rwlock_trywrlock, NULL)                                             \
  X(rw_timed_fn, pthread_rwlock_timedrdlock, NULL)                                     \
  X(rw_timed_fn, pthread_rwlock_timedwrlock, NULL)                                     \
  X(rw_fn, pthread_rwlock_unlock, NULL)                                                \
  X(sem_fn, sem_wait, NULL)                                                            \
  X(sem_fn, sem_trywait, NULL)                                                         \
  X(sem_timed_fn, sem_timedwait, NULL)                                                 \
  X(sem_fn, sem_post, NULL)                                                            \
  X(mutex_clock_fn, pthread_mutex_clocklock, NULL)                                     \
  X(cond_clock_fn, pthread_cond_clockwait, NULL)                                       \
  X(rw_clock_fn, pthread_rwlock_clockrdlock, NULL)                                     \
  X(rw_clock_fn, pthread_rwlock_clockwrlock, NULL)                                     \
  X(sem_clock_fn, sem_clockwait, NULL)

#define VPROF_DECLARE_REAL(type, name, ver) static type real_##name;
VPROF_SYNC_FUNCTIONS(VPROF_DECLARE_REAL)
#undef VPROF_DECLARE_REAL

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
#define VPROF_RESOLVE(type, name, ver)                                                 \
  if (!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE))                                \
    __atomic_store_n(&real_##name, (type)lookup(#name, ver), __ATOMIC_RELEASE);
  VPROF_SYNC_FUNCTIONS(VPROF_RESOLVE)
#undef VPROF_RESOLVE
  t_resolving = 0;
}

/* The real function, resolved on first use if the constructor has not run yet. */
#define REAL(name)                                                                     \
  (__builtin_expect(real_##name != NULL, 1) ? real_##name : resolve_##name())

#define VPROF_RESOLVER(type, name, ver)                                                \
  static type resolve_##name(void) {                                                   \
    if (!t_resolving)                                                                  \
      vprof_sync_resolve_();                                                           \
    return __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                            \
  }
VPROF_SYNC_FUNCTIONS(VPROF_RESOLVER)
#undef VPROF_RESOLVER

/* Records a sync event if sync recording is on: one clock read, one 16-byte record. */
static VPROF_ALWAYS_INLINE_ void sync_emit(unsigned kind, const void *obj) {
  if (__builtin_expect(__atomic_load_n(&vprof_rt_sync_on_, __ATOMIC_RELAXED), 1))
    vprof_emit_(kind, (uint64_t)(uintptr_t)obj);
}

#define SYNC_ON() __builtin_expect(__atomic_load_n(&vprof_rt_sync_on_, __ATOMIC_RELAXED), 1)

/* ---------------------------------------------------------------- mutex */

int pthread_mutex_lock(pthread_mutex_t *m) {
  mutex_fn lock = REAL(pthread_mutex_lock), trylock;
  int rc;
  if (!lock)
    return __pthread_mutex_lock ? __pthread_mutex_lock(m) : EINVAL;
  if (!SYNC_ON())
    return lock(m);
  trylock = REAL(pthread_mutex_trylock);
  rc = trylock ? trylock(m) : EBUSY;
  if (rc == EBUSY) {
    sync_emit(VPROF_REC_LOCK_WAIT, m);
    rc = lock(m);
  } else if (rc != 0 && rc != EOWNERDEAD) {
    rc = lock(m); /* let the real lock decide (and report) this case */
  }
  if (rc == 0 || rc == EOWNERDEAD)
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
  mutex_fn trylock = REAL(pthread_mutex_trylock);
  int rc;
  if (!trylock)
    return __pthread_mutex_trylock ? __pthread_mutex_trylock(m) : EINVAL;
  rc = trylock(m);
  if (rc == 0 || rc == EOWNERDEAD)
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
  mutex_timed_fn timedlock = REAL(pthread_mutex_timedlock);
  mutex_fn trylock;
  int rc;
  if (!timedlock)
    return EINVAL;
  if (!SYNC_ON())
    return timedlock(m, abstime);
  trylock = REAL(pthread_mutex_trylock);
  rc = trylock ? trylock(m) : EBUSY;
  if (rc == EBUSY) {
    sync_emit(VPROF_REC_LOCK_WAIT, m);
    rc = timedlock(m, abstime);
  } else if (rc != 0 && rc != EOWNERDEAD) {
    rc = timedlock(m, abstime);
  }
  if (rc == 0 || rc == EOWNERDEAD)
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
                            const struct timespec *abstime) {
  mutex_clock_fn clocklock = REAL(pthread_mutex_clocklock);
  mutex_fn trylock;
  int rc;
  if (!clocklock)
    return EINVAL;
  if (!SYNC_ON())
    return clocklock(m, clock, abstime);
  trylock = REAL(pthread_mutex_trylock);
  rc = trylock ? trylock(m) : EBUSY;
  if (rc == EBUSY) {
    sync_emit(VPROF_REC_LOCK_WAIT, m);
    rc = clocklock(m, clock, abstime);
  } else if (rc != 0 && rc != EOWNERDEAD) {
    rc = clocklock(m, clock, abstime);
  }
  if (rc == 0 || rc == EOWNERDEAD)
    sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
  mutex_fn unlock = REAL(pthread_mutex_unlock);
  if (!unlock)
    return __pthread_mutex_unlock ? __pthread_mutex_unlock(m) : EINVAL;
  sync_emit(VPROF_REC_LOCK_RELEASE, m);
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
  sync_emit(VPROF_REC_LOCK_RELEASE, m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m);
  sync_emit(VPROF_REC_COND_WAIT_END, c);
  sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                           const struct timespec *abstime) {
  cond_timed_fn wait = REAL(pthread_cond_timedwait);
  int rc;
  if (!wait)
    return EINVAL;
  if (!SYNC_ON())
    return wait(c, m, abstime);
  sync_emit(VPROF_REC_LOCK_RELEASE, m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m, abstime);
  sync_emit(rc == ETIMEDOUT ? VPROF_REC_COND_WAIT_TIMEOUT : VPROF_REC_COND_WAIT_END, c);
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
  sync_emit(VPROF_REC_LOCK_RELEASE, m);
  sync_emit(VPROF_REC_COND_WAIT_BEGIN, c);
  rc = wait(c, m, clock, abstime);
  sync_emit(rc == ETIMEDOUT ? VPROF_REC_COND_WAIT_TIMEOUT : VPROF_REC_COND_WAIT_END, c);
  sync_emit(VPROF_REC_LOCK_ACQUIRE, m);
  return rc;
}

int pthread_cond_signal(pthread_cond_t *c) {
  cond_fn signal = REAL(pthread_cond_signal);
  if (!signal)
    return EINVAL;
  sync_emit(VPROF_REC_COND_SIGNAL, c);
  return signal(c);
}

int pthread_cond_broadcast(pthread_cond_t *c) {
  cond_fn broadcast = REAL(pthread_cond_broadcast);
  if (!broadcast)
    return EINVAL;
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

/* Blocking acquisition: try first; WAIT only if the lock was busy. */
static int rw_acquire(pthread_rwlock_t *l, rw_fn try_fn, const rw_call *c, unsigned wait_kind,
                      unsigned acq_kind) {
  int rc = try_fn ? try_fn(l) : EBUSY;
  if (rc == EBUSY) {
    sync_emit(wait_kind, l);
    rc = rw_block(l, c);
  } else if (rc != 0) {
    rc = rw_block(l, c);
  }
  if (rc == 0)
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
  if (rc == 0)
    sync_emit(VPROF_REC_RWLOCK_ACQUIRE_RD, l);
  return rc;
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l) {
  rw_fn try_fn = REAL(pthread_rwlock_trywrlock);
  int rc;
  if (!try_fn)
    return EINVAL;
  rc = try_fn(l);
  if (rc == 0)
    sync_emit(VPROF_REC_RWLOCK_ACQUIRE_WR, l);
  return rc;
}

int pthread_rwlock_unlock(pthread_rwlock_t *l) {
  rw_fn unlock = REAL(pthread_rwlock_unlock);
  if (!unlock)
    return EINVAL;
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
  if (rc == 0)
    sync_emit(VPROF_REC_SEM_ACQUIRE, s);
  return rc;
}

int sem_post(sem_t *s) {
  sem_fn post = REAL(sem_post);
  if (!post) {
    errno = ENOSYS;
    return -1;
  }
  sync_emit(VPROF_REC_SEM_POST, s);
  return post(s);
}
