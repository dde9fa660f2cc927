// Implementation of the trace reader: stream validation over a read-only mapping,
// trace-directory discovery, and the .labels / .maps side files.
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vprof::trace {

TraceError::TraceError(std::filesystem::path file, std::uint64_t offset, std::string problem)
    : std::runtime_error(file.string() + ": offset " + std::to_string(offset) + ": " + problem),
      file_(std::move(file)), offset_(offset), problem_(std::move(problem)) {}

const char *kind_name(unsigned kind) {
  switch (kind) {
  case VPROF_REC_ENTER:
    return "ENTER";
  case VPROF_REC_EXIT:
    return "EXIT";
  case VPROF_REC_INTERVAL_BEGIN:
    return "INTERVAL_BEGIN";
  case VPROF_REC_INTERVAL_END:
    return "INTERVAL_END";
  case VPROF_REC_ATTACH:
    return "ATTACH";
  case VPROF_REC_DETACH:
    return "DETACH";
  case VPROF_REC_LABEL:
    return "LABEL";
  case VPROF_REC_LOCK_WAIT:
    return "LOCK_WAIT";
  case VPROF_REC_LOCK_ACQUIRE:
    return "LOCK_ACQUIRE";
  case VPROF_REC_LOCK_RELEASE:
    return "LOCK_RELEASE";
  case VPROF_REC_RWLOCK_WAIT_RD:
    return "RWLOCK_WAIT_RD";
  case VPROF_REC_RWLOCK_WAIT_WR:
    return "RWLOCK_WAIT_WR";
  case VPROF_REC_RWLOCK_ACQUIRE_RD:
    return "RWLOCK_ACQUIRE_RD";
  case VPROF_REC_RWLOCK_ACQUIRE_WR:
    return "RWLOCK_ACQUIRE_WR";
  case VPROF_REC_RWLOCK_RELEASE:
    return "RWLOCK_RELEASE";
  case VPROF_REC_COND_WAIT_BEGIN:
    return "COND_WAIT_BEGIN";
  case VPROF_REC_COND_WAIT_END:
    return "COND_WAIT_END";
  case VPROF_REC_COND_WAIT_TIMEOUT:
    return "COND_WAIT_TIMEOUT";
  case VPROF_REC_COND_SIGNAL:
    return "COND_SIGNAL";
  case VPROF_REC_COND_BROADCAST:
    return "COND_BROADCAST";
  case VPROF_REC_SEM_WAIT:
    return "SEM_WAIT";
  case VPROF_REC_SEM_ACQUIRE:
    return "SEM_ACQUIRE";
  case VPROF_REC_SEM_POST:
    return "SEM_POST";
  case VPROF_REC_HANDOFF_SEND:
    return "HANDOFF_SEND";
  case VPROF_REC_HANDOFF_RECV:
    return "HANDOFF_RECV";
  case VPROF_REC_WAIT_BEGIN:
    return "WAIT_BEGIN";
  case VPROF_REC_WAIT_END:
    return "WAIT_END";
  case VPROF_REC_WAKE:
    return "WAKE";
  case VPROF_REC_CLOCK:
    return "CLOCK";
  case VPROF_REC_MSG_SEND:
    return "MSG_SEND";
  case VPROF_REC_MSG_RECV:
    return "MSG_RECV";
  default:
    return nullptr;
  }
}

bool kind_known(unsigned kind) {
  static const auto table = [] {
    std::array<bool, 256> t{};
    for (unsigned k = 0; k < 256; ++k)
      t[k] = kind_name(k) != nullptr;
    return t;
  }();
  return kind < 256 && table[kind];
}

namespace {

std::string read_text(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw TraceError(file, 0, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class T> bool parse_num(std::string_view s, T &out, int base = 10) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

} // namespace

namespace {

std::size_t page_size() {
  static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Reads exactly n bytes at off; false on a short read or an error.
bool pread_all(int fd, void *buf, std::size_t n, std::uint64_t off) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, static_cast<char *>(buf) + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

} // namespace

Stream::Stream(const std::filesystem::path &file) {
  info_.path = file;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw TraceError(file, 0, std::string("cannot open: ") + std::strerror(errno));
  auto fail = [&](std::uint64_t off, std::string what) {
    if (map_)
      ::munmap(map_, map_size_);
    map_ = nullptr;
    ::close(fd);
    throw TraceError(file, off, std::move(what));
  };
  struct stat st{};
  if (::fstat(fd, &st) != 0)
    fail(0, std::string("cannot stat: ") + std::strerror(errno));
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < VPROF_STREAM_HEADER_SIZE)
    fail(size, "truncated header: file has " + std::to_string(size) +
                   " bytes, a stream header needs " + std::to_string(VPROF_STREAM_HEADER_SIZE));
  vprof_stream_header h;
  if (!pread_all(fd, &h, sizeof h, 0))
    fail(0, std::string("cannot read the header: ") + std::strerror(errno));
  if (std::memcmp(h.magic, VPROF_TRACE_MAGIC, VPROF_TRACE_MAGIC_SIZE) != 0)
    fail(0, "bad magic (not a vprof trace stream)");
  if (h.version < VPROF_TRACE_VERSION_MIN || h.version > VPROF_TRACE_VERSION)
    fail(8, "unsupported version " + std::to_string(h.version) + " (this reader knows " +
                std::to_string(VPROF_TRACE_VERSION_MIN) + " to " +
                std::to_string(VPROF_TRACE_VERSION) +
                "; record the program again with this vprof's runtime)");
  if (h.header_size != VPROF_STREAM_HEADER_SIZE)
    fail(12, "header_size " + std::to_string(h.header_size) + ", expected 256");
  if (h.record_size != VPROF_RECORD_SIZE)
    fail(16, "record_size " + std::to_string(h.record_size) + ", expected 16");
  if (h.clock_kind != VPROF_CLOCK_TSC && h.clock_kind != VPROF_CLOCK_MONOTONIC)
    fail(20, "unknown clock_kind " + std::to_string(h.clock_kind));
  if (h.ticks_per_second == 0)
    fail(24, "ticks_per_second is 0");
  // Region checks, written so that no sum can overflow.
  const std::uint64_t rec = VPROF_RECORD_SIZE;
  if (h.window_offset < VPROF_STREAM_HEADER_SIZE || h.window_offset % rec != 0 ||
      h.window_offset > size)
    fail(120, "window_offset " + std::to_string(h.window_offset) +
                  " is not a record boundary between the header and the end of the file (" +
                  std::to_string(size) + " bytes)");
  if (h.window_records == 0 || h.window_records > (size - h.window_offset) / rec)
    fail(88, "window_records " + std::to_string(h.window_records) +
                 " reach beyond the end of the file (room for " +
                 std::to_string((size - h.window_offset) / rec) + ")");
  if (h.data_offset < h.window_offset + h.window_records * rec || h.data_offset % rec != 0)
    fail(128, "data_offset " + std::to_string(h.data_offset) +
                  " overlaps the window or is not a record boundary");
  std::uint64_t data_room = size > h.data_offset ? (size - h.data_offset) / rec : 0;
  if (h.committed_records > data_room)
    fail(136, "committed_records " + std::to_string(h.committed_records) +
                  " reach beyond the end of the file (room for " + std::to_string(data_room) +
                  "): the file was truncated");
  if (h.window_base > h.committed_records)
    fail(144, "window_base " + std::to_string(h.window_base) + " is past committed_records " +
                  std::to_string(h.committed_records));
  if (h.committed_records - h.window_base > h.window_records)
    fail(144, "window_base " + std::to_string(h.window_base) +
                  " is more than a window behind committed_records " +
                  std::to_string(h.committed_records));
  info_.pid = h.pid;
  info_.tid = h.tid;
  info_.ppid = h.ppid;
  info_.stream_seq = h.stream_seq;
  info_.clock_kind = h.clock_kind;
  info_.ticks_per_second = h.ticks_per_second;
  info_.base_ticks = h.base_ticks;
  info_.base_monotonic_ns = h.base_monotonic_ns;
  info_.base_realtime_ns = h.base_realtime_ns;
  info_.end_ticks = h.end_ticks;
  info_.end_realtime_ns = h.end_ticks ? h.end_realtime_ns : 0;
  info_.features = h.features;
  info_.dropped = h.dropped;
  info_.window_records = h.window_records;
  info_.committed_records = h.committed_records;
  info_.flags = h.flags;
  info_.thread_name.assign(h.thread_name, strnlen(h.thread_name, sizeof h.thread_name));
  // a host name is printable ASCII (RFC 1123); anything else in these bytes is damage
  info_.hostname.assign(h.hostname, strnlen(h.hostname, sizeof h.hostname));
  for (char &c : info_.hostname)
    if (c < 0x21 || c > 0x7e)
      c = '?';

  // Validate through pread in blocks rather than through a mapping: opening a large
  // trace must neither make the file resident nor fault every page twice. The data region
  // holds only finished records; the window's records end at the first empty slot.
  constexpr std::size_t kBlock = (4u << 20) / VPROF_RECORD_SIZE;
  std::vector<vprof_record> buf;
  auto scan = [&](std::uint64_t off0, std::uint64_t n, bool data) -> std::uint64_t {
    buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, kBlock)));
    for (std::uint64_t w = 0; w < n; w += kBlock) {
      std::size_t cnt = static_cast<std::size_t>(std::min<std::uint64_t>(n - w, kBlock));
      if (!pread_all(fd, buf.data(), cnt * rec, off0 + w * rec))
        fail(off0 + w * rec, "cannot read records (file shrank?)");
      for (std::size_t j = 0; j < cnt; ++j) {
        unsigned k = vprof_record_kind_of(&buf[j]);
        if (k == VPROF_REC_NONE) {
          if (data)
            fail(off0 + (w + j) * rec, "empty record inside the data region (committed_records " +
                                           std::to_string(n) + ")");
          return w + j;
        }
        if (!kind_known(k))
          fail(off0 + (w + j) * rec, "record with unknown kind " + std::to_string(k));
      }
    }
    return n;
  };
  auto add_part = [&](std::uint64_t off, std::uint64_t n) {
    if (n)
      parts_[nparts_++] = Part{off, n};
  };
  std::uint64_t n_data = scan(h.data_offset, h.committed_records, true);
  add_part(h.data_offset, n_data);
  // The window is a ring: the record after the data region's last is in slot
  // committed_records % window_records, and at most window_base + window_records - 1 is
  // there (fewer when a half was appended but not yet zeroed when the process died).
  std::uint64_t slot = h.committed_records % h.window_records,
                room = h.window_base + h.window_records - h.committed_records;
  std::uint64_t run = std::min(room, h.window_records - slot);
  std::uint64_t n_win = scan(h.window_offset + slot * rec, run, false);
  add_part(h.window_offset + slot * rec, n_win);
  if (n_win == run && room > run) {
    std::uint64_t wrapped = scan(h.window_offset, room - run, false);
    add_part(h.window_offset, wrapped);
    n_win += wrapped;
  }
  count_ = static_cast<std::size_t>(n_data + n_win);
  info_.window_count = n_win;
  if (count_ == 0) {
    ::close(fd);
    return;
  }
  if (std::string problem = map_parts(fd); !problem.empty())
    fail(0, std::move(problem));
  ::close(fd);
  ::madvise(map_, map_size_, MADV_SEQUENTIAL);
}

