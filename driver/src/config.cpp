// Reading vprof.toml with toml++ into the driver's Config.
#include "config.hpp"

#include <toml++/toml.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

namespace vprof::driver {
namespace fs = std::filesystem;

const std::vector<ConfigKey> &config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"compile_commands", "path of compile_commands.json (or its folder) for `vprof init`"},
      {"roots", "functions the first plan starts from (default: those with interval annotations)"},
      {"depth", "call-graph depth below the roots in the first plan (default 0: the roots alone, "
                "the one plan no run has priced; every later plan is priced from the last run)"},
      {"k", "top-k factors whose functions are expanded each iteration (default 3)"},
      {"iterations", "iteration budget of `vprof loop` (default 10: an expansion goes one or two "
                     "call levels down; a cause nine levels below an event loop's root and the "
                     "climb to it fit)"},
      {"build", "shell command that builds the program; CC/CXX point at the vprof wrappers"},
      {"workload", "shell command that runs the workload; VPROF_TRACE_DIR is set"},
      {"bootstrap", "bootstrap resamples for the confidence intervals of shares (default 200)"},
      {"seed", "random seed of the bootstrap (default 1)"},
      {"min_intervals", "a run with fewer intervals is an error (default 30)"},
      {"prune", "after the loop stops, a final plan keeps only the functions whose places reach "
                "this fraction of Var(L), and one more run measures it (default 0.01; 0: none)"},
      {"allow_fallback", "true: a planned file that the build compiled from its original source "
                         "(not instrumented) or did not compile for the plan is a warning, not "
                         "an error that stops the loop (default false)"},
      {"budget", "what the probes of an exploration plan may cost per interval, as a fraction "
                 "of the mean interval latency (default 0.10); the planner refuses what would "
                 "pass it"},
      {"final_budget", "the same for the final plan (default 0.02)"},
      {"record_ns", "the cost of one trace record the budgets are counted in, in ns (default "
                    "40: benchmarks/RESULTS.md)"},
      {"ranking", "how factors and places are ranked: \"net\" (default: net share / "
                  "contribution, the deeper term first along one chain of the observed calling "
                  "contexts) or \"vprofiler\" (VProfiler's static specificity x share)"},
      {"tail_percentile", "the tail view's percentile q: per place, how much longer the "
                          "intervals with latency at or above p_q spend there than the "
                          "average interval (default 99; in (0, 100))"},
      {"label", "drive the loop by one interval type: it expands on the group of intervals "
                "with this label (VPROF_INTERVAL_LABEL) only (default \"\": all intervals)"},
      {"exclude_labels", "drive the loop by every interval type but these labels (a "
                         "benchmark's own admin commands): it expands on the groups of the "
                         "other labels (default []: all intervals; not with `label`)"},
      {"keep_traces", "true: keep the trace of every iteration (default false: a loop keeps "
                      "the newest two analysed iterations' traces)"},
      {"kernel_wakeups", "record the kernel's wake-ups of the workload's threads beside it "
                         "(vprof-sched), so that waits outside pthread calls get their waker: "
                         "\"auto\" (default: when the machine allows it, else one warning), "
                         "\"on\" (an error when it cannot), \"off\""},
      {"sched_ring_mb", "the kernel wake-up recorder's ring buffer in MiB (default 16); "
                        "records lost to a full ring are counted in sched.vpk"},
      {"sample_hz", "the kernel recorder's on-CPU stack samples per second on each CPU (default "
                    "997; 0: only the sleepers' and wakers' stacks); `vprof stacks` prints them"},
      {"stream_cap_mb", "the size limit of one thread's trace stream in MiB, passed to the "
                        "workload as VPROF_MAX_THREAD_MB (default 256; 0: none); records past "
                        "it are dropped and the run says so"},
  };
  return keys;
}

fs::path Config::resolve(const fs::path &p) const {
  if (p.empty() || p.is_absolute())
    return p;
  return (root / p).lexically_normal();
}

namespace {

std::string where(const fs::path &file, const toml::node &n) {
  std::ostringstream os;
  os << file.string() << ":" << n.source().begin.line;
  return os.str();
}

template <class T>
T get(const fs::path &file, const toml::key &key, const toml::node &n, const char *type) {
  if (auto v = n.value<T>())
    return *v;
  throw UsageError(where(file, n) + ": key '" + std::string(key.str()) + "' must be " + type);
}

int get_positive(const fs::path &file, const toml::key &key, const toml::node &n, int min,
                 int max = 1'000'000) {
  auto v = get<int64_t>(file, key, n, "an integer");
  if (v < min || v > max)
    throw UsageError(where(file, n) + ": key '" + std::string(key.str()) + "' must be between " +
                     std::to_string(min) + " and " + std::to_string(max) + ", not " +
                     std::to_string(v));
  return static_cast<int>(v);
}

} // namespace

