// Several hosts on one time line: the clock fit, the offset estimate from message edges
// (NTP style, +-5 ms recovered within 50 us), and a client/server pair of hand-built trace
// directories whose intervals cross hosts by VPROF_MSG_SEND/RECV and VPROF_ATTACH.
#include "engine.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/host_clock.hpp"
#include "vprof/trace_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace vprof::analyzer::detail;
using vprof::testing::TraceBuilder;
using vprof::trace::estimate_offsets;
using vprof::trace::HostEdge;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-mh-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Request/reply edges between host 0 and host 1, whose wall clock is `offset` ahead: the
// requests take `req` ns (+ jitter), the replies `rep` ns (+ jitter).
std::vector<HostEdge> request_reply(double offset, double req, double rep, int n) {
  std::vector<HostEdge> e;
  for (int i = 0; i < n; ++i) {
    double t = 1e6 * i, jitter = 1e3 * (i % 7);
    e.push_back({0, 1, t, t + req + jitter + offset});
    double u = t + 5e5;
    e.push_back({1, 0, u + offset, u + rep + jitter});
  }
  return e;
}

} // namespace

TEST(HostClock, EdgesBothWaysRecoverTheOffsetWithinTheBound) {
  for (double offset : {5e6, -5e6, 0.0, 123456.0}) {
    auto h = estimate_offsets(2, request_reply(offset, 30e3, 40e3, 200));
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].offset_ns, 0);
    EXPECT_EQ(h[0].bound_ns, 0);
    // the midpoint of [offset - 40 us, offset + 30 us]: 5 us off, bound 35 us
    EXPECT_NEAR(h[1].offset_ns, offset, 50e3);
    EXPECT_NEAR(h[1].offset_ns, offset - 5e3, 1);
    EXPECT_NEAR(h[1].bound_ns, 35e3, 1);
    EXPECT_LE(std::abs(h[1].offset_ns - offset), h[1].bound_ns);
    EXPECT_EQ(h[1].edges_in, 200u);
    EXPECT_EQ(h[1].edges_out, 200u);
    EXPECT_EQ(h[0].violations + h[1].violations, 0u);
  }
}

TEST(HostClock, EdgesOneWayKeepTheWallClockWhereCausalAndSayTheBoundIsUnknown) {
  std::vector<HostEdge> e{{0, 1, 1000, 51000}}; // received 50 us after it was sent
  auto h = estimate_offsets(2, e);
  EXPECT_EQ(h[1].offset_ns, 0);
  EXPECT_LT(h[1].bound_ns, 0);
  // a receive 1 ms before its send: the least offset that makes it causal
  e = {{0, 1, 1e6, 0}};
  h = estimate_offsets(2, e);
  EXPECT_NEAR(h[1].offset_ns, -1e6, 1);
  EXPECT_EQ(h[1].violations, 0u);
}

TEST(HostClock, InconsistentEdgesAreCountedAsViolations) {
  // host 1 -> 0 says host 1 is at least 1 ms ahead; 0 -> 1 says at most 0.5 ms behind
  std::vector<HostEdge> e{{0, 1, 0, -0.5e6}, {1, 0, 2e6, 1e6}};
  auto h = estimate_offsets(2, e);
  EXPECT_GT(h[0].violations + h[1].violations, 0u);
  EXPECT_GT(std::max(h[0].worst_violation_ns, h[1].worst_violation_ns), 0);
}

TEST(HostClock, ThreeHostsArePlacedThroughTheirNeighbours) {
  // 0 <-> 1 and 1 <-> 2 only: host 2 is placed against host 1
  auto e = request_reply(2e6, 20e3, 20e3, 50);
  for (const auto &x : request_reply(-3e6, 20e3, 20e3, 50)) {
    HostEdge y = x;
    y.from = x.from == 0 ? 1 : 2;
    y.to = x.to == 0 ? 1 : 2;
    // host 2 is -3 ms from host 1, host 1 +2 ms from host 0: -1 ms from host 0 (both
    // clocks read 2 ms more than in host 1's frame)
    y.send_ns += 2e6;
    y.recv_ns += 2e6;
    e.push_back(y);
  }
  auto h = estimate_offsets(3, e);
  EXPECT_NEAR(h[1].offset_ns, 2e6, 1e3);
  EXPECT_NEAR(h[2].offset_ns, -1e6, 1e3);
  EXPECT_GE(h[2].bound_ns, h[1].bound_ns);
}

