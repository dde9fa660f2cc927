// `vprof run`, `vprof config`, `vprof clean`: the subcommands that need neither the
// instrumenter nor the analyzer.
#include "commands.hpp"
#include "kernel_wakeups.hpp"
#include "pipeline.hpp"
#include "process.hpp"
#include "stream_cap.hpp"

#include "vprof/trace_reader.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>

namespace vprof::driver {
namespace fs = std::filesystem;

// ---- vprof config ---------------------------------------------------------------

void setup_config(CLI::App &sub, Context &ctx) {
  add_plan_flags(sub, ctx);
  add_analyze_flags(sub, ctx);
  add_loop_flags(sub, ctx);
  add_record_flags(sub, ctx);
  sub.footer("Prints every key of vprof.toml with its effective value; flags override the file.");
}

namespace {
std::string quoted(const std::string &s) {
  std::ostringstream os;
  os << std::quoted(s);
  return os.str();
}
} // namespace

int run_config(Context &ctx) {
  const Config &c = ctx.cfg;
  std::ostream &o = *ctx.out;
  o << "# project root: " << c.root.string() << "\n";
  o << "# configuration file: " << (c.config_file.empty() ? "(none)" : c.config_file.string())
    << "\n";
  for (const auto &k : config_keys()) {
    std::string name = k.name;
    o << "\n# " << k.help << "\n" << name << " = ";
    if (name == "compile_commands")
      o << quoted(c.compile_commands.string());
    else if (name == "roots") {
      o << "[";
      for (size_t i = 0; i < c.roots.size(); ++i)
        o << (i ? ", " : "") << quoted(c.roots[i]);
      o << "]";
    } else if (name == "depth")
      o << c.depth;
    else if (name == "k")
      o << c.k;
    else if (name == "iterations")
      o << c.iterations;
    else if (name == "build")
      o << quoted(c.build);
    else if (name == "workload")
      o << quoted(c.workload);
    else if (name == "bootstrap")
      o << c.bootstrap;
    else if (name == "seed")
      o << c.seed;
    else if (name == "min_intervals")
      o << c.min_intervals;
    else if (name == "prune")
      o << c.prune;
    else if (name == "allow_fallback")
      o << (c.allow_fallback ? "true" : "false");
    else if (name == "budget")
      o << c.budget;
    else if (name == "final_budget")
      o << c.final_budget;
    else if (name == "record_ns")
      o << c.record_ns;
    else if (name == "keep_traces")
      o << (c.keep_traces ? "true" : "false");
    else if (name == "ranking")
      o << quoted(c.ranking);
    else if (name == "tail_percentile")
      o << c.tail_percentile;
    else if (name == "label")
      o << quoted(c.label);
    else if (name == "exclude_labels") {
      o << "[";
      for (size_t i = 0; i < c.exclude_labels.size(); ++i)
        o << (i ? ", " : "") << quoted(c.exclude_labels[i]);
      o << "]";
    } else if (name == "kernel_wakeups")
      o << quoted(c.kernel_wakeups);
    else if (name == "sched_ring_mb")
      o << c.sched_ring_mb;
    else if (name == "sample_hz")
      o << c.sample_hz;
    else if (name == "stream_cap_mb") {
      o << c.stream_cap_mb;
      if (!c.stream_cap_from.empty())
        o << "  # from " << c.stream_cap_from;
    }
    o << "\n";
  }
  return kExitOk;
}

// ---- vprof run ------------------------------------------------------------------

namespace {
std::vector<std::string> g_run_argv;
std::string g_run_trace_dir;
bool g_run_keep = false;
} // namespace

void setup_run(CLI::App &sub, Context &ctx) {
  add_record_flags(sub, ctx);
  sub.add_option("--trace-dir", g_run_trace_dir,
                 "where the trace goes (default: .vprof/traces/manual)");
  sub.add_flag("--keep", g_run_keep, "do not empty an existing trace directory first");
  sub.add_option("command", g_run_argv, "the program and its arguments, after --")
      ->required()
      ->expected(-1);
  sub.footer("Example: vprof run -- ./server --port 8080\n"
             "Sets VPROF_TRACE_DIR for the program (linked with libvprof_rt, e.g. built by\n"
             "vprof-cc) and reports where the trace went. The kernel wake-up recorder\n"
             "(vprof-sched) records beside it unless kernel_wakeups = \"off\"; the program\n"
             "runs the same whether it can or not. Exit code: the program's own.");
}

int run_run(Context &ctx) {
  fs::path dir =
      g_run_trace_dir.empty() ? ctx.cfg.traces_dir() / "manual" : fs::absolute(g_run_trace_dir);
  if (!g_run_keep && fs::exists(dir))
    fs::remove_all(dir);
  fs::create_directories(dir);
  ProcessOptions opts;
  opts.env["VPROF_TRACE_DIR"] = dir.string();
  opts.env["VPROF_MAX_THREAD_MB"] = stream_cap_env(ctx.cfg);
  KernelWakeups kernel(ctx);
  if (kernel.prepare())
    opts.before_exec = [&](int pid) { kernel.attach(pid, dir); };
  ctx.progress("running " + g_run_argv[0] + ", trace in " + dir.string());
  const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  ProcessResult r = run_process(g_run_argv, opts);
  const std::string kernel_status = kernel.finish();
  size_t streams = 0;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".vpt")
      ++streams;
  for (const auto &note : take_unusable_trace_dir_notes(dir, started))
    ctx.progress("warning: " + note +
                 ": the trace is incomplete (make the directory writable "
                 "for that user, or set VPROF_TRACE_DIR)");
  ctx.progress(g_run_argv[0] + " ended with " + r.describe() + " after " +
               std::to_string(r.seconds).substr(0, 5) + " s; " + std::to_string(streams) +
               " thread stream(s) in " + dir.string() + "; " + kernel_status);
  if (StreamDrops drops = count_stream_drops(dir); drops.records > 0)
    ctx.progress("warning: " + stream_cap_line(drops, ctx.cfg));
  if (streams == 0)
    ctx.progress("no trace was written: is the program linked with libvprof_rt (built with "
                 "vprof-cc / vprof-c++)?");
  return r.exit_code;
}

