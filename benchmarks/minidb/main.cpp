// minidb server and client driver: a worker thread pool taking transactions from a queue
// (one vprof interval per transaction), a closed-loop in-process client with a fixed,
// seeded workload, latency statistics and the end-of-run consistency check.
#include "minidb.hpp"
#include "net.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <vprof/vprof.h>

namespace minidb {

struct Options {
  int threads = 8;
  int txns = 3000;
  int warehouses = 2;
  int inflight = 0; // 0: = threads (no queueing in the pool)
  LockPolicy policy = LockPolicy::Fcfs;
  Mix mix = Mix::Tpcc;
  bool fsync = true;
  std::uint64_t seed = 42;
  std::string data_dir; // empty: a fresh directory under $TMPDIR, removed at exit
  int pool_pages = 256;
  int io_us = 100;
  bool per_type = false;
};

static const char kUsage[] =
    "usage: minidb [options]\n"
    "  --threads N        worker threads (default 8)\n"
    "  --txns N           transactions to run (default 3000)\n"
    "  --warehouses N     warehouses; fewer = hotter rows (default 2)\n"
    "  --inflight N       transactions the client keeps outstanding (default = threads)\n"
    "  --lock-policy P    fcfs | vats (oldest transaction first) (default fcfs);\n"
    "                     none = no row locks (testing the consistency check; needs\n"
    "                     --mix payment)\n"
    "  --mix M            tpcc (45/43/4/4/4, every row locked when read) |\n"
    "                     hot (the same mix with lock-free reads and hot items: locks\n"
    "                     taken mid-transaction, the lock-scheduling workload) |\n"
    "                     payment (Payments only) (default tpcc)\n"
    "  --fsync on|off     fsync the log at commit (default on)\n"
    "  --seed S           workload seed (default 42)\n"
    "  --data-dir DIR     where the data file and log go (default: a temp dir, removed)\n"
    "  --pool-pages N     buffer pool frames (default 256)\n"
    "  --io-us N          simulated device latency of a page miss, us (default 100)\n"
    "  --per-type         also print one line of statistics per transaction type\n"
    "Prints a final line: minidb: txns=.. tps=.. p50_us=.. p99_us=.. mean_us=.. var_us2=.. "
    "consistent=yes|no\n"
    "Exit status: 0 ok, 1 inconsistent database or I/O failure, 2 bad arguments.\n";

static bool parse_int(const char *s, int lo, int hi, int &out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno || !end || *end || v < lo || v > hi)
    return false;
  out = int(v);
  return true;
}

// Parses argv into `o`; prints the problem and returns false on bad input.
static bool parse_options(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a == "--per-type") {
      o.per_type = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "minidb: %s: missing value or unknown option\n%s", a.c_str(), kUsage);
      return false;
    }
    const char *v = argv[++i];
    bool ok = true;
    if (a == "--threads")
      ok = parse_int(v, 1, 256, o.threads);
    else if (a == "--txns")
      ok = parse_int(v, 1, 10000000, o.txns);
    else if (a == "--warehouses")
      ok = parse_int(v, 1, 1000, o.warehouses);
    else if (a == "--inflight")
      ok = parse_int(v, 1, 4096, o.inflight);
    else if (a == "--pool-pages")
      ok = parse_int(v, 1, 1 << 20, o.pool_pages);
    else if (a == "--io-us")
      ok = parse_int(v, 0, 1000000, o.io_us);
    else if (a == "--lock-policy") {
      std::string p = v;
      ok = p == "fcfs" || p == "vats" || p == "none";
      o.policy = p == "vats" ? LockPolicy::Vats : p == "none" ? LockPolicy::None : LockPolicy::Fcfs;
    } else if (a == "--mix") {
      std::string p = v;
      ok = p == "tpcc" || p == "hot" || p == "payment";
      o.mix = p == "payment" ? Mix::PaymentOnly : p == "hot" ? Mix::Hot : Mix::Tpcc;
    } else if (a == "--fsync") {
      std::string p = v;
      ok = p == "on" || p == "off";
      o.fsync = p == "on";
    } else if (a == "--seed") {
      char *end = nullptr;
      o.seed = std::strtoull(v, &end, 10);
      ok = end && !*end && *v;
    } else if (a == "--data-dir")
      o.data_dir = v;
    else {
      std::fprintf(stderr, "minidb: unknown option %s\n%s", a.c_str(), kUsage);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "minidb: bad value '%s' for %s\n", v, a.c_str());
      return false;
    }
  }
  if (o.inflight == 0)
    o.inflight = o.threads;
  if (o.policy == LockPolicy::None && o.mix != Mix::PaymentOnly) {
    std::fprintf(stderr, "minidb: --lock-policy none needs --mix payment (other transaction "
                         "types would race on shared containers)\n");
    return false;
  }
  return true;
}