TEST(HostClock, TheFitFollowsTheSamplesSlope) {
  using vprof::trace::ClockSample;
  // 1 GHz clock whose wall clock runs 20 ppm fast, over 2 s (wall clock since an epoch)
  std::vector<ClockSample> s{
      {0, 1e12}, {1e9, 1e12 + 1e9 * (1 + 20e-6)}, {2e9, 1e12 + 2e9 * (1 + 20e-6)}};
  auto f = vprof::trace::fit_clock(s, 1e9);
  EXPECT_NEAR(f.real_ns_per_tick, 1 + 20e-6, 1e-9);
  EXPECT_NEAR(f.real0_ns - 1e12, 0, 1);
  // samples 1 ms apart: the nominal slope through the median intercept
  s = {{0, 5000}, {1e6, 1e6 + 5000}, {2e6, 2e6 + 7000}};
  f = vprof::trace::fit_clock(s, 1e9);
  EXPECT_EQ(f.real_ns_per_tick, 1.0);
  EXPECT_EQ(f.real0_ns, 5000);
}

namespace {

constexpr std::uint64_t kRealBase = 1700000000000000000ull; // the client's start, wall clock

// A client host (1 GHz clock) and a server host (2.5 GHz, started 2 ms before the client,
// wall clock `offset` ns ahead) with `n` requests: the client begins interval i, sends it
// (key = the interval id), the server receives it 30 us later, attaches, runs site 7 for
// work(i) us, detaches and replies; the reply arrives 40 us later and the client ends the
// interval. Returns the planted work per interval, in ns.
std::vector<std::int64_t> write_client_server(const fs::path &client_dir,
                                              const fs::path &server_dir, double offset, int n) {
  TraceBuilder client(100, 1000000, 1000000000ull);
  TraceBuilder server(200, 5000000000ull, 2500000000ull, VPROF_CLOCK_TSC);
  auto &c = client.thread(100);
  auto &s = server.thread(200);
  // server ticks (since its base) of a true time t (ns since the client's start)
  auto st = [](double t_ns) {
    return static_cast<std::uint64_t>(std::llround((t_ns + 2e6) * 2.5));
  };
  std::vector<std::int64_t> work;
  double t = 1e5;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t iv = 1000 + static_cast<std::uint64_t>(i);
    const double w = 1e3 * (20 + (i * 37) % 200); // 20..219 us
    work.push_back(static_cast<std::int64_t>(w));
    c.emit(VPROF_REC_INTERVAL_BEGIN, iv, static_cast<std::uint64_t>(t));
    c.emit(VPROF_REC_MSG_SEND, iv, static_cast<std::uint64_t>(t + 5e3));
    double r = t + 5e3 + 30e3;
    s.emit(VPROF_REC_MSG_RECV, iv, st(r));
    s.emit(VPROF_REC_ATTACH, iv, st(r + 1e3));
    s.enter(7, st(r + 2e3), 10);
    s.exit(7, st(r + 2e3 + w), 10);
    s.emit(VPROF_REC_DETACH, iv, st(r + 3e3 + w));
    s.emit(VPROF_REC_MSG_SEND, iv, st(r + 4e3 + w));
    double back = r + 4e3 + w + 40e3;
    c.emit(VPROF_REC_MSG_RECV, iv, static_cast<std::uint64_t>(back));
    c.emit(VPROF_REC_INTERVAL_END, iv, static_cast<std::uint64_t>(back + 2e3));
    t = back + 1e5;
  }
  client.realtime(kRealBase, static_cast<std::uint64_t>(t),
                  kRealBase + static_cast<std::uint64_t>(t));
  // in integers: a double holds ns since 1970 only to 256 ns
  const auto off = static_cast<std::int64_t>(offset);
  server.realtime(kRealBase - 2000000 + static_cast<std::uint64_t>(off), st(t),
                  kRealBase + static_cast<std::uint64_t>(static_cast<std::int64_t>(t) + off));
  client.write(client_dir);
  server.write(server_dir);
  return work;
}

} // namespace

