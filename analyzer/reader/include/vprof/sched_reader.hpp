// The kernel wake-up file of a trace directory (sched.vpk, runtime/include/vprof/sched_format.h):
// validation, and its records as kernel events of the traced threads on the run's time line
// (docs/analyzer.md, "Kernel waits"). Trace::open reads it; the engine merges the events.
#pragma once

#include <vprof/sched_format.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vprof::trace {

// The decoded header of one sched.vpk and what reading it found.
struct SchedInfo {
  std::filesystem::path file;
  std::uint32_t host = 0;    // index into Trace::hosts(): the directory that held it
  std::uint32_t version = 0; // the header's: 3 has waker system calls, room and data wake-ups
  std::uint32_t root_pid = 0;
  bool closed = false; // VPROF_SCHED_CLOSED: the recorder ended normally
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t header_records = 0; // the header's count (final only when closed)
  std::uint64_t records = 0;        // whole records read
  std::uint64_t lost = 0;           // records the kernel could not hand over
  std::uint64_t unknown_tid = 0;    // records about a task that is no traced thread
};

// One scheduler event of a traced thread (a stream), on the run's time line.
// KernelEvent::flags beside VPROF_SCHED_WAKER_IRQ: the waking task belongs to the recorded
// process tree (it slept, woke or ran as a subject of the file) but wrote no stream records.
inline constexpr std::uint8_t kWakerUnrecorded = 1u << 7;

struct KernelEvent {
  std::int64_t t = 0;      // run ticks
  std::uint8_t kind = 0;   // enum vprof_sched_kind
  std::uint8_t flags = 0;  // VPROF_SCHED_WAKER_IRQ, _WAKE_ROOM, _WAKE_DATA, kWakerUnrecorded
  std::int32_t waker = -1; // WAKE: the stream (thread) of the waking task; -1: not traced
  std::uint32_t other = 0; // the record's other tid (WAKE: the waker, 0 the idle task)
  std::uint32_t other_pid = 0;
  // SLEEP: the system call it blocked in; WAKE (version 3): the one the waker was in; -1 none
  std::int32_t syscall = -1;
};

// A sched.vpk read and validated: its header and its whole records in file order.
// Throws TraceError naming the file, the offset and the problem for a corrupt file (bad
// magic, version, sizes, flags; a record of an unknown kind; more records than a closed
// header counts). A file the recorder did not close, or one shorter than its closed header
// says, is read up to its last whole record (up to its first empty record when not closed)
// and `warning` says so, naming the file.
struct SchedFile {
  SchedInfo info;
  std::vector<vprof_sched_record> records; // NEXT_RUNS expanded (below)
  std::string warning;                     // empty: none
};
SchedFile read_sched(const std::filesystem::path &file);

// Puts before each SLEEP with VPROF_SCHED_NEXT_RUNS the RUN it stands for (the thread it names
// as `other`, switched in at the same time on the same CPU, after the sleeper), so that readers
// see every sleep's RUN whichever form the recorder wrote. The SLEEP keeps its flag.
void expand_next_runs(std::vector<vprof_sched_record> &records);

// The wait kind a kernel sleep in system call `nr` (x86-64 numbers; -1: none) stands for:
// "futex", "poll", "read", "write", "io", "sleep", "child" or "kernel" (anything else).
const char *sched_wait_kind(std::int32_t nr);

} // namespace vprof::trace
