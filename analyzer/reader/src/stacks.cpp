// The sampled-stack file (stacks.vpk): validation against stacks_format.h and the resolution
// of the samples' stack ids.
#include "vprof/stacks_reader.hpp"
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_map>

namespace vprof::trace {

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::vector<std::uint8_t> read_all(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw TraceError(file, 0, std::string("cannot read: ") + std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

vprof_stacks_header checked_header(const std::filesystem::path &file,
                                   const std::vector<std::uint8_t> &bytes) {
  if (bytes.size() < VPROF_STACKS_HEADER_SIZE)
    throw TraceError(file, bytes.size(),
                     "truncated header: file has " + num(bytes.size()) +
                         " bytes, a stacks header needs " + num(VPROF_STACKS_HEADER_SIZE));
  vprof_stacks_header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, VPROF_STACKS_MAGIC, VPROF_STACKS_MAGIC_SIZE) != 0)
    throw TraceError(file, 0, "bad magic (not a vprof sampled-stack file)");
  if (h.version != VPROF_STACKS_VERSION)
    throw TraceError(file, 8,
                     "unsupported version " + num(h.version) + " (this reader knows " +
                         num(VPROF_STACKS_VERSION) + ")");
  if (h.header_size != VPROF_STACKS_HEADER_SIZE)
    throw TraceError(file, 12,
                     "header_size " + num(h.header_size) + ", expected " +
                         num(VPROF_STACKS_HEADER_SIZE));
  if (h.flags & ~VPROF_STACKS_CLOSED)
    throw TraceError(file, 16, "unknown flags " + hex(h.flags));
  return h;
}

// The entries' walk: STACK entries into `stacks` (by id), SAMPLE entries into `raw` (their
// stack still an id). Stops at a cut entry of a file that was not closed.
struct Walk {
  const std::filesystem::path &file;
  const std::vector<std::uint8_t> &bytes;
  bool closed;
  std::vector<Stack> stacks;
  std::unordered_map<std::uint64_t, std::uint32_t> index; // id -> stacks
  std::vector<std::pair<StackSample, std::uint64_t>> raw;
  bool cut = false; // a partial entry ended the file

  void stack_entry(std::uint64_t off, std::uint32_t size) {
    if (size < VPROF_STACKS_STACK_SIZE)
      throw TraceError(file, off, "STACK entry of " + num(size) + " bytes (at least 32)");
    vprof_stacks_stack s;
    std::memcpy(&s, bytes.data() + off, sizeof s);
    if (s.frames == 0 || s.frames > VPROF_STACKS_MAX_FRAMES)
      throw TraceError(file, off + 16,
                       "STACK with " + num(s.frames) + " frames (1 to " +
                           num(VPROF_STACKS_MAX_FRAMES) + ")");
    if (size != VPROF_STACKS_STACK_SIZE + 8ull * s.frames)
      throw TraceError(file, off,
                       "STACK of " + num(s.frames) + " frames in an entry of " + num(size) +
                           " bytes (" + num(VPROF_STACKS_STACK_SIZE + 8ull * s.frames) + ")");
    if (s.id == 0)
      throw TraceError(file, off + 8, "STACK with id 0");
    if (s.flags & ~VPROF_STACKS_TRUNCATED)
      throw TraceError(file, off + 20, "STACK with unknown flags " + hex(s.flags));
    if (!index.emplace(s.id, static_cast<std::uint32_t>(stacks.size())).second)
      throw TraceError(file, off + 8, "stack " + hex(s.id) + " defined twice");
    Stack out;
    out.id = s.id;
    out.sp_word = s.sp_word;
    out.truncated = (s.flags & VPROF_STACKS_TRUNCATED) != 0;
    out.pc.resize(s.frames);
    std::memcpy(out.pc.data(), bytes.data() + off + VPROF_STACKS_STACK_SIZE, 8ull * s.frames);
    stacks.push_back(std::move(out));
  }

