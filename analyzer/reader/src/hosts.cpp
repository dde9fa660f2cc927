// Several trace directories as one trace (docs/multihost.md): the clock fit of each host,
// the message edges between hosts, the offset estimate and the placement of every stream on
// the first host's time line.
#include "vprof/host_clock.hpp"
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace vprof::trace {

ClockFit fit_clock(const std::vector<ClockSample> &samples, double ticks_per_second) {
  ClockFit f;
  f.real_ns_per_tick = 1e9 / ticks_per_second;
  if (samples.empty())
    return f;
  double lo = samples.front().ticks, hi = lo;
  for (const auto &s : samples) {
    lo = std::min(lo, s.ticks);
    hi = std::max(hi, s.ticks);
  }
  if ((hi - lo) * f.real_ns_per_tick >= 1e7) { // 10 ms: the slope is worth fitting
    double n = 0, mx = 0, my = 0;
    for (const auto &s : samples) {
      n += 1;
      mx += s.ticks;
      my += s.real_ns;
    }
    mx /= n;
    my /= n;
    double sxy = 0, sxx = 0;
    for (const auto &s : samples) {
      sxy += (s.ticks - mx) * (s.real_ns - my);
      sxx += (s.ticks - mx) * (s.ticks - mx);
    }
    f.real_ns_per_tick = sxy / sxx;
    f.real0_ns = my - f.real_ns_per_tick * mx;
    return f;
  }
  std::vector<double> b;
  for (const auto &s : samples)
    b.push_back(s.real_ns - f.real_ns_per_tick * s.ticks);
  std::nth_element(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() / 2), b.end());
  f.real0_ns = b[b.size() / 2];
  return f;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The feasible offsets of host h against the placed hosts: [lo, hi] and the largest bound
// of the placed hosts that gave them.
struct Feasible {
  double lo = -kInf, hi = kInf, inherited = 0;
  bool any() const { return lo > -kInf || hi < kInf; }
  bool both() const { return lo > -kInf && hi < kInf; }
};

Feasible feasible(std::size_t h, const std::vector<std::vector<double>> &min_delay,
                  const std::vector<HostOffset> &out, const std::vector<bool> &placed) {
  Feasible f;
  for (std::size_t a = 0; a < out.size(); ++a) {
    if (!placed[a])
      continue;
    bool used = false;
    if (min_delay[a][h] < kInf) { // a -> h: offset(h) <= offset(a) + delay
      f.hi = std::min(f.hi, out[a].offset_ns + min_delay[a][h]);
      used = true;
    }
    if (min_delay[h][a] < kInf) { // h -> a: offset(h) >= offset(a) - delay
      f.lo = std::max(f.lo, out[a].offset_ns - min_delay[h][a]);
      used = true;
    }
    if (used)
      f.inherited = std::max(f.inherited, out[a].bound_ns < 0 ? kInf : out[a].bound_ns);
  }
  return f;
}

// The offset chosen for a host with feasible offsets `f`.
void place(const Feasible &f, HostOffset &o) {
  if (f.both()) {
    o.offset_ns = (f.lo + f.hi) / 2;
    double half = std::max(0.0, (f.hi - f.lo) / 2);
    o.bound_ns = f.inherited == kInf ? -1 : half + f.inherited;
  } else {
    // One direction only: keep the wall clock where it is causal, else the nearest
    // causal offset; how far off it may be is unknown.
    o.offset_ns = std::clamp(0.0, f.lo, f.hi);
    o.bound_ns = -1;
  }
}

} // namespace

std::vector<HostOffset> estimate_offsets(std::size_t hosts, const std::vector<HostEdge> &edges) {
  std::vector<HostOffset> out(hosts);
  if (hosts == 0)
    return out;
  // min over the edges a -> b of (receive - send): all that bounds offset(b) - offset(a)
  std::vector<std::vector<double>> min_delay(hosts, std::vector<double>(hosts, kInf));
  for (const auto &e : edges) {
    if (e.from >= hosts || e.to >= hosts || e.from == e.to)
      continue;
    min_delay[e.from][e.to] = std::min(min_delay[e.from][e.to], e.recv_ns - e.send_ns);
    ++out[e.from].edges_out;
    ++out[e.to].edges_in;
  }
  std::vector<bool> placed(hosts, false);
  placed[0] = true;
  out[0].bound_ns = 0;
  for (std::size_t round = 1; round < hosts; ++round) {
    // the next host: bounded both ways with the narrowest interval, else one-sided, else any
    std::size_t best = hosts;
    Feasible best_f;
    int best_rank = -1;
    for (std::size_t h = 0; h < hosts; ++h) {
      if (placed[h])
        continue;
      Feasible f = feasible(h, min_delay, out, placed);
      int rank = f.both() ? 2 : f.any() ? 1 : 0;
      if (rank > best_rank ||
          (rank == 2 && best_rank == 2 && f.hi - f.lo < best_f.hi - best_f.lo)) {
        best = h;
        best_f = f;
        best_rank = rank;
      }
    }
    place(best_f, out[best]);
    placed[best] = true;
  }
  for (const auto &e : edges) {
    if (e.from >= hosts || e.to >= hosts || e.from == e.to)
      continue;
    double margin = (e.recv_ns - out[e.to].offset_ns) - (e.send_ns - out[e.from].offset_ns);
    if (margin < 0) {
      ++out[e.to].violations;
      out[e.to].worst_violation_ns = std::max(out[e.to].worst_violation_ns, -margin);
    }
  }
  return out;
}