void load_config(const fs::path &file, Config &cfg) {
  toml::table tbl;
  try {
    tbl = toml::parse_file(file.string());
  } catch (const toml::parse_error &e) {
    std::ostringstream os;
    os << file.string() << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
       << e.description();
    throw UsageError(os.str());
  }
  cfg.config_file = fs::absolute(file);
  cfg.root = cfg.config_file.parent_path();
  std::set<std::string> known;
  for (const auto &k : config_keys())
    known.insert(k.name);
  for (const auto &[key, node] : tbl) {
    std::string name(key.str());
    if (!known.count(name))
      throw UsageError(where(file, node) + ": unknown key '" + name +
                       "' (known: compile_commands, roots, depth, k, iterations, build, workload, "
                       "bootstrap, seed, min_intervals, prune, allow_fallback, budget, "
                       "final_budget, record_ns, ranking, label, exclude_labels, keep_traces, "
                       "kernel_wakeups, sched_ring_mb, sample_hz, stream_cap_mb, tail_percentile)");
    if (name == "compile_commands")
      cfg.compile_commands = get<std::string>(file, key, node, "a string");
    else if (name == "roots") {
      const toml::array *arr = node.as_array();
      if (!arr)
        throw UsageError(where(file, node) + ": key 'roots' must be an array of strings");
      cfg.roots.clear();
      for (const auto &el : *arr) {
        auto s = el.value<std::string>();
        if (!s)
          throw UsageError(where(file, el) + ": every entry of 'roots' must be a string");
        cfg.roots.push_back(*s);
      }
    } else if (name == "label") {
      cfg.label = get<std::string>(file, key, node, "a string");
    } else if (name == "exclude_labels") {
      const toml::array *arr = node.as_array();
      if (!arr)
        throw UsageError(where(file, node) + ": key 'exclude_labels' must be an array of strings");
      cfg.exclude_labels.clear();
      for (const auto &el : *arr) {
        auto s = el.value<std::string>();
        if (!s || s->empty())
          throw UsageError(where(file, el) +
                           ": every entry of 'exclude_labels' must be a non-empty string");
        cfg.exclude_labels.push_back(*s);
      }
    } else if (name == "depth")
      cfg.depth = get_positive(file, key, node, 0);
    else if (name == "k")
      cfg.k = get_positive(file, key, node, 1);
    else if (name == "iterations")
      cfg.iterations = get_positive(file, key, node, 1);
    else if (name == "build")
      cfg.build = get<std::string>(file, key, node, "a string");
    else if (name == "workload")
      cfg.workload = get<std::string>(file, key, node, "a string");
    else if (name == "bootstrap")
      cfg.bootstrap = get_positive(file, key, node, 0);
    else if (name == "seed")
      cfg.seed = static_cast<uint64_t>(get<int64_t>(file, key, node, "an integer"));
    else if (name == "min_intervals")
      cfg.min_intervals = get_positive(file, key, node, 1);
    else if (name == "allow_fallback")
      cfg.allow_fallback = get<bool>(file, key, node, "true or false");
    else if (name == "ranking") {
      auto v = get<std::string>(file, key, node, "a string");
      if (v != "net" && v != "vprofiler")
        throw UsageError(where(file, node) + ": key 'ranking' must be \"net\" or \"vprofiler\"");
      cfg.ranking = v;
    } else if (name == "keep_traces")
      cfg.keep_traces = get<bool>(file, key, node, "true or false");
    else if (name == "kernel_wakeups") {
      auto v = node.value<std::string>();
      if (!v || (*v != "auto" && *v != "on" && *v != "off"))
        throw UsageError(where(file, node) +
                         ": key 'kernel_wakeups' must be \"auto\", \"on\" or \"off\"");
      cfg.kernel_wakeups = *v;
    } else if (name == "sched_ring_mb") {
      cfg.sched_ring_mb = get_positive(file, key, node, 1, 4096);
    } else if (name == "sample_hz") {
      cfg.sample_hz = get_positive(file, key, node, 0, 10000);
    } else if (name == "stream_cap_mb")
      cfg.stream_cap_mb = static_cast<std::uint64_t>(get_positive(file, key, node, 0));
    else if (name == "budget" || name == "final_budget" || name == "record_ns") {
      auto v = node.value<double>();
      const bool share = name != "record_ns";
      if (!v || !(*v > 0) || (share && *v > 1))
        throw UsageError(where(file, node) + ": key '" + name + "' must be a number in " +
                         (share ? "(0, 1]" : "(0, inf)"));
      (name == "budget"         ? cfg.budget
       : name == "final_budget" ? cfg.final_budget
                                : cfg.record_ns) = *v;
    } else if (name == "tail_percentile") {
      auto v = node.value<double>();
      if (!v || !(*v > 0 && *v < 100))
        throw UsageError(where(file, node) +
                         ": key 'tail_percentile' must be a number in (0, 100), e.g. 99");
      cfg.tail_percentile = *v;
    } else if (name == "prune") {
      auto v = node.value<double>();
      if (!v || !(*v >= 0 && *v < 1))
        throw UsageError(where(file, node) + ": key 'prune' must be a number in [0, 1)");
      cfg.prune = *v;
    }
  }
}

void check_labels(const Config &cfg) {
  if (!cfg.label.empty() && !cfg.exclude_labels.empty())
    throw UsageError("`label` (\"" + cfg.label +
                     "\") and `exclude_labels` both set: the loop expands on one label's "
                     "intervals or on all but the excluded ones; set one of them");
}

void apply_environment(Config &cfg) {
  const char *mb = std::getenv("VPROF_MAX_THREAD_MB");
  if (!mb || !*mb)
    return;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(mb, &end, 10);
  if (errno || !end || *end != '\0' || *mb < '0' || *mb > '9')
    throw UsageError("VPROF_MAX_THREAD_MB=\"" + std::string(mb) +
                     "\" in the environment: it must be a whole number of MiB (0: no cap); "
                     "stream_cap_mb in vprof.toml says the same");
  cfg.stream_cap_mb = v;
  cfg.stream_cap_from = "VPROF_MAX_THREAD_MB in the environment";
}

std::optional<fs::path> find_config(const std::optional<fs::path> &explicit_file) {
  if (explicit_file) {
    if (!fs::exists(*explicit_file))
      throw UsageError(explicit_file->string() + ": no such configuration file");
    return *explicit_file;
  }
  if (fs::exists("vprof.toml"))
    return fs::path("vprof.toml");
  return std::nullopt;
}

} // namespace vprof::driver
