/* vprof probes: what the instrumenter inserts into planned functions. C99 (with the
 * GNU `cleanup` attribute, gcc and clang; C89 with `__extension__`) and C++11 and later
 * (RAII). The hot path is inline:
 * one clock read, two stores into the thread's mapped stream, no lock, no call.
 *
 * Body probe (a function's total time), declaration form, valid before or among
 * declarations and warning-free under -Wdeclaration-after-statement:
 *
 *   int f(int x) {
 *     VPROF_PROBE_SCOPE(17);          // ENTER(17) now, EXIT(17) at every exit of f
 *     ...
 *   }
 *
 * Call-site probe (the time of one call), C, as a GNU statement expression:
 *
 *   y = __extension__({ VPROF_PROBE_SCOPE(18); g(x); });
 *
 * C++ keeps the callee's value category and copy elision with a lambda:
 *
 *   y = ::vprof::rt::call(18, [&]() -> decltype(auto) { return g(x); });
 *
 * C++11 (no decltype(auto)) spells the return type out:
 *
 *   y = ::vprof::rt::call(18, [&]() -> decltype(g(x)) { return g(x); });
 *
 * Site ids come from the workspace site table; the runtime only sees integers.
 * Frames skipped by longjmp/siglongjmp or exceptions that bypass C cleanups leave an
 * ENTER without EXIT; every probe record carries the frame depth so the analyzer can
 * close them (docs/trace-format.md).
 */
#ifndef VPROF_PROBE_H
#define VPROF_PROBE_H

#include <stdint.h>
#include <vprof/trace_format.h>
#if !defined(__x86_64__) && !defined(__aarch64__)
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Per-thread write window into the thread's mapped stream. `cur == end` sends the
 * next event to vprof_emit_slow_, which creates the stream on a thread's first event,
 * appends the window to the stream file when it is full and starts it over, counts
 * drops at the size limit, and returns at once when tracing is off. */
typedef struct vprof_thread_window {
  vprof_record *cur;
  vprof_record *end;
} vprof_thread_window;

#if defined(__GNUC__)
#define VPROF_TLS_MODEL_ __attribute__((tls_model("initial-exec")))
#define VPROF_ALWAYS_INLINE_ __attribute__((always_inline)) __inline__
#else
#define VPROF_TLS_MODEL_
#define VPROF_ALWAYS_INLINE_ inline
#endif

extern __thread vprof_thread_window vprof_window_ VPROF_TLS_MODEL_;

/* Slow path (libvprof_rt): writes the record after making room, or drops it. */
void vprof_emit_slow_(unsigned kind, uint64_t arg, uint64_t ticks);
/* The same, reading the clock itself — and not at all when tracing is off, so that a
 * disabled probe costs a thread-local compare and a call (objects compiled before it
 * still call vprof_emit_slow_). */
void vprof_emit_slow_now_(unsigned kind, uint64_t arg);

/* Registers an instrumented translation unit, from a constructor the compiler wrapper
 * appends to it: the workspace, plan stamp and iteration it was built for, and its source
 * (strings with static storage). Written to <pid>.units in the trace directory, so that a
 * trace proves which plan it was built from. */
void vprof_register_unit(const char *workspace_id, const char *plan_stamp, int iteration,
                         const char *source);

/* The trace clock. x86-64: rdtsc (invariant TSC, calibrated at start-up);
 * aarch64: the virtual counter; elsewhere CLOCK_MONOTONIC in ns. */
static VPROF_ALWAYS_INLINE_ uint64_t vprof_clock_(void) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * (uint64_t)1000000000 + (uint64_t)ts.tv_nsec;
#endif
}

/* Appends one record to the calling thread's stream. */
static VPROF_ALWAYS_INLINE_ void vprof_emit_(unsigned kind, uint64_t arg) {
  vprof_record *r = vprof_window_.cur;
  uint64_t t;
  if (__builtin_expect(r == vprof_window_.end, 0)) {
    vprof_emit_slow_now_(kind, arg);
    return;
  }
  t = vprof_clock_();
  r->arg = arg;
  /* head last, with release order: a record whose kind is non-zero is complete
   * even if the process is killed between the two stores. */
  __atomic_store_n(&r->head, vprof_record_head(kind, t), __ATOMIC_RELEASE);
  vprof_window_.cur = r + 1;
}

/* An open probe: the ENTER record's arg, reused by its EXIT. */
typedef struct vprof_probe_scope {
  uint64_t arg;
} vprof_probe_scope;

static VPROF_ALWAYS_INLINE_ vprof_probe_scope vprof_probe_enter_(uint32_t site) {
  vprof_probe_scope s;
  uint32_t depth = (uint32_t)(0u - (uintptr_t)__builtin_frame_address(0));
  s.arg = (uint64_t)site | ((uint64_t)depth << 32);
  vprof_emit_(VPROF_REC_ENTER, s.arg);
  return s;
}

static VPROF_ALWAYS_INLINE_ void vprof_probe_exit_(vprof_probe_scope *s) {
  vprof_emit_(VPROF_REC_EXIT, s->arg);
}

#ifdef __cplusplus
} /* extern "C" */

namespace vprof {
namespace rt {

/* RAII form of a probe: ENTER in the constructor, EXIT in the destructor (also when */
/* an exception passes through). */
class probe_scope {
public:
  explicit VPROF_ALWAYS_INLINE_ probe_scope(uint32_t site) noexcept
      : s_(vprof_probe_enter_(site)) {}
  VPROF_ALWAYS_INLINE_ ~probe_scope() { vprof_probe_exit_(&s_); }
  probe_scope(const probe_scope &) = delete;
  probe_scope &operator=(const probe_scope &) = delete;

private:
  vprof_probe_scope s_;
};

/* Times one call: `f` is a lambda that performs the call and returns its result with */
/* decltype(auto) (C++11: decltype(<the call>)), so references stay references and */
/* prvalues are not copied. The trailing return type is the lambda's own: valid in C++11. */
template <class F>
VPROF_ALWAYS_INLINE_ auto call(uint32_t site, F &&f) -> decltype(static_cast<F &&>(f)()) {
  probe_scope scope(site);
  return static_cast<F &&>(f)();
}

} /* namespace rt */
} /* namespace vprof */

#define VPROF_PROBE_SCOPE(site)                                                                    \
  ::vprof::rt::probe_scope vprof_probe_scope_##site { site }

#else /* C */

#define VPROF_PROBE_SCOPE(site)                                                                    \
  __attribute__((cleanup(vprof_probe_exit_), unused)) vprof_probe_scope vprof_probe_scope_##site = \
      vprof_probe_enter_(site)

#endif /* __cplusplus */

#endif /* VPROF_PROBE_H */