std::string Stream::map_parts(int fd) {
  const std::uint64_t rec = VPROF_RECORD_SIZE;
  const std::size_t page = page_size();
  auto round_up = [&](std::uint64_t x) { return (x + page - 1) / page * page; };
  auto map_at = [&](void *where, std::uint64_t off, std::uint64_t len) {
    return ::mmap(where, static_cast<std::size_t>(len), PROT_READ,
                  MAP_PRIVATE | (where ? MAP_FIXED : 0), fd, static_cast<off_t>(off));
  };
  auto cannot = [](const char *what) { return std::string(what) + std::strerror(errno); };
  if (nparts_ == 1) { // mapped where it lies
    std::uint64_t off = parts_[0].file_offset, lo = off / page * page,
                  len = off + count_ * rec - lo;
    void *m = map_at(nullptr, lo, len);
    if (m == MAP_FAILED)
      return cannot("cannot map: ");
    map_ = m;
    map_size_ = static_cast<std::size_t>(len);
    records_ = reinterpret_cast<const vprof_record *>(static_cast<const char *>(m) + (off - lo));
    return {};
  }
  bool aligned = true; // every part starts on a page, and all but the last fill whole pages
  for (std::size_t i = 0; i < nparts_; ++i)
    aligned = aligned && parts_[i].file_offset % page == 0 &&
              (i + 1 == nparts_ || parts_[i].count * rec % page == 0);
  std::uint64_t len = round_up(count_ * rec);
  void *m =
      ::mmap(nullptr, static_cast<std::size_t>(len), aligned ? PROT_NONE : PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | (aligned ? MAP_NORESERVE : 0), -1, 0);
  if (m == MAP_FAILED)
    return cannot(aligned ? "cannot map: " : "cannot allocate: ");
  map_ = m;
  map_size_ = static_cast<std::size_t>(len);
  char *at = static_cast<char *>(m);
  for (std::size_t i = 0; i < nparts_; ++i) {
    const Part &p = parts_[i];
    if (aligned ? map_at(at, p.file_offset, round_up(p.count * rec)) == MAP_FAILED
                : !pread_all(fd, at, p.count * rec, p.file_offset))
      return aligned ? cannot("cannot map: ") : "cannot read records (file shrank?)";
    at += p.count * rec;
  }
  copied_ = !aligned;
  records_ = reinterpret_cast<const vprof_record *>(m);
  return {};
}

