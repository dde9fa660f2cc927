// The driver's settings: vprof.toml keys, each of which a command-line flag can override.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vprof::driver {

// A user mistake in the configuration or on the command line (exit code 2).
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A problem with the user's input data: missing workspace, unreadable compile database,
// corrupt trace (exit code 3).
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The machine cannot do what the configuration requires, e.g. kernel_wakeups = "on" where
// the kernel wake-up recorder cannot record (exit code 5).
class EnvironmentError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Every key of vprof.toml. Relative paths are relative to the project root (the folder
// holding vprof.toml, or the current directory without one).
struct Config {
  std::filesystem::path root;             // project root (absolute)
  std::filesystem::path config_file;      // empty when none was read
  std::filesystem::path compile_commands; // compile_commands.json (or its folder)
  std::vector<std::string> roots;         // functions to start from; empty: annotated ones
  int depth = 0;                          // call-graph depth of the first plan below roots
  int k = 3;                              // top-k factors expanded per iteration
  int iterations = 10;                    // iteration budget of `vprof loop`
  std::string build;                      // shell command that builds the target
  std::string workload;                   // shell command that runs the workload
  int bootstrap = 200;                    // bootstrap resamples for share intervals
  std::uint64_t seed = 1;                 // bootstrap seed
  int min_intervals = 30;                 // fewer intervals in a run is an error
  double prune = 0.01;         // final plan: places below this fraction dropped (0: none)
  bool allow_fallback = false; // a planned file built uninstrumented only warns
  double budget = 0.10;        // exploration plans: probe cost per interval / mean latency
  double final_budget = 0.02;  // the final plan's
  double record_ns = 40;       // the cost of one trace record the budgets are counted in
  bool keep_traces = false;    // keep the traces of every iteration (default: the last two)
  std::string ranking = "net"; // "net" | "vprofiler" (analyzer::Ranking)
  double tail_percentile = 99; // the tail view: intervals with L >= p_q (analyzer)
  // the groups `vprof loop` expands on: one interval label's, or every label's but these;
  // neither: all intervals (planner::loop_groups)
  std::string label;
  std::vector<std::string> exclude_labels;
  // the kernel wake-up recorder beside the workload: "auto" (when it can record; one
  // warning when it cannot), "on" (an error when it cannot), "off" (never started)
  std::string kernel_wakeups = "auto";
  int sched_ring_mb = 16; // the recorder's ring buffer between kernel and recorder, MiB
  int sample_hz = 997;    // the recorder's on-CPU stack samples per second and CPU (0: none)
  // the runtime's per-thread stream cap in MiB (0: none), passed to the workload as
  // VPROF_MAX_THREAD_MB; `stream_cap_from` says where a value other than the file's came from
  std::uint64_t stream_cap_mb = 256;
  std::string stream_cap_from; // empty: vprof.toml or the default

  std::filesystem::path workspace_dir() const { return root / ".vprof"; }
  std::filesystem::path database() const { return workspace_dir() / "vprof.db"; }
  std::filesystem::path traces_dir() const { return workspace_dir() / "traces"; }
  std::filesystem::path resolve(const std::filesystem::path &p) const;
};

// The names of the keys, with their help text, for `vprof config --help` and the docs.
struct ConfigKey {
  const char *name;
  const char *help;
};
const std::vector<ConfigKey> &config_keys();

// Reads `file` (TOML) into `cfg`. Unknown keys and wrong types are errors naming the
// file, line and key. Throws UsageError.
void load_config(const std::filesystem::path &file, Config &cfg);

// `label` and `exclude_labels` together are a UsageError (the loop expands on one or the
// other).
void check_labels(const Config &cfg);

// Takes VPROF_MAX_THREAD_MB from vprof's own environment into cfg.stream_cap_mb when it is
// set: it wins over vprof.toml (scripts that set it before the key existed keep working),
// a command-line flag over both. Throws UsageError naming the variable when it is not a
// whole number.
void apply_environment(Config &cfg);

// Finds vprof.toml: `explicit_file` if given, else ./vprof.toml, else nothing.
std::optional<std::filesystem::path>
find_config(const std::optional<std::filesystem::path> &explicit_file);

} // namespace vprof::driver
