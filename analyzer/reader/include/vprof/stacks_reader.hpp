// The sampled-stack file of a trace directory (stacks.vpk, runtime/include/vprof/stacks_format.h):
// validation, and its stacks and samples with every stack id resolved (docs/trace-format.md,
// "Sampled stacks"). Symbolizing the frames is the symbols room's (symbols/).
#pragma once

#include <vprof/stacks_format.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vprof::trace {

// The decoded header of one stacks.vpk and what reading it found.
struct StacksInfo {
  std::filesystem::path file;
  std::uint32_t root_pid = 0;
  std::uint32_t sample_hz = 0; // on-CPU samples per second and CPU (0: none were taken)
  bool closed = false;         // VPROF_STACKS_CLOSED: the recorder ended normally
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t header_samples = 0, header_stacks = 0; // the header's counts (final when closed)
  std::uint64_t lost = 0;                              // entries the kernel could not hand over
  std::uint64_t empty = 0;                             // stacks the kernel could not walk
  std::uint64_t unresolved = 0; // samples naming a stack the file does not define (dropped)
};

// One stack: its return addresses, innermost first (pc[0] the instruction pointer).
struct Stack {
  std::uint64_t id = 0;
  std::vector<std::uint64_t> pc;
  std::uint64_t sp_word = 0; // the word at the user stack pointer (0: unreadable)
  bool truncated = false;    // the walk stopped at VPROF_STACKS_MAX_FRAMES
};

// One sample, its stack resolved to an index into StacksFile::stacks.
struct StackSample {
  std::uint64_t time_ns = 0; // CLOCK_MONOTONIC
  std::uint32_t tid = 0, pid = 0;
  std::uint32_t other = 0; // WAKER: the woken tid
  std::uint32_t stack = 0; // index into StacksFile::stacks
  std::uint8_t what = 0;   // enum vprof_stacks_what
  std::uint8_t flags = 0;  // VPROF_STACKS_IN_KERNEL
  std::uint16_t cpu = 0;
};

// A stacks.vpk read and validated. Throws TraceError naming the file, the offset and the
// problem for a corrupt file (bad magic, version, header size, flags; an entry of an unknown
// kind or a bad size; a stack with no frames, too many, or an id defined twice; a sample of an
// unknown kind; more entries than a closed header counts). A file the recorder did not close
// is read up to its last whole entry, one shorter than its closed header says up to its end,
// and `warning` says so; samples naming no stack of the file are dropped and counted.
struct StacksFile {
  StacksInfo info;
  std::vector<Stack> stacks;
  std::vector<StackSample> samples; // in file order
  std::string warning;              // empty: none
};
StacksFile read_stacks(const std::filesystem::path &file);

} // namespace vprof::trace
