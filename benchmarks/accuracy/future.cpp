// Accuracy program "future": the interval blocks in std::future::get while a worker thread
// computes the answer and sets the promise. Per interval the main thread runs
// future_prepare (constant 10 u), hands a job (index + std::promise<int>) to the worker
// through a std::mutex/std::condition_variable inbox, blocks in std::future::get, then runs
// future_finish, U(0, 300) u (Var 7500 u^2). The worker, woken by the job, runs
// future_compute, U(0, 600) u (Var 30000 u^2), future_encode (constant 5 u), and sets the
// promise. libstdc++'s future waits on a futex of its own (no pthread call): only the
// kernel's scheduler wake-ups (set_value's FUTEX_WAKE -> the client's FUTEX_WAIT) give the
// wait its waker, and the profiler must follow that edge into future_compute instead of
// blaming the function that called get(). Var(L) = 37500 u^2 (+ wake-up jitter); planted
// share 30000 / 37500 = 0.80 when every client blocks.
// Critical-path rule: if the promise was set before the client reached get() (the client
// was preempted while the worker computed; a loaded machine), get() does not sleep, there
// is no wake-up edge and the path stays on the client: that interval's realised cause time
// is then 0.
// How often that happens is the scheduler's choice (on 2 busy cores the woken worker often
// preempts the client on its own CPU: 5-17 % of the intervals at load 3-12), and moving those
// intervals' cause time into the rest gives a negative covariance that carries the realised
// share from 0.5 to above 1.0: no closed form, analytic nan, the realised share is the
// reference.
#include "acc_common.h"

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace {

double *g_work_u, *g_noise_u, *g_cause_ns, *g_lat_ns;
std::uint64_t *g_set_ns;     // when the worker set the promise
std::uint64_t *g_waiting_ns; // when the client called get()

struct Job {
  int index = -1;
  std::promise<int> reply;
};

// The worker's inbox (outside the client's wait: the worker blocks here between jobs).
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  bool stop = false;
};
Inbox g_inbox;

} // namespace

int future_compute(int i) {
  ACC_SPIN_UNITS(g_work_u[i]);
  return i;
}
void future_encode(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

// The worker thread (the waker): one job at a time, answered through its promise.
void future_worker() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(g_inbox.mu);
      g_inbox.cv.wait(lock, [] { return g_inbox.stop || !g_inbox.jobs.empty(); });
      if (g_inbox.jobs.empty())
        return;
      job = std::move(g_inbox.jobs.front());
      g_inbox.jobs.pop_front();
    }
    int i = job.index;
    std::uint64_t t = ACC_NOW_NS();
    int answer = future_compute(i);
    g_cause_ns[i] = static_cast<double>(ACC_NOW_NS() - t);
    future_encode(i);
    g_set_ns[i] = ACC_NOW_NS();
    job.reply.set_value(answer);
  }
}

void future_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void future_finish(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

// Hands job i to the worker and blocks until its answer is there.
int future_await(int i) {
  Job job;
  job.index = i;
  std::future<int> answer = job.reply.get_future();
  {
    std::lock_guard<std::mutex> lock(g_inbox.mu);
    g_inbox.jobs.push_back(std::move(job));
  }
  g_inbox.cv.notify_one();
  g_waiting_ns[i] = ACC_NOW_NS();
  return answer.get();
}

// The root: one interval per request.
void future_request(int i) {
  std::uint64_t iv;
  std::uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  future_prepare(i);
  if (future_await(i) != i) {
    std::fprintf(stderr, "future: wrong answer for request %d\n", i);
    std::exit(1);
  }
  future_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = static_cast<double>(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  std::uint64_t rng = o.seed;
  auto doubles = [n] { return static_cast<double *>(acc_xcalloc(n, sizeof(double))); };
  auto times = [n] { return static_cast<std::uint64_t *>(acc_xcalloc(n, sizeof(std::uint64_t))); };
  g_work_u = doubles(), g_noise_u = doubles(), g_cause_ns = doubles(), g_lat_ns = doubles();
  g_set_ns = times(), g_waiting_ns = times();
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 300);
  }
  std::thread worker(future_worker);
  for (int i = 0; i < n; ++i)
    future_request(i);
  {
    std::lock_guard<std::mutex> lock(g_inbox.mu);
    g_inbox.stop = true;
  }
  g_inbox.cv.notify_one();
  worker.join();
  for (int i = 0; i < n; ++i)
    if (g_set_ns[i] < g_waiting_ns[i]) // get() found the answer: no wait, no wake-up edge
      g_cause_ns[i] = 0;
  acc_report("future", "future_compute", g_lat_ns, g_cause_ns, nullptr, n, -1);
  return 0;
}