// ---- vprof dump -----------------------------------------------------------------

namespace {
std::string g_dump_target;
bool g_dump_headers = false;
} // namespace

void setup_dump(CLI::App &sub, Context &) {
  sub.add_option("trace", g_dump_target,
                 "a trace directory or one .vpt stream (default: the newest under .vprof/traces)");
  sub.add_flag("--headers-only", g_dump_headers, "only the stream headers");
  sub.footer("Prints every record as: pid tid ns-since-run-start kind argument, streams in\n"
             "(pid, sequence) order. A corrupt or truncated trace is reported with the file and\n"
             "byte offset (exit 3).");
}

fs::path trace_target(const Context &ctx, const std::string &given) {
  fs::path target = given;
  if (target.empty()) {
    fs::path newest;
    fs::file_time_type when{};
    if (fs::is_directory(ctx.cfg.traces_dir()))
      for (const auto &e : fs::directory_iterator(ctx.cfg.traces_dir()))
        if (e.is_directory() && (newest.empty() || e.last_write_time() > when)) {
          newest = e.path();
          when = e.last_write_time();
        }
    if (newest.empty())
      throw InputError("no trace under " + ctx.cfg.traces_dir().string() + "; name one");
    target = newest;
  }
  if (!fs::exists(target))
    throw InputError(target.string() + ": no such trace");
  return target;
}

int run_dump(Context &ctx) {
  const fs::path target = trace_target(ctx, g_dump_target);
  std::fflush(stdout);
  try {
    trace::dump(target, stdout, g_dump_headers);
  } catch (const trace::TraceError &e) {
    std::fflush(stdout);
    throw InputError(e.what());
  }
  std::fflush(stdout);
  return kExitOk;
}

// ---- vprof clean ----------------------------------------------------------------

namespace {
bool g_clean_all = false;
}

void setup_clean(CLI::App &sub, Context &) {
  sub.add_flag("--all", g_clean_all, "also remove the workspace database (.vprof/ entirely)");
}

int run_clean(Context &ctx) {
  fs::path target = g_clean_all ? ctx.cfg.workspace_dir() : ctx.cfg.traces_dir();
  if (!fs::exists(target)) {
    ctx.progress("nothing to remove at " + target.string());
    return kExitOk;
  }
  auto n = fs::remove_all(target);
  ctx.progress("removed " + target.string() + " (" + std::to_string(n) + " files)");
  return kExitOk;
}

} // namespace vprof::driver