std::uint64_t Stream::offset_of(std::size_t i) const {
  auto k = static_cast<std::uint64_t>(i);
  for (std::size_t p = 0; p < nparts_; ++p) {
    if (k < parts_[p].count)
      return parts_[p].file_offset + k * VPROF_RECORD_SIZE;
    k -= parts_[p].count;
  }
  return 0; // past the last record
}

void Stream::release_pages(std::size_t begin, std::size_t end) const {
  if (!map_ || copied_ || end <= begin)
    return;
  const std::size_t page = page_size();
  auto lo = reinterpret_cast<std::uintptr_t>(records_ + begin),
       hi = reinterpret_cast<std::uintptr_t>(records_ + std::min(end, count_));
  lo = (lo + page - 1) / page * page;
  hi -= hi % page;
  if (hi > lo)
    ::madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_DONTNEED);
}

Stream::~Stream() {
  if (map_)
    ::munmap(map_, map_size_);
}

Stream::Stream(Stream &&o) noexcept
    : run_offset_(o.run_offset_), run_scale_(o.run_scale_), host_(o.host_),
      info_(std::move(o.info_)), map_(o.map_), map_size_(o.map_size_), records_(o.records_),
      count_(o.count_), parts_(o.parts_), nparts_(o.nparts_), copied_(o.copied_) {
  o.map_ = nullptr;
  o.records_ = nullptr;
  o.count_ = 0;
}