// The server: a queue of submitted transactions and the worker threads draining it.
class Server {
public:
  Server(Database &db, int threads) : db_(db) {
    pthread_mutex_init(&mu_, nullptr);
    pthread_cond_init(&work_cv_, nullptr);
    pthread_cond_init(&done_cv_, nullptr);
    workers_.resize(std::size_t(threads));
    for (pthread_t &t : workers_)
      pthread_create(&t, nullptr, &Server::worker_main, this);
  }
  ~Server() {
    {
      MutexLock g(mu_);
      stopping_ = true;
      pthread_cond_broadcast(&work_cv_);
    }
    for (pthread_t t : workers_)
      pthread_join(t, nullptr);
    pthread_cond_destroy(&done_cv_);
    pthread_cond_destroy(&work_cv_);
    pthread_mutex_destroy(&mu_);
  }

  // Client side: begins the transaction's interval and queues it for a worker.
  void submit(Txn &txn) {
    txn.start_ns = now_ns();
    std::uint64_t iv = 0;
    switch (txn.type) { // one label per type; the macro needs a literal
    case TxnType::NewOrder:
      VPROF_INTERVAL_BEGIN(iv, "NewOrder");
      break;
    case TxnType::Payment:
      VPROF_INTERVAL_BEGIN(iv, "Payment");
      break;
    case TxnType::OrderStatus:
      VPROF_INTERVAL_BEGIN(iv, "OrderStatus");
      break;
    case TxnType::Delivery:
      VPROF_INTERVAL_BEGIN(iv, "Delivery");
      break;
    case TxnType::StockLevel:
      VPROF_INTERVAL_BEGIN(iv, "StockLevel");
      break;
    }
    txn.interval = iv;
    {
      MutexLock g(mu_);
      VPROF_HANDOFF_SEND(&queue_);
      queue_.push_back(&txn);
      pthread_cond_signal(&work_cv_);
    }
    VPROF_DETACH(iv);
  }

  // Client side: blocks until at least `n` transactions have completed; returns the count.
  std::uint64_t wait_completed(std::uint64_t n) {
    MutexLock g(mu_);
    while (completed_ < n)
      pthread_cond_wait(&done_cv_, &mu_);
    return completed_;
  }

  // Worker side: runs one transaction on behalf of its interval and ends the interval.
  void serve(Txn &txn) {
    VPROF_ATTACH(txn.interval);
    db_.execute(txn);
    txn.end_ns = now_ns();
    VPROF_INTERVAL_END(txn.interval);
  }

private:
  static void *worker_main(void *self) {
    static_cast<Server *>(self)->worker_loop();
    return nullptr;
  }
  void worker_loop() {
    for (;;) {
      Txn *txn = nullptr;
      {
        MutexLock g(mu_);
        while (queue_.empty() && !stopping_)
          pthread_cond_wait(&work_cv_, &mu_);
        if (queue_.empty())
          return;
        txn = queue_.front();
        queue_.pop_front();
      }
      VPROF_HANDOFF_RECV(&queue_);
      serve(*txn);
      MutexLock g(mu_);
      ++completed_;
      pthread_cond_signal(&done_cv_);
    }
  }

  Database &db_;
  pthread_mutex_t mu_;
  pthread_cond_t work_cv_, done_cv_;
  std::deque<Txn *> queue_;
  std::vector<pthread_t> workers_;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
};

struct Stats {
  double mean = 0, var = 0, p50 = 0, p99 = 0, max = 0;
};

// Latency statistics in microseconds (sample variance, nearest-rank percentiles).
static Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / double(v.size());
  double ss = 0;
  for (double x : v)
    ss += (x - s.mean) * (x - s.mean);
  s.var = v.size() > 1 ? ss / double(v.size() - 1) : 0;
  auto rank = [&](double q) {
    std::size_t k = std::size_t(std::ceil(q * double(v.size())));
    return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
  };
  s.p50 = rank(0.50);
  s.p99 = rank(0.99);
  s.max = v.back();
  return s;
}

