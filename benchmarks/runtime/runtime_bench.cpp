// Cost of vprof's runtime events, side by side in one run: one rdtsc, an instrumented
// call (ENTER + EXIT) vs the same call bare, an uncontended mutex lock+unlock through
// the interposer vs glibc's functions, annotation marks compiled out vs an empty loop.
// Run: VPROF_TRACE_DIR=/tmp/vprof-bench build/benchmarks/runtime/vprof_runtime_bench
// This file is compiled WITHOUT VPROF_ENABLE: the marks below expand to nothing.
#include <vprof/probe.h>
#include <vprof/rt_testing.h>
#include <vprof/vprof.h>

#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

namespace {

// Streams are closed and deleted every kRecycle records so that a long benchmark does
// not fill the disk or hit the per-thread limit (which would measure the drop path).
// Window flushes (and the first faults of a new window) stay in the measurement, as in a
// real run.
constexpr int64_t kRecycle = 1000000; // < 16 MiB of records: fits one half of the big window

void drop_stream() {
  char path[4096];
  if (vprof_rt_close_thread_stream(path, sizeof path) == 0)
    unlink(path);
}

void recycle(benchmark::State &state) {
  state.PauseTiming();
  drop_stream();
  state.ResumeTiming();
}

// Steady-state variants: one 32 MiB window (each of its halves has room for kRecycle
// records, so the window never turns) is mapped and
// faulted in while the timer is paused, so the timed loop measures the event itself
// (clock read + stores) and not the flushes. The end-to-end variants (default 64 KiB
// window, flushed with pwrite when full) minus these = the flushes' share per event.
constexpr uint64_t kBigWindow = 32ull << 20;
constexpr uint64_t kDefaultWindow = 64ull << 10; // VPROF_WINDOW_KB

void fresh_stream() {
  drop_stream();
  vprof_rt_set_stream_limits(kBigWindow, 0);
  vprof_rt_emit_at(VPROF_REC_WAKE, 0, 0); // opens the stream: one 16 MiB window
  // The window faults lazily (runtime policy); fault it in now, outside the timed
  // loop. Writing 0 into empty slots changes nothing (kind 0 = empty).
  for (char *p = (char *)vprof_window_.cur; p < (char *)vprof_window_.end; p += 4096)
    *(volatile char *)p = 0;
}

void recycle_steady(benchmark::State &state) {
  state.PauseTiming();
  fresh_stream();
  state.ResumeTiming();
}

void restore_limits() {
  drop_stream();
  vprof_rt_set_stream_limits(kDefaultWindow, 256ull << 20); // the defaults
}

void BM_Rdtsc(benchmark::State &state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(vprof_clock_());
}
BENCHMARK(BM_Rdtsc);

__attribute__((noinline)) int bare_fn(int x) {
  __asm__ __volatile__("");
  return x + 1;
}

__attribute__((noinline)) int probed_fn(int x) {
  VPROF_PROBE_SCOPE(1);
  __asm__ __volatile__("");
  return x + 1;
}

void BM_CallBare(benchmark::State &state) {
  int x = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(x = bare_fn(x));
}
BENCHMARK(BM_CallBare);

void BM_CallInstrumented(benchmark::State &state) {
  int x = 0;
  int64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(x = probed_fn(x));
    if (++n % (kRecycle / 2) == 0)
      recycle(state);
  }
  drop_stream();
}
BENCHMARK(BM_CallInstrumented);

void BM_CallInstrumentedSteady(benchmark::State &state) {
  int x = 0;
  int64_t n = 0;
  fresh_stream();
  for (auto _ : state) {
    benchmark::DoNotOptimize(x = probed_fn(x));
    if (++n % (kRecycle / 2) == 0)
      recycle_steady(state);
  }
  restore_limits();
}
BENCHMARK(BM_CallInstrumentedSteady);

using mutex_fn = int (*)(pthread_mutex_t *);

void BM_MutexReal(benchmark::State &state) {
  // glibc's own functions, bypassing the interposer that this binary links
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  auto lock = reinterpret_cast<mutex_fn>(dlsym(libc, "pthread_mutex_lock"));
  auto unlock = reinterpret_cast<mutex_fn>(dlsym(libc, "pthread_mutex_unlock"));
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  for (auto _ : state) {
    lock(&m);
    unlock(&m);
  }
}
BENCHMARK(BM_MutexReal);

// state.range(0) = the sync level (VPROF_SYNC). Level 1 (the default) writes nothing for an
// uncontended lock+unlock (no waiter: no wake-up edge possible); level 2 writes
// LOCK_ACQUIRE + LOCK_RELEASE, as every level did before edge-only recording.
class SyncLevel {
public:
  explicit SyncLevel(int level) : old_(vprof_rt_set_sync_level(level)) {}
  ~SyncLevel() {
    if (old_ >= 0)
      vprof_rt_set_sync_level(old_);
  }

private:
  int old_;
};

void BM_MutexInterposed(benchmark::State &state) {
  SyncLevel level(static_cast<int>(state.range(0)));
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  int64_t n = 0;
  for (auto _ : state) {
    pthread_mutex_lock(&m);   // level 2: LOCK_ACQUIRE; level 1: nothing
    pthread_mutex_unlock(&m); // level 2: LOCK_RELEASE; level 1: nothing (lock word 1)
    if (++n % (kRecycle / 2) == 0)
      recycle(state);
  }
  drop_stream();
}
BENCHMARK(BM_MutexInterposed)->ArgName("sync")->Arg(1)->Arg(2);

void BM_MutexInterposedSteady(benchmark::State &state) {
  SyncLevel level(2); // records both events; level 1 writes none (see above)
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  int64_t n = 0;
  fresh_stream();
  for (auto _ : state) {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    if (++n % (kRecycle / 2) == 0)
      recycle_steady(state);
  }
  restore_limits();
}
BENCHMARK(BM_MutexInterposedSteady);

void BM_EmptyLoop(benchmark::State &state) {
  int64_t i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(i++);
}
BENCHMARK(BM_EmptyLoop);

void BM_MarksCompiledOut(benchmark::State &state) {
  int64_t i = 0;
  uint64_t iv = 0;
  static int queue;
  for (auto _ : state) {
    VPROF_INTERVAL_BEGIN(iv, "GET");
    VPROF_HANDOFF_SEND(&queue);
    VPROF_WAKE(&queue);
    VPROF_INTERVAL_END(iv);
    benchmark::DoNotOptimize(i++);
  }
  benchmark::DoNotOptimize(iv);
}
BENCHMARK(BM_MarksCompiledOut);

} // namespace

BENCHMARK_MAIN();