TEST(MultiHost, InjectedOffsetsAreRecoveredAndIntervalsCrossTheHosts) {
  for (double offset : {5e6, -5e6}) {
    auto cdir = fresh_dir("client"), sdir = fresh_dir("server");
    auto work = write_client_server(cdir, sdir, offset, 60);
    auto tr = vprof::trace::Trace::open(std::vector<fs::path>{cdir, sdir});
    ASSERT_EQ(tr.hosts().size(), 2u);
    const auto &h = tr.hosts()[1];
    // requests 30 us + 5 us of marks, replies 40 us + 1 us: the midpoint is 0.5 us off
    EXPECT_NEAR(h.offset_ns, offset, 50e3) << offset;
    EXPECT_GE(h.skew_bound_ns, 0);
    EXPECT_LE(std::abs(h.offset_ns - offset), h.skew_bound_ns + 1);
    EXPECT_EQ(h.violations, 0u);
    EXPECT_EQ(tr.messages().cross_host_edges, 120u);

    auto eo = run_engine(tr, {});
    ASSERT_EQ(eo.intervals.size(), 60u);
    EXPECT_EQ(eo.path_sum_mismatches, 0u);
    EXPECT_EQ(eo.cross_host_edges, 120u);
    EXPECT_EQ(eo.messages_unmatched, 0u);
    EXPECT_EQ(eo.messages_unreceived, 0u);
    // the server's site 7 is on every critical path for its whole (planted) time
    for (std::size_t i = 0; i < eo.intervals.size(); ++i) {
      const auto &r = eo.intervals[i];
      std::int64_t site7 = 0;
      for (std::uint32_t k = 0; k < r.times_n; ++k) {
        const auto &nt = eo.times[r.times_off + k];
        if (eo.nodes[nt.node].label == 7)
          site7 += nt.ticks;
      }
      EXPECT_NEAR(static_cast<double>(site7), static_cast<double>(work[i]), 2) << i;
    }
    auto res = vprof::analyzer::analyze_trace(tr, nullptr);
    ASSERT_FALSE(res.groups.empty());
    ASSERT_FALSE(res.groups[0].places.empty());
    EXPECT_EQ(res.groups[0].places[0].key, "s:7");
    ASSERT_EQ(res.hosts.size(), 2u);
    EXPECT_NEAR(res.hosts[1].offset_ns, offset, 50e3);
    const std::string text = vprof::analyzer::render_text(res);
    EXPECT_NE(text.find("skew bound +-"), std::string::npos) << text;
    EXPECT_NE(text.find("120 between hosts"), std::string::npos) << text;
    EXPECT_EQ(text.find("ran on several hosts"), std::string::npos) << text; // pids 100, 200
  }
}

TEST(MultiHost, APidOnSeveralHostsIsSaidLoudly) {
  // two clients, both pid 100, analysed together: their interval ids may collide
  auto c1 = fresh_dir("twin-a"), s1 = fresh_dir("twin-a-server");
  auto c2 = fresh_dir("twin-b"), s2 = fresh_dir("twin-b-server");
  write_client_server(c1, s1, 0, 3);
  write_client_server(c2, s2, 0, 3);
  auto tr = vprof::trace::Trace::open(std::vector<fs::path>{c1, s1, c2});
  auto res = vprof::analyzer::analyze_trace(tr, nullptr);
  const auto it = std::find_if(res.warnings.begin(), res.warnings.end(), [](const std::string &w) {
    return w.rfind("pid 100 ran on several hosts (", 0) == 0;
  });
  ASSERT_NE(it, res.warnings.end());
  EXPECT_NE(it->find(c1.string()), std::string::npos) << *it;
  EXPECT_NE(it->find(c2.string()), std::string::npos) << *it;
  EXPECT_NE(it->find("VPROF_INTERVAL_BEGIN_ID"), std::string::npos) << *it;
}

TEST(MultiHost, OneDirectoryIsTheSingleHostTrace) {
  auto cdir = fresh_dir("alone"), sdir = fresh_dir("alone-server");
  write_client_server(cdir, sdir, 0, 5);
  auto one = vprof::trace::Trace::open(cdir);
  auto many = vprof::trace::Trace::open(std::vector<fs::path>{cdir});
  ASSERT_EQ(one.streams().size(), many.streams().size());
  EXPECT_EQ(many.hosts().size(), 1u);
  const auto &s = many.streams()[0];
  EXPECT_EQ(many.run_ticks(s, s.records()[3]),
            one.run_ticks(one.streams()[0], one.streams()[0].records()[3]));
  // alone, the client's receives have no sends: counted, not guessed
  auto eo = run_engine(one, {});
  EXPECT_EQ(eo.messages_unmatched, 5u);
  EXPECT_EQ(eo.messages_unreceived, 5u);
}

TEST(MultiHost, ADirectoryThatIsNotATraceIsNamed) {
  auto cdir = fresh_dir("named"), sdir = fresh_dir("named-server");
  write_client_server(cdir, sdir, 0, 2);
  auto empty = fresh_dir("not-a-trace");
  try {
    vprof::trace::Trace::open(std::vector<fs::path>{cdir, empty});
    FAIL() << "no error";
  } catch (const vprof::trace::TraceError &e) {
    EXPECT_NE(std::string(e.what()).find("not-a-trace"), std::string::npos) << e.what();
  }
}
