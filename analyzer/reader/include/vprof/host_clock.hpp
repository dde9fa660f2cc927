// Clocks of several hosts on one time line (docs/multihost.md): each host's clock mapped to
// its wall clock by a fit over its (clock, CLOCK_REALTIME) samples, then the offsets
// between the hosts' wall clocks estimated from the message edges between them (a receive
// is never before its send), NTP style. Pure functions over numbers; Trace::open of
// several directories feeds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vprof::trace {

// One (clock, CLOCK_REALTIME) pair of a host: clock ticks since the host's base, and the
// wall clock in ns since an epoch of the caller's choice (near the samples: a double holds
// ns since 1970 only to 128 ns).
struct ClockSample {
  double ticks = 0;
  double real_ns = 0;
};

// CLOCK_REALTIME = real0_ns + real_ns_per_tick * (ticks since the host's base).
struct ClockFit {
  double real0_ns = 0, real_ns_per_tick = 0;
};

// The least-squares line through the samples when they span at least 10 ms (the slope
// then absorbs the clock's frequency error against the wall clock); else the slope
// 1e9 / ticks_per_second through the median of the samples' intercepts. No samples: the
// intercept is 0. Requires ticks_per_second > 0.
ClockFit fit_clock(const std::vector<ClockSample> &samples, double ticks_per_second);

// A message from host `from` to host `to`: its send and receive times, each by its own
// host's wall clock (ns).
struct HostEdge {
  std::uint32_t from = 0, to = 0;
  double send_ns = 0, recv_ns = 0;
};

struct HostOffset {
  // How far the host's wall clock is ahead of host 0's: true time = its wall clock -
  // offset_ns. The midpoint of the offsets that keep every edge causal.
  double offset_ns = 0;
  // The true offset lies within offset_ns +- bound_ns (half the width of the feasible
  // interval, plus the bound of the host it was placed against); < 0: unknown (edges in
  // one direction only, or none, so the wall clock is kept where causality allows).
  double bound_ns = -1;
  std::uint64_t edges_out = 0, edges_in = 0; // edges to / from other hosts
  std::uint64_t violations = 0;              // its incoming edges received before sent
  double worst_violation_ns = 0;             // by how much, at most (after the offsets)
};

// The offsets of `hosts` hosts (host 0 is the reference: offset 0, bound 0). Hosts are
// placed one by one against those already placed, the best-bounded first: every edge
// a -> b bounds offset(b) - offset(a) <= recv - send, so edges both ways bound a host from
// both sides (with symmetric minimum one-way delays the midpoint is exact). An infeasible
// set (clocks that drift, messages paired wrongly) still gets the midpoint; its edges then
// show as violations. Cost: O(hosts^2 x edges).
std::vector<HostOffset> estimate_offsets(std::size_t hosts, const std::vector<HostEdge> &edges);

} // namespace vprof::trace