namespace {

// A message mark of one host, by its wall clock.
struct Mark {
  std::uint32_t host;
  double real_ns;
};

struct KeyMarks {
  std::vector<Mark> sends, recvs;
};

// Pairs the marks of one key into edges between hosts: the receives on host b with the
// sends of the one other host that sent this key, in order (a request and its reply under
// one key pair both ways). Receives of a key sent from several other hosts are ambiguous
// and left to the engine, which pairs them on the merged time line.
void pair_key(KeyMarks &km, std::vector<HostEdge> &edges, MessageStats &st) {
  auto by_time = [](const Mark &a, const Mark &b) { return a.real_ns < b.real_ns; };
  std::stable_sort(km.sends.begin(), km.sends.end(), by_time);
  std::stable_sort(km.recvs.begin(), km.recvs.end(), by_time);
  st.unpaired += km.sends.size() > km.recvs.size() ? km.sends.size() - km.recvs.size()
                                                   : km.recvs.size() - km.sends.size();
  std::map<std::uint32_t, std::vector<const Mark *>> sends, recvs;
  for (const auto &m : km.sends)
    sends[m.host].push_back(&m);
  for (const auto &m : km.recvs)
    recvs[m.host].push_back(&m);
  for (const auto &[b, rs] : recvs) {
    std::uint32_t from = 0;
    int senders = 0;
    for (const auto &[a, ss] : sends)
      if (a != b) {
        from = a;
        ++senders;
      }
    if (senders > 1) {
      st.ambiguous += rs.size();
      continue;
    }
    if (senders == 0)
      continue;
    const auto &ss = sends[from];
    for (std::size_t i = 0; i < std::min(ss.size(), rs.size()); ++i) {
      edges.push_back({from, b, ss[i]->real_ns, rs[i]->real_ns});
      ++st.cross_host_edges;
    }
  }
}

} // namespace

Trace Trace::open(const std::vector<std::filesystem::path> &dirs, const OpenOptions &opt) {
  if (dirs.empty())
    throw TraceError("", 0, "no trace directory given");
  if (dirs.size() == 1)
    return open(dirs.front(), opt);
  Trace t = open_dir(dirs.front(), opt);
  for (std::size_t d = 1; d < dirs.size(); ++d) {
    Trace more = open_dir(dirs[d], opt);
    const auto host = static_cast<std::uint32_t>(t.hosts_.size());
    const std::size_t s0 = t.streams_.size(), p0 = t.processes_.size();
    for (auto &s : more.streams_) {
      s.host_ = host;
      t.streams_.push_back(std::move(s));
    }
    for (auto &p : more.processes_) {
      p.host = host;
      for (auto &i : p.streams)
        i += s0;
      t.processes_.push_back(std::move(p));
    }
    for (std::size_t i : more.stream_process_)
      t.stream_process_.push_back(i + p0);
    for (auto &sk : more.skipped_)
      t.skipped_.push_back(std::move(sk));
    for (auto &w : more.warnings_)
      t.warnings_.push_back(std::move(w));
    for (auto &pending : more.sched_pending_) // only its own directory's streams
      t.sched_pending_.emplace_back(host, std::move(pending.second));
    t.hosts_.push_back(std::move(more.hosts_.front()));
  }
  t.align_hosts();
  t.place_kernel_events();
  return t;
}