bool ProcessInfo::shared_key(std::uint64_t addr, std::uint64_t &dev, std::uint64_t &ino,
                             std::uint64_t &off) const {
  auto it = std::upper_bound(shared.begin(), shared.end(), addr,
                             [](std::uint64_t a, const SharedMapping &m) { return a < m.start; });
  if (it == shared.begin())
    return false;
  --it;
  if (addr >= it->end)
    return false;
  dev = it->dev;
  ino = it->inode;
  off = it->file_offset + (addr - it->start);
  return true;
}

std::uint64_t parse_cpu(const std::string &text, const std::filesystem::path &file) {
  std::istringstream in(text);
  unsigned long long user = 0, sys = 0;
  std::string rest;
  if (!(in >> user >> sys) || (in >> rest))
    throw TraceError(file, 0, "expected \"<user ns>\t<system ns>\" (the process's CPU time)");
  return static_cast<std::uint64_t>(user + sys);
}

std::map<std::uint32_t, std::string> parse_labels(const std::string &text,
                                                  const std::filesystem::path &file) {
  std::map<std::uint32_t, std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty()) {
      std::size_t tab = line.find('\t');
      std::uint32_t id = 0;
      if (tab == std::string_view::npos || !parse_num(line.substr(0, tab), id))
        throw TraceError(file, pos, "malformed label line (expected <id>\\t<text>)");
      out[id] = std::string(line.substr(tab + 1));
    }
    pos = end + 1;
  }
  return out;
}

