/* libvprof_rt's trace clock: the base and frequency taken at start-up (the TSC calibrated
 * against CLOCK_MONOTONIC), the (clock, wall clock) samples of stream headers and CLOCK
 * records, and the frequency refined over the run at exit. */
#define _GNU_SOURCE
#include "rt_clock.h"

#include <time.h>
#include <unistd.h>

vprof_rt_clock_base vprof_rt_clock_base_;

static uint64_t mono_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reads the clock and CLOCK_MONOTONIC as one pair: the clock between two monotonic
 * reads, the tightest of a few tries (a preemption between the reads would skew the
 * pair by milliseconds; on a loaded machine that happens), monotonic = the midpoint. */
static void clock_pair(uint64_t *ticks, uint64_t *mono) {
  uint64_t best = UINT64_MAX;
  int i;
  for (i = 0; i < 64 && best > 2000; i++) {
    uint64_t a = mono_ns(CLOCK_MONOTONIC), t = vprof_clock_(), b = mono_ns(CLOCK_MONOTONIC);
    if (b - a < best) {
      best = b - a;
      *ticks = t;
      *mono = a + (b - a) / 2;
    }
  }
}

/* CLOCK_REALTIME in ns as this process reports it: shifted by VPROF_CLOCK_OFFSET_NS (a
 * testing aid that makes a host's wall clock look off). */
static uint64_t realtime_ns(void) {
  return mono_ns(CLOCK_REALTIME) + (uint64_t)vprof_rt_process_.opt.CLOCK_OFFSET_NS;
}

/* Read the way clock_pair reads the monotonic pair (the tightest of a few tries,
 * realtime = the midpoint), so that the analyzer can map this host's clock to wall time
 * within a microsecond. */
void vprof_rt_clock_sample_(uint64_t *ticks, uint64_t *real) {
  uint64_t best = UINT64_MAX;
  int i;
  for (i = 0; i < 16 && best > 2000; i++) {
    uint64_t a = realtime_ns(), t = vprof_clock_(), b = realtime_ns();
    if (b - a < best) {
      best = b - a;
      *ticks = t;
      *real = a + (b - a) / 2;
    }
  }
}

void vprof_rt_clock_start_(void) {
  vprof_rt_clock_base *c = &vprof_rt_clock_base_;
  const vprof_options *opt = &vprof_rt_process_.opt;
#if defined(__x86_64__)
  uint64_t m0, m1, t0, t1, span;
  c->kind = VPROF_CLOCK_TSC;
  clock_pair(&t0, &m0);
  c->base_real = realtime_ns();
  c->base_ticks = t0;
  c->base_mono = m0;
  span = opt->CALIBRATE_US * 1000ull;
  if (span < 100000)
    span = 100000; /* below 0.1 ms the estimate is too coarse */
  while (mono_ns(CLOCK_MONOTONIC) - m0 < span) {
  }
  clock_pair(&t1, &m1);
  c->calib_ns = m1 - m0;
  c->hz = (uint64_t)((double)(t1 - t0) * 1e9 / (double)(m1 - m0) + 0.5);
#elif defined(__aarch64__)
  uint64_t f;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
  c->kind = VPROF_CLOCK_TSC; /* a constant-rate counter; frequency is exact */
  c->hz = f;
  c->base_mono = mono_ns(CLOCK_MONOTONIC);
  c->base_ticks = vprof_clock_();
  c->base_real = realtime_ns();
  c->calib_ns = 0;
#else
  c->kind = VPROF_CLOCK_MONOTONIC;
  c->hz = 1000000000ull;
  c->base_ticks = vprof_clock_();
  c->base_mono = c->base_ticks;
  c->base_real = realtime_ns();
  c->calib_ns = 0;
#endif
  /* the host whose clock this is (empty if it cannot be read) */
  if (gethostname(c->hostname, sizeof c->hostname - 1) != 0)
    c->hostname[0] = '\0';
  c->sample_period = (uint64_t)((double)opt->CLOCK_SAMPLE_MS * (double)c->hz / 1e3);
  c->last_sample_ticks = c->base_ticks;
}

void vprof_rt_clock_rebase_(void) {
  vprof_rt_clock_base *c = &vprof_rt_clock_base_;
  clock_pair(&c->base_ticks, &c->base_mono);
  c->base_real = realtime_ns();
  c->last_sample_ticks = c->base_ticks;
#if !defined(__x86_64__) && !defined(__aarch64__)
  c->base_mono = c->base_ticks;
#endif
  c->calib_ns = 0; /* the inherited frequency stays; refine only over long runs */
}

uint64_t vprof_rt_clock_refined_hz_(void) {
  const vprof_rt_clock_base *c = &vprof_rt_clock_base_;
#if defined(__x86_64__)
  uint64_t m = 0, t = 0;
  clock_pair(&t, &m);
  if (m - c->base_mono > 10 * c->calib_ns && t > c->base_ticks)
    return (uint64_t)((double)(t - c->base_ticks) * 1e9 / (double)(m - c->base_mono) + 0.5);
#endif
  return c->hz;
}

void vprof_rt_clock_record_if_due_(void) {
  vprof_rt_clock_base *c = &vprof_rt_clock_base_;
  uint64_t last = __atomic_load_n(&c->last_sample_ticks, __ATOMIC_RELAXED), ticks = 0, real = 0;
  if (!c->sample_period || vprof_clock_() - last < c->sample_period)
    return;
  if (!__atomic_compare_exchange_n(&c->last_sample_ticks, &last, vprof_clock_(), 0,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return;
  vprof_rt_clock_sample_(&ticks, &real);
  vprof_rt_emit_at_(VPROF_REC_CLOCK, real, ticks);
}