void Trace::align_hosts() {
  const std::size_t H = hosts_.size();
  std::vector<std::vector<ClockSample>> samples(H);
  std::unordered_map<std::uint64_t, KeyMarks> keys;
  auto host_ticks = [&](std::uint32_t h, std::uint64_t full) {
    return static_cast<double>(static_cast<std::int64_t>(full - hosts_[h].base_ticks));
  };
  // wall-clock times in ns since the first process's start: exact in a double
  const std::uint64_t epoch = processes_.front().base_realtime_ns;
  auto wall = [&](std::uint64_t real_ns) {
    return static_cast<double>(static_cast<std::int64_t>(real_ns - epoch));
  };
  // the processes' start pairs, the streams' end pairs
  for (const auto &p : processes_)
    samples[p.host].push_back({host_ticks(p.host, p.base_ticks), wall(p.base_realtime_ns)});
  for (const auto &s : streams_)
    if (s.info().end_ticks)
      samples[s.host_].push_back(
          {host_ticks(s.host_, s.info().end_ticks), wall(s.info().end_realtime_ns)});
  // the CLOCK records, then the message marks by each host's wall clock
  for (const auto &s : streams_)
    for (const vprof_record &r : s.records())
      if (vprof_record_kind_of(&r) == VPROF_REC_CLOCK)
        samples[s.host_].push_back(
            {host_ticks(s.host_, s.info().base_ticks + s.relative_ticks(r)), wall(r.arg)});
  for (std::size_t h = 0; h < H; ++h) {
    ClockFit f = fit_clock(samples[h], hosts_[h].ticks_per_second);
    hosts_[h].clock_samples = samples[h].size();
    hosts_[h].real0_ns = f.real0_ns;
    hosts_[h].real_ns_per_tick = f.real_ns_per_tick;
  }
  for (const auto &s : streams_) {
    const HostInfo &hi = hosts_[s.host_];
    for (const vprof_record &r : s.records()) {
      unsigned k = vprof_record_kind_of(&r);
      if (k != VPROF_REC_MSG_SEND && k != VPROF_REC_MSG_RECV)
        continue;
      double real =
          hi.real0_ns +
          hi.real_ns_per_tick * host_ticks(s.host_, s.info().base_ticks + s.relative_ticks(r));
      auto &km = keys[r.arg];
      (k == VPROF_REC_MSG_SEND ? km.sends : km.recvs).push_back({s.host_, real});
    }
  }
  std::vector<HostEdge> edges;
  for (auto &[key, km] : keys)
    pair_key(km, edges, messages_);
  std::vector<HostOffset> off = estimate_offsets(H, edges);
  for (std::size_t h = 0; h < H; ++h) {
    hosts_[h].offset_ns = off[h].offset_ns;
    hosts_[h].skew_bound_ns = off[h].bound_ns;
    hosts_[h].edges_out = off[h].edges_out;
    hosts_[h].edges_in = off[h].edges_in;
    hosts_[h].violations = off[h].violations;
    hosts_[h].worst_violation_ns = off[h].worst_violation_ns;
  }
  // Host h's clock x (ticks since its base) on host 0's clock: the true time
  // real0_h + slope_h x - offset_h, read back through host 0's fit. Linear in x.
  const HostInfo &ref = hosts_[0];
  std::vector<double> a(H), b(H);
  // Corrupt clock samples can put a host anywhere: its streams must land within 2^60 ticks
  // of the time line, at a positive finite rate, or the trace is refused (no overflow later).
  constexpr double kReach = 0x1p60;
  auto refuse = [&](std::size_t h) {
    throw TraceError(hosts_[h].dir, 0,
                     "its clock samples do not place its streams on the first directory's time "
                     "line (corrupt clock samples?)");
  };
  for (std::size_t h = 1; h < H; ++h) {
    b[h] = hosts_[h].real_ns_per_tick / ref.real_ns_per_tick;
    a[h] = (hosts_[h].real0_ns - hosts_[h].offset_ns - ref.real0_ns) / ref.real_ns_per_tick;
    if (!(b[h] > 0 && b[h] < 1e6) || !(std::fabs(a[h]) < kReach))
      refuse(h);
  }
  std::vector<double> start(streams_.size());
  double earliest = 0;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    const Stream &s = streams_[i];
    double x = host_ticks(s.host_, s.info().base_ticks);
    start[i] = s.host_ == 0 ? x : a[s.host_] + b[s.host_] * x;
    if (!(std::fabs(start[i]) < kReach))
      refuse(s.host_);
    earliest = std::min(earliest, start[i]);
  }
  // Another host may have started first: shift the time line so no time is negative.
  const auto shift = static_cast<std::int64_t>(std::ceil(-earliest));
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    Stream &s = streams_[i];
    if (s.host_ == 0) {
      s.run_offset_ = static_cast<std::int64_t>(s.info().base_ticks - run_base_) + shift;
    } else {
      s.run_offset_ = std::llround(start[i]) + shift;
      s.run_scale_ = b[s.host_];
    }
  }
}

} // namespace vprof::trace