std::vector<SharedMapping> parse_maps(const std::string &text, const std::filesystem::path &file) {
  std::vector<SharedMapping> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    std::string line(text.data() + pos, end - pos);
    std::size_t line_off = pos;
    pos = end + 1;
    if (line.empty())
      continue;
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode;
    if (!(ls >> range >> perms >> offset >> dev >> inode))
      throw TraceError(file, line_off, "malformed maps line");
    SharedMapping m;
    std::size_t dash = range.find('-');
    std::size_t colon = dev.find(':');
    std::uint64_t major = 0, minor = 0;
    if (dash == std::string::npos || colon == std::string::npos ||
        !parse_num(std::string_view(range).substr(0, dash), m.start, 16) ||
        !parse_num(std::string_view(range).substr(dash + 1), m.end, 16) ||
        !parse_num(std::string_view(offset), m.file_offset, 16) ||
        !parse_num(std::string_view(dev).substr(0, colon), major, 16) ||
        !parse_num(std::string_view(dev).substr(colon + 1), minor, 16) ||
        !parse_num(std::string_view(inode), m.inode) || perms.size() < 4 || m.end < m.start)
      throw TraceError(file, line_off, "malformed maps line");
    m.dev = (major << 32) | minor;
    if (perms[3] == 's' && m.inode != 0)
      out.push_back(m);
  }
  std::sort(out.begin(), out.end(),
            [](const SharedMapping &a, const SharedMapping &b) { return a.start < b.start; });
  // The runtime rewrites the maps file at thread starts and at exit; a file holding
  // several snapshots repeats ranges: keep one of each.
  out.erase(std::unique(out.begin(), out.end(),
                        [](const SharedMapping &a, const SharedMapping &b) {
                          return a.start == b.start && a.end == b.end;
                        }),
            out.end());
  return out;
}

const ProcessInfo *Trace::process(std::uint32_t pid) const {
  for (const auto &p : processes_)
    if (p.pid == pid)
      return &p;
  return nullptr;
}

Trace Trace::open(const std::filesystem::path &dir, const OpenOptions &opt) {
  Trace t = open_dir(dir, opt);
  t.place_kernel_events();
  return t;
}

