// Accuracy program "threadpool": a client thread begins each interval, builds two
// std::function tasks and pushes them onto a pool's queue (VPROF_HANDOFF_SEND under the
// queue lock); each of two workers pops one (VPROF_HANDOFF_RECV under the lock), attaches
// to the interval, runs the task, detaches. The client waits on a latch (mutex + condition
// variable, counted down by each task) until both are done, then runs pool_client_finish
// and ends the interval. One task runs pool_slow_part, U(100, 700) u (Var 30000 u^2); the
// other pool_fast_part, U(0, 50) u, which always finishes first: the latch is released by
// the slow task, so the critical path runs through pool_slow_part on whichever worker took
// it, and pool_fast_part is off the path. pool_client_finish is the noisy sibling, U(0, 200) u
// (Var 3333 u^2). Planted share 30000 / 33333 = 0.90. (The pattern that made the critical
// path walk loop forever before its termination rule: hand-offs, two threads attached to one
// interval, a latch released by the last of them.)
#include "acc_common.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace {

double *g_slow_u, *g_fast_u, *g_finish_u, *g_cause_ns, *g_lat_ns;

struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::uint64_t, std::function<void()>>> tasks; // (interval, task)
  bool stop = false;
};
Queue g_queue;

// A count-down latch the client waits on.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  int left = 0;
};
Latch g_latch;

void count_down() {
  std::lock_guard<std::mutex> lock(g_latch.mu);
  if (--g_latch.left == 0)
    g_latch.cv.notify_one();
}

} // namespace

void pool_slow_part(int i) {
  std::uint64_t t = ACC_NOW_NS();
  ACC_SPIN_UNITS(g_slow_u[i]);
  g_cause_ns[i] = static_cast<double>(ACC_NOW_NS() - t);
}
void pool_fast_part(int i) { ACC_SPIN_UNITS(g_fast_u[i]); }
void pool_client_finish(int i) { ACC_SPIN_UNITS(g_finish_u[i]); }

void pool_worker() {
  for (;;) {
    std::uint64_t iv;
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(g_queue.mu);
      g_queue.cv.wait(lock, [] { return g_queue.stop || !g_queue.tasks.empty(); });
      if (g_queue.tasks.empty())
        return;
      VPROF_HANDOFF_RECV(&g_queue);
      iv = g_queue.tasks.front().first;
      task = std::move(g_queue.tasks.front().second);
      g_queue.tasks.pop_front();
    }
    VPROF_ATTACH(iv);
    task();
    VPROF_DETACH(iv);
  }
}

void pool_submit(std::uint64_t iv, std::function<void()> task) {
  std::lock_guard<std::mutex> lock(g_queue.mu);
  VPROF_HANDOFF_SEND(&g_queue);
  g_queue.tasks.emplace_back(iv, std::move(task));
  g_queue.cv.notify_one();
}

// The root: one interval per request.
void run_request(int i) {
  std::uint64_t iv;
  std::uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  {
    std::lock_guard<std::mutex> lock(g_latch.mu);
    g_latch.left = 2;
  }
  pool_submit(iv, [i] {
    pool_slow_part(i);
    count_down();
  });
  pool_submit(iv, [i] {
    pool_fast_part(i);
    count_down();
  });
  {
    std::unique_lock<std::mutex> lock(g_latch.mu);
    g_latch.cv.wait(lock, [] { return g_latch.left == 0; });
  }
  pool_client_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = static_cast<double>(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  std::uint64_t rng = o.seed;
  auto alloc = [n] { return static_cast<double *>(acc_xcalloc(n, sizeof(double))); };
  g_slow_u = alloc(), g_fast_u = alloc(), g_finish_u = alloc();
  g_cause_ns = alloc(), g_lat_ns = alloc();
  for (int i = 0; i < n; ++i) {
    g_slow_u[i] = acc_uniform(&rng, 100, 700);
    g_fast_u[i] = acc_uniform(&rng, 0, 50);
    g_finish_u[i] = acc_uniform(&rng, 0, 200);
  }
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back(pool_worker);
  for (int i = 0; i < n; ++i)
    run_request(i);
  {
    std::lock_guard<std::mutex> lock(g_queue.mu);
    g_queue.stop = true;
  }
  g_queue.cv.notify_all();
  for (auto &w : workers)
    w.join();
  acc_report("threadpool", "pool_slow_part", g_lat_ns, g_cause_ns, nullptr, n,
             30000.0 / (30000.0 + 40000.0 / 12.0));
  return 0;
}