  void sample_entry(std::uint64_t off, std::uint32_t size) {
    if (size != VPROF_STACKS_SAMPLE_SIZE)
      throw TraceError(file, off, "SAMPLE entry of " + num(size) + " bytes (40)");
    vprof_stacks_sample s;
    std::memcpy(&s, bytes.data() + off, sizeof s);
    if (s.what < VPROF_STACKS_ONCPU || s.what > VPROF_STACKS_WAKER)
      throw TraceError(file, off + 36, "SAMPLE of unknown kind " + num(s.what));
    if (s.flags & ~VPROF_STACKS_IN_KERNEL)
      throw TraceError(file, off + 37, "SAMPLE with unknown flags " + hex(s.flags));
    StackSample out;
    out.time_ns = s.time_ns;
    out.tid = s.tid;
    out.pid = s.pid;
    out.other = s.other;
    out.what = s.what;
    out.flags = s.flags;
    out.cpu = s.cpu;
    raw.emplace_back(out, s.stack);
  }

  void run() {
    std::uint64_t off = VPROF_STACKS_HEADER_SIZE;
    while (off < bytes.size()) {
      const std::uint64_t left = bytes.size() - off;
      vprof_stacks_entry e{};
      if (left >= sizeof e)
        std::memcpy(&e, bytes.data() + off, sizeof e);
      if (left < sizeof e || e.size > left || (!closed && e.size == 0)) {
        if (closed)
          throw TraceError(file, off, "entry cut by the end of the file");
        cut = left > 0;
        return;
      }
      if (e.size < sizeof e || e.size % 8 != 0)
        throw TraceError(file, off, "entry of " + num(e.size) + " bytes (a multiple of 8, >= 8)");
      if (e.kind == VPROF_STACKS_STACK)
        stack_entry(off, e.size);
      else if (e.kind == VPROF_STACKS_SAMPLE)
        sample_entry(off, e.size);
      else
        throw TraceError(file, off + 4, "entry of unknown kind " + num(e.kind));
      off += e.size;
    }
  }
};

} // namespace

StacksFile read_stacks(const std::filesystem::path &file) {
  StacksFile out;
  out.info.file = file;
  const std::vector<std::uint8_t> bytes = read_all(file);
  if (bytes.empty()) { // a recorder killed before its first write
    out.warning = file.string() + ": empty (the kernel recorder wrote nothing): no stacks";
    return out;
  }
  const vprof_stacks_header h = checked_header(file, bytes);
  StacksInfo &si = out.info;
  si.root_pid = h.root_pid;
  si.sample_hz = h.sample_hz;
  si.closed = (h.flags & VPROF_STACKS_CLOSED) != 0;
  si.start_ns = h.start_ns;
  si.end_ns = h.end_ns;
  si.header_samples = h.samples;
  si.header_stacks = h.stacks;
  si.lost = h.lost;
  si.empty = h.empty;
  Walk walk{file, bytes, si.closed, {}, {}, {}, false};
  walk.run();
  if (si.closed && (walk.raw.size() > h.samples || walk.stacks.size() > h.stacks))
    throw TraceError(file, VPROF_STACKS_HEADER_SIZE,
                     "the file holds " + num(walk.raw.size()) + " samples and " +
                         num(walk.stacks.size()) + " stacks, more than its closed header counts (" +
                         num(h.samples) + ", " + num(h.stacks) + ")");
  out.samples.reserve(walk.raw.size());
  for (auto &[sample, id] : walk.raw) {
    auto it = walk.index.find(id);
    if (it == walk.index.end()) {
      ++si.unresolved;
      continue;
    }
    sample.stack = it->second;
    out.samples.push_back(sample);
  }
  out.stacks = std::move(walk.stacks);
  if (!si.closed)
    out.warning = file.string() +
                  ": not closed (the kernel recorder did not end normally): reading its " +
                  num(out.samples.size()) + " whole samples";
  else if (walk.raw.size() < h.samples || out.stacks.size() < h.stacks)
    out.warning = file.string() + ": truncated: holds " + num(walk.raw.size()) + " of the " +
                  num(h.samples) + " samples its header counts; reading those";
  return out;
}

} // namespace vprof::trace
