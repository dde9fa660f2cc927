/* vprof runtime testing hooks: write records with injected timestamps through the real
 * writer of libvprof_rt, close streams, steer where they go. For tests and tools that
 * build exact timelines (writer -> reader round trips); not for profiled programs.
 * C99 and C++17 clean. */
#ifndef VPROF_RT_TESTING_H
#define VPROF_RT_TESTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Appends one record of `kind` (enum vprof_record_kind, non-zero) with `arg` and the
 * timestamp `ticks` (full clock value; only its low 56 bits are stored) to the calling
 * thread's stream, through the same window, flushes and drop accounting as the
 * probes. Opens the thread's stream on first use. Does nothing while tracing is off.
 * Writes no profiler frame (docs/trace-format.md, "The profiler's frame") after a record
 * that waited for room: its real clock would not fit the injected timeline. */
void vprof_rt_emit_at(unsigned kind, uint64_t arg, uint64_t ticks);

/* Finishes the calling thread's stream as thread exit does (sets VPROF_STREAM_CLOSED,
 * unmaps it); the thread's next record opens a new stream with the next stream_seq.
 * If `path` is non-NULL, the closed stream's file name is written there (at most `n`
 * bytes, NUL-terminated). Returns 0, or -1 if the thread had no open stream. */
int vprof_rt_close_thread_stream(char *path, size_t n);

/* Sends streams opened from now on to `dir` (created if missing) and turns tracing on
 * if it was off only because the directory was unusable (not if VPROF_DISABLE=1).
 * Call it while no other thread opens a stream. Returns 0, or -1 (tracing unchanged). */
int vprof_rt_set_trace_dir(const char *dir);

/* Sets the window size and per-stream size limit (bytes; 0 = unlimited) of streams
 * opened from now on; window_bytes is rounded up to whole pages and cut to half the
 * limit (at least one page). */
void vprof_rt_set_stream_limits(uint64_t window_bytes, uint64_t max_bytes);

/* Sets the sync level (VPROF_SYNC: 0 = no sync records, 1 = edge-forming records
 * only, 2 = every call) from now on, for the whole process, if tracing is on; values
 * above 2 count as 2. Returns the previous level, or -1 if tracing is off. */
int vprof_rt_set_sync_level(int level);

/* Clock of this process's streams: base_ticks and ticks_per_second of their headers. */
void vprof_rt_clock(uint64_t *base_ticks, uint64_t *ticks_per_second);

/* Holds the drain thread (on != 0: it takes no job from its queue) or lets it go on
 * (0): a drain that waits for a CPU, made to order. Returns 0, or -1 if the process has
 * no drain thread (VPROF_DRAIN=0, or tracing off). */
int vprof_rt_hold_drain(int on);

/* 1 if tracing is on in this process, 0 otherwise. */
int vprof_rt_enabled(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* VPROF_RT_TESTING_H */
