// Analyzer throughput and memory benchmark: `gen` writes a synthetic trace directory
// (fixed intervals x nodes, record count set by the number of calls per interval; optionally
// the number of threads and of call-site variants, for a one-thread server's shape with a
// wider tree); `run` analyses it and prints records/s (one core) and peak RSS.
// benchmarks/analyzer/run.sh; benchmarks/RESULTS.md, "A million intervals".
#include "../common/proc_status.hpp"
#include "engine.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_format.h"
#include "vprof/trace_reader.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <ctime>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Writes one thread's stream with `n_intervals` intervals of `reps` call groups each.
// Per interval: BEGIN, LABEL, reps x {ENTER a, ENTER b, EXIT b, ENTER c, ENTER d, EXIT d,
// EXIT c, EXIT a} (8 records) and one contended lock (WAIT, ACQUIRE, RELEASE), END.
void gen_thread(const std::string &dir, std::uint32_t pid, std::uint32_t tid, std::uint32_t seq,
                std::uint64_t n_intervals, std::uint64_t reps, std::uint64_t first_id,
                std::uint64_t nthreads, std::uint64_t variants) {
  std::uint64_t per = 2 + 8 * reps + 3 + 1;
  std::uint64_t n = n_intervals * per;
  std::string path = dir + "/" + std::to_string(pid) + "." + std::to_string(seq) + ".vpt";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  // Laid out as libvprof_rt leaves it: a 64 KiB window after the header page holding the
  // newest records, all earlier ones in the data region after it.
  const std::uint64_t page = 4096, win = 4096, committed = n ? (n - 1) / win * win : 0;
  std::size_t size = page + (win + committed) * VPROF_RECORD_SIZE;
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  void *m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  auto *h = static_cast<vprof_stream_header *>(m);
  std::memcpy(h->magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE);
  h->version = VPROF_TRACE_VERSION;
  h->header_size = VPROF_STREAM_HEADER_SIZE;
  h->record_size = VPROF_RECORD_SIZE;
  h->clock_kind = VPROF_CLOCK_TSC;
  h->ticks_per_second = 3000000000ull;
  h->base_ticks = 1000;
  h->pid = pid;
  h->tid = tid;
  h->stream_seq = seq;
  h->window_records = win;
  h->window_offset = page;
  h->data_offset = page + win * VPROF_RECORD_SIZE;
  h->committed_records = committed;
  h->window_base = committed;
  h->features = VPROF_FEATURE_SYNC_INTERPOSE | VPROF_FEATURE_FRAME_DEPTH;
  auto *window = reinterpret_cast<vprof_record *>(static_cast<char *>(m) + page);
  auto *r = committed ? window + win : window;
  std::uint64_t t = 1000 + tid, x = tid * 7919 + 1, written = 0;
  auto put = [&](unsigned kind, std::uint64_t arg, std::uint64_t dt) {
    t += dt;
    if (written++ == committed && committed)
      r = window;
    r->head = vprof_record_head(kind, t);
    r->arg = arg;
    ++r;
  };
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (std::uint64_t i = 0; i < n_intervals; ++i) {
    std::uint64_t id = first_id + i * nthreads;
    put(VPROF_REC_INTERVAL_BEGIN, id, 5);
    put(VPROF_REC_LABEL, 1 + i % 2, 0);
    for (std::uint64_t k = 0; k < reps; ++k) {
      // variant v > 0: the same shape under sites 4v + 1..4 (a command type's own calls)
      const std::uint64_t v = variants > 1 ? 4 * ((rnd() >> 11) % variants) : 0;
      put(VPROF_REC_ENTER, (1 + v) | (1ull << 32), 3);
      put(VPROF_REC_ENTER, (2 + v) | (2ull << 32), 2 + rnd() % 8);
      put(VPROF_REC_EXIT, (2 + v) | (2ull << 32), 10 + rnd() % 40);
      put(VPROF_REC_ENTER, (3 + v) | (2ull << 32), 2);
      put(VPROF_REC_ENTER, (4 + v) | (3ull << 32), 3);
      put(VPROF_REC_EXIT, (4 + v) | (3ull << 32), 5 + rnd() % (i % 7 == 0 ? 200 : 20));
      put(VPROF_REC_EXIT, (3 + v) | (2ull << 32), 2);
      put(VPROF_REC_EXIT, (1 + v) | (1ull << 32), 1);
    }
    put(VPROF_REC_LOCK_WAIT, 0xA0, 2);
    put(VPROF_REC_LOCK_ACQUIRE, 0xA0, 5 + rnd() % 50);
    put(VPROF_REC_LOCK_RELEASE, 0xA0, 3);
    put(VPROF_REC_INTERVAL_END, id, 2);
  }
  ::munmap(m, size);
  ::close(fd);
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 4 && std::strcmp(argv[1], "gen") == 0) {
    std::string dir = argv[2];
    std::uint64_t records = std::stoull(argv[3]);
    std::uint64_t intervals = argc > 4 ? std::stoull(argv[4]) : 4000; // total
    const std::uint64_t threads = argc > 5 ? std::stoull(argv[5]) : 4;
    const std::uint64_t variants = argc > 6 ? std::stoull(argv[6]) : 1;
    std::uint64_t per_thread = intervals / threads;
    std::uint64_t reps = std::max<std::uint64_t>(1, (records / intervals - 6) / 8);
    std::string mk = "mkdir -p '" + dir + "' && rm -f '" + dir + "'/*.vpt";
    if (std::system(mk.c_str()) != 0)
      return 1;
    for (std::uint64_t th = 0; th < threads; ++th)
      gen_thread(dir, 4242, static_cast<std::uint32_t>(100 + th), static_cast<std::uint32_t>(th),
                 per_thread, reps, 1 + th, threads, variants);
    std::ofstream(dir + "/4242.labels") << "1\tkindA\n2\tkindB\n";
    std::printf("wrote %s: %llu intervals x %llu call groups, %llu records\n", dir.c_str(),
                (unsigned long long)intervals, (unsigned long long)reps,
                (unsigned long long)(threads * per_thread * (6 + 8 * reps)));
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "run") == 0) {
    // CPU time of this (single-threaded) process per phase: records/s per core, robust to
    // other load on the machine; wall time printed beside it.
    auto w0 = std::chrono::steady_clock::now();
    double c0 = cpu_now();
    auto tr = vprof::trace::Trace::open(argv[2]);
    double c1 = cpu_now();
    long rss_open = vprof::bench::status_kb("VmHWM:");
    auto eo = vprof::analyzer::detail::run_engine(tr, {});
    double c2 = cpu_now();
    long rss_engine = vprof::bench::status_kb("VmHWM:");
    std::uint64_t peak_segments = eo.peak_segments;
    eo = {};
    vprof::analyzer::AnalyzeOptions opt;
    auto res = vprof::analyzer::analyze_trace(tr, nullptr, opt);
    double c3 = cpu_now();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    double rec = static_cast<double>(res.records);
    double stats = (c3 - c2) - (c2 - c1); // analyze_trace = engine + statistics
    std::printf(
        "records %.0f | intervals %llu | nodes %zu | open+validate %.3f s cpu (%.0f M rec/s) "
        "| critical-path pass %.3f s cpu (%.1f M rec/s) | statistics %.3f s cpu | "
        "open+analyze %.1f M rec/s cpu | wall %.2f s | peak RSS %ld MiB | peak segments %llu | "
        "max residual %.1e | path mismatches %llu | peak RSS after open %ld, after pass %ld MiB\n",
        rec, (unsigned long long)res.intervals, res.nodes.size(), c1 - c0, rec / (c1 - c0) / 1e6,
        c2 - c1, rec / (c2 - c1) / 1e6, stats, rec / ((c1 - c0) + (c3 - c2)) / 1e6, wall,
        vprof::bench::status_kb("VmHWM:") / 1024, (unsigned long long)peak_segments,
        res.groups.empty() ? 0.0 : res.groups[0].max_residual,
        (unsigned long long)res.path_sum_mismatches, rss_open / 1024, rss_engine / 1024);
    return res.path_sum_mismatches == 0 ? 0 : 1;
  }
  std::fprintf(stderr, "usage: vprof_analyzer_bench gen <dir> <records> [intervals [threads "
                       "[variants]]]\n"
                       "       vprof_analyzer_bench run <dir>\n");
  return 2;
}
