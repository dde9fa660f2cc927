/* libvprof_rt's trace clock (rt_clock.c): the process's clock base and frequency, the
 * (clock, wall clock) pairs written into stream headers and CLOCK records. */
#ifndef VPROF_RT_CLOCK_H
#define VPROF_RT_CLOCK_H

#include "rt_internal.h"

/* The clock of this process, taken at start-up (re-based in a fork child). */
typedef struct vprof_rt_clock_base {
  uint32_t kind; /* VPROF_CLOCK_* */
  uint64_t hz;   /* 0 until the clock is started */
  uint64_t base_ticks, base_mono, base_real;
  uint64_t calib_ns;          /* span of the start-up calibration (0: the rate is exact) */
  char hostname[64];          /* gethostname() at clock start, NUL-terminated */
  uint64_t sample_period;     /* ticks between CLOCK records (0: none) */
  uint64_t last_sample_ticks; /* clock value of the process's last CLOCK record */
} vprof_rt_clock_base;

extern vprof_rt_clock_base vprof_rt_clock_base_ VPROF_RT_HIDDEN_;

/* Takes the process's clock base and, for the TSC, measures its frequency against
 * CLOCK_MONOTONIC over opt.CALIBRATE_US (a busy wait of at least 0.1 ms). */
void vprof_rt_clock_start_(void) VPROF_RT_HIDDEN_;

/* A fork child's new base: the inherited frequency stays (refined only over long runs). */
void vprof_rt_clock_rebase_(void) VPROF_RT_HIDDEN_;

/* A clock sample: the clock and CLOCK_REALTIME (shifted by VPROF_CLOCK_OFFSET_NS) read as
 * one pair, the tightest of a few tries; a few hundred ns. */
void vprof_rt_clock_sample_(uint64_t *ticks, uint64_t *real) VPROF_RT_HIDDEN_;

/* The frequency over the whole run so far, if the run is long enough to beat the
 * start-up estimate (ten times its span); else the start-up estimate. */
uint64_t vprof_rt_clock_refined_hz_(void) VPROF_RT_HIDDEN_;

/* Writes a CLOCK record on the calling thread if the sample period is over in the
 * process (the first thread to find it over writes it); called after a half of the window is handed
 * over. */
void vprof_rt_clock_record_if_due_(void) VPROF_RT_HIDDEN_;

#endif /* VPROF_RT_CLOCK_H */