static int run(const Options &o) {
  std::string dir = o.data_dir;
  bool temp_dir = dir.empty();
  if (temp_dir) {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/minidb.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      std::fprintf(stderr, "minidb: cannot create a temp dir from %s: %s\n", tmpl.c_str(),
                   std::strerror(errno));
      return 1;
    }
    dir = buf.data();
  } else if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "minidb: cannot create data dir %s: %s\n", dir.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const std::string data_path = dir + "/minidb.data", log_path = dir + "/minidb.wal";
  int rc = 0;
  {
    LockManager locks(o.policy);
    BufferPool pool(data_path, o.pool_pages, o.io_us);
    Wal wal(log_path, o.fsync);
    if (!pool.ok() || !wal.ok())
      return 1;
    Database db(o.warehouses, Scale{}, locks, pool, wal, o.mix);

    // The workload is fixed by the seed: every parameter is drawn before the run.
    std::vector<std::unique_ptr<Txn>> txns;
    txns.reserve(std::size_t(o.txns));
    calibrate_cpu_work(); // before the workers and the clock start
    Rng rng(o.seed);
    for (int i = 0; i < o.txns; ++i) {
      txns.push_back(std::make_unique<Txn>());
      txns.back()->seq = std::uint64_t(i);
      db.generate(rng, *txns.back());
    }

    std::uint64_t t0 = now_ns(), t1 = t0;
    {
      Server server(db, o.threads);
      std::uint64_t submitted = 0, completed = 0, n = std::uint64_t(o.txns);
      while (completed < n) {
        while (submitted < n && submitted - completed < std::uint64_t(o.inflight))
          server.submit(*txns[submitted++]);
        completed = server.wait_completed(completed + 1);
      }
      t1 = now_ns();
    } // joins the workers

    std::vector<double> all;
    std::vector<double> by_type[kTxnTypes];
    std::vector<double> waits;
    double cov_wait = 0; // Cov(lock wait, latency): the lock wait's share of Var(L)
    for (const auto &t : txns) {
      double us = double(t->end_ns - t->start_ns) / 1e3;
      all.push_back(us);
      by_type[int(t->type)].push_back(us);
      waits.push_back(double(t->lock_wait_ns) / 1e3);
    }
    Stats ws = stats_of(waits);
    std::string why;
    bool ok = db.consistent(why);
    if (!ok) {
      std::fprintf(stderr, "minidb: INCONSISTENT: %s\n", why.c_str());
      rc = 1;
    }
    if (o.per_type)
      for (int k = 0; k < kTxnTypes; ++k) {
        Stats s = stats_of(by_type[k]);
        std::printf("minidb-type: type=%s n=%zu p50_us=%.1f p99_us=%.1f mean_us=%.1f "
                    "var_us2=%.1f\n",
                    txn_type_name(TxnType(k)), by_type[k].size(), s.p50, s.p99, s.mean, s.var);
      }
    Stats s = stats_of(all);
    for (std::size_t i = 0; i < all.size(); ++i)
      cov_wait += (waits[i] - ws.mean) * (all[i] - s.mean);
    cov_wait /= all.size() > 1 ? double(all.size() - 1) : 1.0;
    double secs = double(t1 - t0) / 1e9;
    const char *policy = o.policy == LockPolicy::Vats   ? "vats"
                         : o.policy == LockPolicy::None ? "none"
                                                        : "fcfs";
    const char *mix = o.mix == Mix::Hot ? "hot" : o.mix == Mix::PaymentOnly ? "payment" : "tpcc";
    std::printf("minidb: txns=%d threads=%d warehouses=%d mix=%s policy=%s fsync=%s seed=%llu "
                "secs=%.3f tps=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f "
                "var_us2=%.1f lockwait_mean_us=%.1f lockwait_share=%.3f log_flushes=%llu "
                "page_misses=%llu consistent=%s\n",
                o.txns, o.threads, o.warehouses, mix, policy, o.fsync ? "on" : "off",
                static_cast<unsigned long long>(o.seed), secs, double(o.txns) / secs, s.p50, s.p99,
                s.max, s.mean, s.var, ws.mean, s.var > 0 ? cov_wait / s.var : 0.0,
                static_cast<unsigned long long>(wal.flushes()),
                static_cast<unsigned long long>(pool.misses()), ok ? "yes" : "no");
    std::fflush(stdout);
  }
  if (temp_dir) {
    unlink(data_path.c_str());
    unlink(log_path.c_str());
    rmdir(dir.c_str());
  }
  return rc;
}

} // namespace minidb

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--listen") == 0) // the TCP front end, net.cpp
    return minidb::serve_tcp(argc, argv);
  minidb::Options o;
  if (!minidb::parse_options(argc, argv, o))
    return 2;
  return minidb::run(o);
}
