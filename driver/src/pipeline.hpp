// The steps of one profiling iteration that the driver runs itself: building the
// target through the vprof compiler wrappers and running the workload with tracing on.
#pragma once

#include "commands.hpp"
#include "process.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace vprof::ws {
class Database;
}
namespace vprof::instr {
class CompileDb;
struct Diagnostic;
} // namespace vprof::instr

namespace vprof::driver {

// Paths of the tools the driver hands to the user's build.
struct Tools {
  std::filesystem::path cc;  // vprof-cc
  std::filesystem::path cxx; // vprof-c++
};

// The directory of the running vprof executable (empty if /proc/self/exe cannot be read):
// where the installed layout keeps its sibling tools.
std::filesystem::path self_dir();

// Finds vprof-cc / vprof-c++: next to this executable (installed layout), else where the
// build tree put them. Throws InputError naming what is missing.
Tools find_tools();

// The iteration of the newest plan, or -1 when `vprof init` has not made one.
int current_iteration(ws::Database &db);

// Trace directory and logs of one iteration.
std::filesystem::path iteration_trace_dir(const Config &cfg, int iteration);
std::filesystem::path iteration_log(const Config &cfg, int iteration, const char *step);

// Runs cfg.build with CC/CXX pointing at the wrappers, VPROF_WORKSPACE and
// VPROF_ITERATION set; output goes to a log whose tail is shown on failure. Before it, the
// objects compiled for another plan are made older than everything, so the user's own
// build rebuilds exactly those (`cdb`: the compile database, for planned files this
// workspace never compiled; may be null). After it, every planned file must have been
// compiled for this plan with its probes: a file that fell back to its original source or
// that the build did not compile stops the loop, naming the file and the reason (a warning
// with allow_fallback). Throws std::runtime_error on failure (exit code 1 of the driver).
void build_iteration(const Context &ctx, const Tools &tools, ws::Database &db,
                     const instr::CompileDb *cdb, int iteration);

// One line for the loop's output naming what the rewrite refused in the objects built for
// `iteration` (instr::BuildCheck::refused, non-empty): how many planned functions and call
// sites could not be probed, the first `shown` with file:line and the reason, then "and N
// more; `vprof instrument FILE` lists all".
std::string refusals_line(const Config &cfg, const std::vector<instr::Diagnostic> &refused,
                          int iteration, std::size_t shown = 3);

// The notes ($TMPDIR/vprof-unusable-trace-dir.<pid>, written by the runtime) of processes
// that could not write `trace_dir` (or a directory below it) since `since`, as sentences;
// removes them. Notes about other directories are other runs' (a concurrent loop, a test)
// and stay.
std::vector<std::string> take_unusable_trace_dir_notes(const std::filesystem::path &trace_dir,
                                                       std::filesystem::file_time_type since);

class KernelWakeups;

// Runs cfg.workload with VPROF_TRACE_DIR set to a fresh iteration trace directory and
// VPROF_MAX_THREAD_MB to cfg.stream_cap_mb, with the kernel wake-up recorder beside it when
// `kernel` (may be null) can record. Returns that directory; a run that dropped records at
// the stream cap is said ("stream cap: ..."). Throws std::runtime_error when the workload
// fails or wrote no trace, EnvironmentError when kernel_wakeups = "on" cannot be honoured.
std::filesystem::path run_iteration(const Context &ctx, int iteration,
                                    KernelWakeups *kernel = nullptr);
// Holds the units the trace's processes registered against the plan of `iteration`: a
// trace written by a binary built for another plan or workspace is refused (throws).
void check_trace_plan(const Context &ctx, ws::Database &db, int iteration,
                      const std::filesystem::path &trace_dir);

} // namespace vprof::driver
