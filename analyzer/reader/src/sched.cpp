// The kernel wake-up file (sched.vpk): validation against sched_format.h, the system calls'
// wait kinds, and the placement of its records on the run's time line, per traced thread.
#include "vprof/sched_reader.hpp"
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include <sys/syscall.h>

namespace vprof::trace {

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

} // namespace

void expand_next_runs(std::vector<vprof_sched_record> &records) {
  const auto merged = static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [](const vprof_sched_record &r) {
        return r.kind == VPROF_SCHED_SLEEP && (r.flags & VPROF_SCHED_NEXT_RUNS);
      }));
  if (merged == 0)
    return;
  std::vector<vprof_sched_record> out;
  out.reserve(records.size() + merged);
  for (const vprof_sched_record &r : records) {
    if (r.kind == VPROF_SCHED_SLEEP && (r.flags & VPROF_SCHED_NEXT_RUNS)) {
      vprof_sched_record run{};
      run.time_ns = r.time_ns;
      run.tid = r.other;
      run.pid = r.other_pid;
      run.other = r.tid;
      run.other_pid = r.pid;
      run.kind = VPROF_SCHED_RUN;
      run.cpu = r.cpu;
      out.push_back(run);
    }
    out.push_back(r);
  }
  records = std::move(out);
}

SchedFile read_sched(const std::filesystem::path &file) {
  SchedFile out;
  out.info.file = file;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw TraceError(file, 0, std::string("cannot read: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  in.seekg(0);
  if (size == 0) { // a recorder killed before its first write
    out.warning = file.string() + ": empty (the kernel recorder wrote nothing): no kernel waits";
    return out;
  }
  if (size < VPROF_SCHED_HEADER_SIZE)
    throw TraceError(file, size,
                     "truncated header: file has " + num(size) + " bytes, a sched header needs " +
                         num(VPROF_SCHED_HEADER_SIZE));
  vprof_sched_header h;
  if (!in.read(reinterpret_cast<char *>(&h), sizeof h))
    throw TraceError(file, 0, "cannot read the header");
  if (std::memcmp(h.magic, VPROF_SCHED_MAGIC, VPROF_SCHED_MAGIC_SIZE) != 0)
    throw TraceError(file, 0, "bad magic (not a vprof kernel wake-up file)");
  if (h.version < VPROF_SCHED_MIN_VERSION || h.version > VPROF_SCHED_VERSION)
    throw TraceError(file, 8,
                     "unsupported version " + num(h.version) + " (this reader knows " +
                         num(VPROF_SCHED_MIN_VERSION) + " to " + num(VPROF_SCHED_VERSION) + ")");
  if (h.header_size != VPROF_SCHED_HEADER_SIZE)
    throw TraceError(file, 12,
                     "header_size " + num(h.header_size) + ", expected " +
                         num(VPROF_SCHED_HEADER_SIZE));
  if (h.record_size != VPROF_SCHED_RECORD_SIZE)
    throw TraceError(file, 16,
                     "record_size " + num(h.record_size) + ", expected " +
                         num(VPROF_SCHED_RECORD_SIZE));
  if (h.flags & ~VPROF_SCHED_CLOSED)
    throw TraceError(
        file, 20, "unknown flags 0x" + [&] {
          char b[16];
          std::snprintf(b, sizeof b, "%x", h.flags);
          return std::string(b);
        }());
  SchedInfo &si = out.info;
  si.version = h.version;
  si.root_pid = h.root_pid;
  si.closed = (h.flags & VPROF_SCHED_CLOSED) != 0;
  si.start_ns = h.start_ns;
  si.end_ns = h.end_ns;
  si.header_records = h.records;
  si.lost = h.lost;
  const std::uint64_t room = (size - VPROF_SCHED_HEADER_SIZE) / VPROF_SCHED_RECORD_SIZE;
  const bool partial = (size - VPROF_SCHED_HEADER_SIZE) % VPROF_SCHED_RECORD_SIZE != 0;
  std::uint64_t n = room;
  if (si.closed) {
    if (room > h.records || (room == h.records && partial))
      throw TraceError(file, VPROF_SCHED_HEADER_SIZE + h.records * VPROF_SCHED_RECORD_SIZE,
                       "the file holds more than the " + num(h.records) +
                           " records its closed header counts (" + num(size) + " bytes)");
    if (room < h.records)
      out.warning = file.string() + ": truncated: holds " + num(room) + " whole records of the " +
                    num(h.records) + " its header counts; reading those";
  } else {
    out.warning = file.string() +
                  ": not closed (the kernel recorder did not end normally): reading its " +
                  num(room) + " whole records";
  }
  out.records.resize(static_cast<std::size_t>(n));
  if (n && !in.read(reinterpret_cast<char *>(out.records.data()),
                    static_cast<std::streamsize>(n * VPROF_SCHED_RECORD_SIZE)))
    throw TraceError(file, VPROF_SCHED_HEADER_SIZE, "cannot read records (file shrank?)");
  for (std::uint64_t i = 0; i < n; ++i) {
    const vprof_sched_record &r = out.records[static_cast<std::size_t>(i)];
    const std::uint64_t off = VPROF_SCHED_HEADER_SIZE + i * VPROF_SCHED_RECORD_SIZE;
    if (r.kind == VPROF_SCHED_NONE && !si.closed) { // a killed recorder's unwritten tail
      out.records.resize(static_cast<std::size_t>(i));
      break;
    }
    if (r.kind < VPROF_SCHED_SLEEP || r.kind > VPROF_SCHED_EXIT)
      throw TraceError(file, off + 24, "record with unknown kind " + num(r.kind));
    if ((r.flags & VPROF_SCHED_NEXT_RUNS) && (r.kind != VPROF_SCHED_SLEEP || r.other == 0))
      throw TraceError(file, off + 25,
                       "NEXT_RUNS on a record that is not a SLEEP naming the thread switched in");
    if ((r.flags & (VPROF_SCHED_WAKE_ROOM | VPROF_SCHED_WAKE_DATA)) &&
        (r.kind != VPROF_SCHED_WAKE || si.version < 3))
      throw TraceError(file, off + 25,
                       "a room or data wake-up flag on a record that is not a version-3 WAKE");
  }
  si.records = out.records.size();
  expand_next_runs(out.records);
  return out;
}

const char *sched_wait_kind(std::int32_t nr) {
  switch (nr) {
#ifdef SYS_futex
  case SYS_futex:
#endif
#ifdef SYS_futex_waitv
  case SYS_futex_waitv:
#endif
    return "futex";
#ifdef SYS_epoll_wait
  case SYS_epoll_wait:
#endif
#ifdef SYS_epoll_pwait
  case SYS_epoll_pwait:
#endif
#ifdef SYS_epoll_pwait2
  case SYS_epoll_pwait2:
#endif
#ifdef SYS_poll
  case SYS_poll:
#endif
#ifdef SYS_ppoll
  case SYS_ppoll:
#endif
#ifdef SYS_select
  case SYS_select:
#endif
#ifdef SYS_pselect6
  case SYS_pselect6:
#endif
    return "poll";
#ifdef SYS_read
  case SYS_read:
#endif
#ifdef SYS_readv
  case SYS_readv:
#endif
#ifdef SYS_pread64
  case SYS_pread64:
#endif
#ifdef SYS_preadv
  case SYS_preadv:
#endif
#ifdef SYS_preadv2
  case SYS_preadv2:
#endif
#ifdef SYS_recvfrom
  case SYS_recvfrom:
#endif
#ifdef SYS_recvmsg
  case SYS_recvmsg:
#endif
#ifdef SYS_recvmmsg
  case SYS_recvmmsg:
#endif
#ifdef SYS_accept
  case SYS_accept:
#endif
#ifdef SYS_accept4
  case SYS_accept4:
#endif
    return "read";
#ifdef SYS_write
  case SYS_write:
#endif
#ifdef SYS_writev
  case SYS_writev:
#endif
#ifdef SYS_pwrite64
  case SYS_pwrite64:
#endif
#ifdef SYS_pwritev
  case SYS_pwritev:
#endif
#ifdef SYS_pwritev2
  case SYS_pwritev2:
#endif
#ifdef SYS_sendto
  case SYS_sendto:
#endif
#ifdef SYS_sendmsg
  case SYS_sendmsg:
#endif
#ifdef SYS_sendmmsg
  case SYS_sendmmsg:
#endif
    return "write";
#ifdef SYS_fsync
  case SYS_fsync:
#endif
#ifdef SYS_fdatasync
  case SYS_fdatasync:
#endif
#ifdef SYS_sync_file_range
  case SYS_sync_file_range:
#endif
#ifdef SYS_sync
  case SYS_sync:
#endif
#ifdef SYS_syncfs
  case SYS_syncfs:
#endif
#ifdef SYS_io_getevents
  case SYS_io_getevents:
#endif
#ifdef SYS_io_pgetevents
  case SYS_io_pgetevents:
#endif
    return "io";
#ifdef SYS_nanosleep
  case SYS_nanosleep:
#endif
#ifdef SYS_clock_nanosleep
  case SYS_clock_nanosleep:
#endif
    return "sleep";
#ifdef SYS_wait4
  case SYS_wait4:
#endif
#ifdef SYS_waitid
  case SYS_waitid:
#endif
    return "child";
  default:
    return "kernel";
  }
}

namespace {

// Which traced thread a host's tid was at a time: the stream of that tid (and pid) whose
// records span the time, else the last one begun before it (a thread blocked after its
// last record) unless the kernel saw the tid exit in between, else the first one (a thread
// that blocked before its first record).
class TidMap {
public:
  struct Life {
    std::int64_t first, last;
    std::uint32_t pid;
    std::int32_t stream;
  };
  void add(std::uint32_t tid, Life l) { by_tid_[tid].push_back(l); }
  void exit(std::uint32_t tid, std::int64_t t) { exits_[tid].push_back(t); }
  void sort() {
    for (auto &[tid, v] : by_tid_)
      std::sort(v.begin(), v.end(), [](const Life &a, const Life &b) { return a.first < b.first; });
    for (auto &[tid, v] : exits_)
      std::sort(v.begin(), v.end());
  }
  std::int32_t find(std::uint32_t tid, std::uint32_t pid, std::int64_t t) const {
    auto it = by_tid_.find(tid);
    if (tid == 0 || it == by_tid_.end())
      return -1;
    const Life *before = nullptr, *after = nullptr;
    for (const Life &l : it->second) {
      if (pid != 0 && l.pid != pid)
        continue;
      if (l.first <= t && t <= l.last)
        return l.stream;
      if (l.first <= t)
        before = &l;
      else if (!after)
        after = &l;
    }
    if (before && !exited_between(tid, before->last, t))
      return before->stream;
    if (after && !exited_between(tid, t, after->first))
      return after->stream;
    return -1;
  }

private:
  bool exited_between(std::uint32_t tid, std::int64_t a, std::int64_t b) const {
    auto it = exits_.find(tid);
    if (it == exits_.end())
      return false;
    auto e = std::lower_bound(it->second.begin(), it->second.end(), a);
    return e != it->second.end() && *e < b;
  }
  std::unordered_map<std::uint32_t, std::vector<Life>> by_tid_;
  std::unordered_map<std::uint32_t, std::vector<std::int64_t>> exits_;
};

} // namespace

std::int64_t Trace::sched_run_ticks(std::uint32_t host, std::uint32_t pid, std::uint64_t ns) const {
  const Stream *s = nullptr;
  for (const auto &p : processes_)
    if (p.host == host && !p.streams.empty() && (p.pid == pid || !s)) {
      s = &streams_[p.streams.front()];
      if (p.pid == pid)
        break;
    }
  if (!s)
    return 0;
  const StreamInfo &si = s->info();
  // CLOCK_MONOTONIC ns -> ticks since the process's base -> run ticks
  // (long double: exact for the ns and frequencies of real runs, no overflow for any header)
  const auto dns = static_cast<long double>(static_cast<std::int64_t>(ns - si.base_monotonic_ns));
  const long double rel = std::roundl(dns * static_cast<long double>(si.ticks_per_second) / 1e9L);
  const double t = static_cast<double>(s->run_offset()) +
                   std::clamp(static_cast<double>(rel) * s->run_scale(), -0x1p61, 0x1p61);
  return static_cast<std::int64_t>(std::max(0.0, std::round(t)));
}

void Trace::place_kernel_events() {
  kernel_events_.assign(streams_.size(), {});
  for (auto &[host, file] : sched_pending_) {
    TidMap tids;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      const Stream &s = streams_[i];
      if (s.host() != host || s.records().empty())
        continue;
      tids.add(s.info().tid, {static_cast<std::int64_t>(run_ticks(s, s.records().front())),
                              static_cast<std::int64_t>(run_ticks(s, s.records().back())),
                              s.info().pid, static_cast<std::int32_t>(i)});
    }
    std::vector<std::int64_t> times(file.records.size());
    for (std::size_t k = 0; k < file.records.size(); ++k) {
      const vprof_sched_record &r = file.records[k];
      times[k] = sched_run_ticks(host, r.pid, r.time_ns);
      if (r.kind == VPROF_SCHED_EXIT)
        tids.exit(r.tid, times[k]);
    }
    tids.sort();
    // every task the recorder followed appears as the subject of some record
    std::unordered_set<std::uint32_t> tree;
    for (const auto &r : file.records)
      tree.insert(r.tid);
    SchedInfo info = file.info;
    info.host = host;
    for (std::size_t k = 0; k < file.records.size(); ++k) {
      const vprof_sched_record &r = file.records[k];
      if (r.kind == VPROF_SCHED_EXIT)
        continue;
      const std::int32_t th = tids.find(r.tid, r.pid, times[k]);
      if (th < 0) {
        ++info.unknown_tid;
        continue;
      }
      KernelEvent e;
      e.t = times[k];
      e.kind = r.kind;
      e.flags = r.flags;
      e.other = r.other;
      e.other_pid = r.other_pid;
      if (r.kind == VPROF_SCHED_SLEEP || (r.kind == VPROF_SCHED_WAKE && info.version >= 3))
        e.syscall = vprof_sched_syscall(&r);
      // in interrupt context the task `other` names was only interrupted: no waker
      if (r.kind == VPROF_SCHED_WAKE && !(r.flags & VPROF_SCHED_WAKER_IRQ)) {
        e.waker = tids.find(r.other, r.other_pid, times[k]);
        if (e.waker < 0 && r.other != 0 && tree.count(r.other))
          e.flags |= kWakerUnrecorded;
      }
      kernel_events_[static_cast<std::size_t>(th)].push_back(e);
    }
    sched_.push_back(std::move(info));
    file.records = {};
  }
  sched_pending_.clear();
  for (auto &v : kernel_events_)
    std::stable_sort(v.begin(), v.end(),
                     [](const KernelEvent &a, const KernelEvent &b) { return a.t < b.t; });
}

void Trace::load_sched(const std::filesystem::path &dir) {
  const auto file = dir / VPROF_SCHED_FILE_NAME;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return;
  SchedFile sf = read_sched(file);
  if (!sf.warning.empty())
    warnings_.push_back(sf.warning);
  sched_pending_.emplace_back(0, std::move(sf));
}

} // namespace vprof::trace
