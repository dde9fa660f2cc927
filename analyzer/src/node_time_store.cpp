// The node times of the finished intervals in an unlinked temporary file (node_time_store.hpp).
#include "node_time_store.hpp"

#include "vprof/analyzer.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace vprof::analyzer::detail {

namespace {

void put_varint(std::vector<std::uint8_t> &out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

std::uint64_t get_varint(const std::uint8_t *&p) {
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const std::uint8_t b = *p++;
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80))
      return v;
  }
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

std::filesystem::path temp_dir() {
  const char *t = std::getenv("TMPDIR");
  return t && *t ? std::filesystem::path(t) : std::filesystem::path("/tmp");
}

// A block on file: the header (payload bytes, intervals), then the payload.
struct BlockHeader {
  std::uint64_t bytes, intervals;
};

} // namespace

NodeTimeStore::NodeTimeStore(const std::filesystem::path &dir)
    : dir_(dir.empty() ? temp_dir() : dir) {
#ifdef O_TMPFILE
  fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd_ < 0) {
    std::string name = (dir_ / "vprof-node-times.XXXXXX").string();
    fd_ = ::mkstemp(name.data());
    if (fd_ >= 0)
      ::unlink(name.c_str());
  }
  if (fd_ < 0)
    throw AnalysisError(dir_.string() +
                        ": cannot make the analysis's temporary file of node times (" +
                        std::strerror(errno) + "); set TMPDIR to a writable directory");
}

NodeTimeStore::~NodeTimeStore() {
  if (fd_ >= 0)
    ::close(fd_);
}

void NodeTimeStore::write_all(const std::uint8_t *p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(size_));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      throw AnalysisError(dir_.string() +
                          ": writing the analysis's temporary file of node times (" +
                          std::string(w < 0 ? std::strerror(errno) : "no space") +
                          "); free space there or set TMPDIR to another directory");
    p += w;
    n -= static_cast<std::size_t>(w);
    size_ += static_cast<std::uint64_t>(w);
  }
}

void NodeTimeStore::append(const std::vector<IntervalRec> &intervals,
                           const std::vector<NodeTime> &times) {
  if (intervals.empty())
    return;
  buf_.assign(sizeof(BlockHeader), 0);
  std::vector<std::uint8_t> &one = one_;
  for (const auto &r : intervals) {
    one.clear();
    std::uint32_t prev = 0;
    for (std::uint32_t k = 0; k < r.times_n; ++k) {
      const NodeTime &t = times[r.times_off + k];
      // ascending nodes (the engine sorts them); a smaller one would still round-trip
      put_varint(one, zigzag(static_cast<std::int64_t>(t.node) - prev));
      put_varint(one, zigzag(t.ticks));
      prev = t.node;
    }
    // label, node times, their bytes (a pass over one label skips the others' unread)
    put_varint(buf_, r.label);
    put_varint(buf_, r.times_n);
    put_varint(buf_, one.size());
    buf_.insert(buf_.end(), one.begin(), one.end());
  }
  const BlockHeader h{buf_.size() - sizeof(BlockHeader), intervals.size()};
  std::memcpy(buf_.data(), &h, sizeof h);
  write_all(buf_.data(), buf_.size());
  intervals_ += intervals.size();
}

void NodeTimeStore::for_each_interval(std::int64_t label, const RowFn &fn) const {
  std::vector<std::uint8_t> buf;
  std::vector<NodeTime> times;
  auto read_at = [&](void *dst, std::size_t n, std::uint64_t off) {
    auto *p = static_cast<std::uint8_t *>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        throw AnalysisError(dir_.string() +
                            ": reading the analysis's temporary file of node times (" +
                            std::string(r < 0 ? std::strerror(errno) : "short file") + ")");
      p += r, off += static_cast<std::uint64_t>(r), n -= static_cast<std::size_t>(r);
    }
  };
  for (std::uint64_t off = 0; off < size_;) {
    BlockHeader h;
    read_at(&h, sizeof h, off);
    off += sizeof h;
    buf.resize(h.bytes);
    read_at(buf.data(), h.bytes, off);
    off += h.bytes;
    const std::uint8_t *p = buf.data();
    for (std::uint64_t i = 0; i < h.intervals; ++i) {
      const auto l = static_cast<std::int64_t>(get_varint(p));
      const auto n = static_cast<std::uint32_t>(get_varint(p));
      const std::uint64_t bytes = get_varint(p);
      const std::uint8_t *next = p + bytes;
      if (label >= 0 && l != label) {
        p = next;
        continue;
      }
      times.resize(n);
      std::int64_t node = 0;
      for (auto &t : times) {
        node += unzigzag(get_varint(p));
        t.node = static_cast<std::uint32_t>(node);
        t.ticks = unzigzag(get_varint(p));
      }
      fn(times.data(), n);
    }
  }
}

} // namespace vprof::analyzer::detail