Trace Trace::open_dir(const std::filesystem::path &dir, const OpenOptions &opt) {
  Trace t;
  t.dir_ = dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw TraceError(dir, 0, "not a trace directory");
  struct Name {
    std::uint32_t pid, seq;
    std::filesystem::path path;
  };
  std::vector<Name> names;
  for (const auto &ent : std::filesystem::directory_iterator(dir, ec)) {
    std::string fn = ent.path().filename().string();
    if (fn.size() < 5 || fn.substr(fn.size() - 4) != ".vpt")
      continue;
    std::string stem = fn.substr(0, fn.size() - 4);
    std::size_t dot = stem.find('.');
    Name n{};
    if (dot == std::string::npos || !parse_num(std::string_view(stem).substr(0, dot), n.pid) ||
        !parse_num(std::string_view(stem).substr(dot + 1), n.seq))
      continue;
    n.path = ent.path();
    names.push_back(std::move(n));
  }
  if (ec)
    throw TraceError(dir, 0, "cannot list directory: " + ec.message());
  if (names.empty())
    throw TraceError(dir, 0, "no <pid>.<seq>.vpt streams in this directory");
  std::sort(names.begin(), names.end(), [](const Name &a, const Name &b) {
    return a.pid != b.pid ? a.pid < b.pid : a.seq < b.seq;
  });
  for (const auto &n : names) {
    try {
      t.streams_.emplace_back(n.path);
    } catch (const TraceError &e) {
      if (!opt.skip_bad_streams)
        throw;
      t.skipped_.push_back(e.what());
    }
  }
  if (t.streams_.empty())
    throw TraceError(dir, 0, "no valid stream in this directory");
  for (std::size_t i = 0; i < t.streams_.size(); ++i) {
    const StreamInfo &si = t.streams_[i].info();
    ProcessInfo *p = nullptr;
    for (auto &q : t.processes_)
      if (q.pid == si.pid)
        p = &q;
    if (!p) {
      t.processes_.emplace_back();
      p = &t.processes_.back();
      p->pid = si.pid;
      p->ppid = si.ppid;
      p->clock_kind = si.clock_kind;
      p->ticks_per_second = si.ticks_per_second;
      p->base_ticks = si.base_ticks;
      p->base_realtime_ns = si.base_realtime_ns;
    } else if (si.base_ticks != p->base_ticks || si.clock_kind != p->clock_kind) {
      throw TraceError(si.path, 32,
                       "base_ticks/clock_kind differ from the other streams of pid " +
                           std::to_string(si.pid));
    }
    p->dropped += si.dropped;
    p->streams.push_back(i);
    t.stream_process_.push_back(static_cast<std::size_t>(p - t.processes_.data()));
  }
  for (auto &p : t.processes_) {
    auto labels = dir / (std::to_string(p.pid) + ".labels");
    if (std::filesystem::exists(labels, ec))
      p.labels = parse_labels(read_text(labels), labels);
    auto maps = dir / (std::to_string(p.pid) + ".maps");
    if (std::filesystem::exists(maps, ec))
      p.shared = parse_maps(read_text(maps), maps);
    auto cpu = dir / (std::to_string(p.pid) + ".cpu");
    if (std::filesystem::exists(cpu, ec))
      p.cpu_ns = parse_cpu(read_text(cpu), cpu);
  }
  const ProcessInfo *first = &t.processes_.front();
  for (const auto &p : t.processes_) {
    if (p.clock_kind != first->clock_kind)
      throw TraceError(t.streams_[p.streams.front()].info().path, 20,
                       "clock_kind differs between processes of one run");
    if (p.base_ticks < first->base_ticks)
      first = &p;
  }
  t.run_base_ = first->base_ticks;
  t.hz_ = static_cast<double>(first->ticks_per_second);
  for (auto &s : t.streams_)
    s.run_offset_ = static_cast<std::int64_t>(s.info().base_ticks - t.run_base_);
  HostInfo host;
  host.dir = dir;
  if (!t.streams_.empty())
    host.hostname = t.streams_.front().info().hostname;
  host.base_ticks = t.run_base_;
  host.ticks_per_second = t.hz_;
  t.hosts_.push_back(std::move(host));
  t.load_sched(dir);
  return t;
}

} // namespace vprof::trace
