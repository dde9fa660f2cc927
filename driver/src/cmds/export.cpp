// `vprof export`: the instrumented tree (--out, --diff), or a trace as folded stacks,
// a Perfetto trace or Parquet rows (--folded, --perfetto, --parquet).
#include "cmds/common.hpp"
#include "commands.hpp"
#include "pipeline.hpp"
#include "process.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/instrumenter.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>

#include <unistd.h>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

std::string g_export_out;
bool g_export_diff = false;
int g_export_iteration = -1;
std::string g_export_folded;
std::string g_export_perfetto;
std::string g_export_label;
std::vector<std::uint64_t> g_export_intervals;
std::string g_export_parquet;
std::string g_export_host;
std::string g_export_run;
std::vector<std::string> g_export_dirs;

// The trace the exports read: the directories given, else that of --iteration, else of the
// newest analysed iteration.
std::vector<fs::path> export_trace_dirs(const Context &ctx, ws::Database &db) {
  std::vector<fs::path> dirs;
  for (const auto &d : g_export_dirs) {
    dirs.push_back(fs::absolute(d));
    if (!fs::is_directory(dirs.back()))
      throw InputError(dirs.back().string() + ": no such trace directory");
  }
  if (!dirs.empty())
    return dirs;
  int it = g_export_iteration;
  if (it < 0) {
    auto history = analyzer::iteration_history(db);
    it = history.empty() ? require_plan(db) : history.back().iteration;
  }
  fs::path dir = iteration_trace_dir(ctx.cfg, it);
  if (!fs::is_directory(dir))
    throw InputError(dir.string() + ": no trace of iteration " + std::to_string(it) +
                     " (run `vprof loop`, or pass --iteration)");
  return {dir};
}

// The directories as one string for messages.
std::string dir_names(const std::vector<fs::path> &dirs) {
  std::string names;
  for (const auto &d : dirs)
    names += (names.empty() ? "" : ", ") + d.string();
  return names;
}

// `vprof export --folded`: the variance tree of one interval type as folded stacks.
int export_folded(Context &ctx) {
  auto db = open_workspace(ctx, false);
  const std::vector<fs::path> dirs = export_trace_dirs(ctx, *db);
  ctx.progress("analyzing " + dir_names(dirs));
  analyzer::AnalysisResult res;
  try {
    res = analyzer::analyze(dirs, db.get(), analyze_options(ctx.cfg));
  } catch (const trace::TraceError &e) {
    throw InputError(e.what());
  }
  const analyzer::GroupResult *group = nullptr;
  for (const auto &g : res.groups)
    if (g.label == g_export_label)
      group = &g;
  if (!group)
    throw InputError(dir_names(dirs) + ": no intervals labelled '" + g_export_label + "'");
  analyzer::FoldedStacks fs = analyzer::render_folded(res, *group);
  fs::path out = fs::absolute(g_export_folded);
  fs::path neg = out.parent_path() / (out.stem().string() + ".negative" + out.extension().string());
  write_file(out, fs.positive);
  if (!fs.negative.empty())
    write_file(neg, fs.negative);
  else
    fs::remove(neg);
  char line[256];
  std::snprintf(line, sizeof line,
                "folded stacks: %.6g ns^2 positive, %.6g ns^2 negative, Var(L) = %.6g ns^2",
                fs.positive_ns2, fs.negative_ns2, group->latency.var_ns2);
  ctx.progress(line);
  *ctx.out << out.string() << "\n";
  if (!fs.negative.empty())
    *ctx.out << neg.string() << "\n";
  return kExitOk;
}

// `vprof export --perfetto`: the critical paths of chosen intervals as a Perfetto trace.
int export_perfetto(Context &ctx) {
  auto db = open_workspace(ctx, false);
  const std::vector<fs::path> dirs = export_trace_dirs(ctx, *db);
  analyzer::PerfettoOptions po;
  po.intervals = g_export_intervals;
  po.label = g_export_label;
  ctx.progress("analyzing " + dir_names(dirs));
  analyzer::PerfettoSummary sum;
  try {
    sum = analyzer::export_perfetto(dirs, db.get(), fs::absolute(g_export_perfetto), po);
  } catch (const trace::TraceError &e) {
    throw InputError(e.what());
  } catch (const analyzer::AnalysisError &e) {
    throw InputError(e.what());
  }
  ctx.progress("perfetto: " + std::to_string(sum.intervals) + " intervals (" +
               std::to_string(sum.slowest) + " slowest, " + std::to_string(sum.median) +
               " median, " + std::to_string(sum.chosen) + " chosen), " +
               std::to_string(sum.path_pieces) + " critical-path stretches, " +
               std::to_string(sum.flows) + " wake-up edges (flows), " + std::to_string(sum.slices) +
               " slices on " + std::to_string(sum.tracks) + " tracks, " +
               std::to_string(sum.bytes) + " bytes");
  *ctx.out << fs::absolute(g_export_perfetto).string() << "\n";
  return kExitOk;
}

// The project venv's python, which has vprof_fleet and pyarrow: $VPROF_PYTHON, else
// $VPROF_VENV/bin/python, else the source tree's .venv (what cmake/install-venv.sh makes).
// Throws (exit 1) naming the fix when none of them can import both.
fs::path fleet_python() {
  fs::path py = fs::path(VPROF_SOURCE_DIR) / ".venv" / "bin" / "python";
  if (const char *env = std::getenv("VPROF_PYTHON"); env && *env)
    py = env;
  else if (const char *venv = std::getenv("VPROF_VENV"); venv && *venv)
    py = fs::path(venv) / "bin" / "python";
  if (fs::exists(py)) {
    ProcessOptions po;
    po.log = fs::temp_directory_path() / ("vprof-fleet-check." + std::to_string(::getpid()));
    ProcessResult r = run_process({py.string(), "-c", "import vprof_fleet, pyarrow"}, po);
    fs::remove(*po.log);
    if (r.exit_code == 0)
      return py;
  }
  throw std::runtime_error(py.string() +
                           ": no Python with vprof_fleet and pyarrow (the project venv); "
                           "run `bash cmake/install-venv.sh` in the vprof source tree, or set "
                           "VPROF_PYTHON to such an interpreter");
}

// `vprof export --parquet`: the analyzer writes the rows (TSV, exact doubles) into a
// scratch folder, python/vprof_fleet turns them into Parquet with the host and run columns.
int export_parquet(Context &ctx) {
  fs::path python = fleet_python();
  auto db = open_workspace(ctx, false);
  const std::vector<fs::path> dirs = export_trace_dirs(ctx, *db);
  fs::path out = fs::absolute(g_export_parquet);
  std::string run = g_export_run.empty() ? dirs.front().filename().string() : g_export_run;
  fs::create_directories(out);
  fs::path rows = out / ".vprof-rows";
  ctx.progress("analyzing " + dir_names(dirs));
  analyzer::RowsSummary sum;
  try {
    sum = analyzer::export_rows(dirs, db.get(), rows);
  } catch (const trace::TraceError &e) {
    throw InputError(e.what());
  } catch (const analyzer::AnalysisError &e) {
    throw InputError(e.what());
  }
  // --host names every row; else each interval's host is the one its trace recorded where
  // it began, and this machine's name stands in where a trace (of an older runtime) has none
  std::vector<std::string> cmd = {python.string(), "-m",    "vprof_fleet", "convert", rows.string(),
                                  out.string(),    "--run", run,           "--quiet"};
  std::string host = g_export_host;
  if (host.empty()) {
    char name[256] = {};
    cmd.insert(cmd.end(), {"--default-host", ::gethostname(name, sizeof name - 1) == 0 && name[0]
                                                 ? std::string(name)
                                                 : std::string("localhost")});
    host = sum.hostname.empty() ? cmd.back() : sum.hostname;
  } else {
    cmd.insert(cmd.end(), {"--host", host});
  }
  ProcessResult r = run_process(cmd, ProcessOptions{});
  fs::remove_all(rows);
  if (r.exit_code != 0)
    throw std::runtime_error("vprof_fleet convert failed (" + r.describe() + ")");
  ctx.progress(
      "parquet: " + std::to_string(sum.intervals) + " intervals, " + std::to_string(sum.rows) +
      " interval x node rows, " + std::to_string(sum.nodes) + " tree nodes (host " + host +
      (dirs.size() > 1 && g_export_host.empty() ? " and others" : "") + ", run " + run + ")");
  *ctx.out << (out / "intervals.parquet").string() << "\n"
           << (out / "node_times.parquet").string() << "\n";
  return kExitOk;
}

} // namespace

void setup_export(CLI::App &sub, Context &ctx) {
  add_plan_flags(sub, ctx);
  add_analyze_flags(sub, ctx);
  auto *out = sub.add_option("--out", g_export_out, "write the instrumented tree into this folder");
  auto *diff = sub.add_flag("--diff", g_export_diff, "print a unified diff instead");
  auto *folded = sub.add_option("--folded", g_export_folded,
                                "write the variance tree as folded stacks into this file");
  auto *perfetto = sub.add_option("--perfetto", g_export_perfetto,
                                  "write the critical paths as a Perfetto trace into this file");
  auto *parquet = sub.add_option(
      "--parquet", g_export_parquet,
      "write the per-interval node times (the variance trees' whole input) as Parquet files "
      "into this folder (needs the project venv: bash cmake/install-venv.sh)");
  out->excludes(diff);
  folded->excludes(out)->excludes(diff);
  perfetto->excludes(out)->excludes(diff)->excludes(folded);
  parquet->excludes(out)->excludes(diff)->excludes(folded)->excludes(perfetto);
  sub.add_option("--host", g_export_host,
                 "with --parquet: the host column of every row (default: the host name the trace "
                 "recorded where each interval began)");
  sub.add_option("--run", g_export_run,
                 "with --parquet: the run column (default: the trace folder's name, iter-N)");
  sub.add_option("trace_dir", g_export_dirs,
                 "with --folded, --perfetto or --parquet: the trace directories to read (default: "
                 "the iteration's); several: one per host, merged as `vprof analyze DIR...` "
                 "merges them");
  sub.add_option("--intervals", g_export_intervals,
                 "with --perfetto: the interval ids to export (default: the slowest, p99 and "
                 "above, and as many median ones)")
      ->delimiter(',');
  sub.add_option("--iteration", g_export_iteration,
                 "plan iteration (default: the newest; --folded, --perfetto: the newest analysed)");
  sub.add_option("--label", g_export_label,
                 "with --folded or --perfetto: the interval type (default: all intervals)");
  sub.footer(
      "Instruments every file holding planned functions, per the plan, without touching\n"
      "the originals: either a copy of the tree (--out) or a diff on stdout (--diff).\n"
      "--folded FILE analyses the iteration's trace again and writes its variance tree as\n"
      "folded stacks (`root;caller;callee value`, value = the frame's own Cov(B, L) in ns^2,\n"
      "all lines adding up to Var(L)) for flamegraph.pl, inferno or speedscope; frames with a\n"
      "negative contribution go to FILE's sibling <stem>.negative<ext>, as absolute values.\n"
      "--perfetto FILE writes the critical paths of the slowest intervals (p99 and above) and\n"
      "as many median ones as a Perfetto trace (open it at ui.perfetto.dev): per thread the\n"
      "probed functions and waits as slices, per interval its critical path with a flow arrow\n"
      "along every wake-up edge it takes.\n"
      "--parquet DIR writes DIR/intervals.parquet (host, run, label, interval, latency_ns) and\n"
      "DIR/node_times.parquet (per interval x node: the node's path, frames, place, its time\n"
      "T and body time B on the critical path), the whole input of the variance trees, for\n"
      "SQL engines (DuckDB, Spark SQL, Trino; the SQL ships in python/vprof_fleet, see\n"
      "docs/fleet.md). Rows of many hosts and runs concatenate: --host and --run name them.\n"
      "Parquet is written by pyarrow in the project venv (bash cmake/install-venv.sh).\n"
      "The three read the iteration's trace, or the trace directories given after the options:\n"
      "several (one per host) are merged on one time line as `vprof analyze DIR...` merges\n"
      "them (docs/multihost.md); --parquet's host column names the host each interval began on.");
}

int run_export(Context &ctx) {
  if (!g_export_dirs.empty() && g_export_parquet.empty() && g_export_folded.empty() &&
      g_export_perfetto.empty())
    throw UsageError("trace directories go with --folded, --perfetto or --parquet (--out and "
                     "--diff export the instrumented sources)");
  if (!g_export_parquet.empty())
    return export_parquet(ctx);
  if (!g_export_folded.empty())
    return export_folded(ctx);
  if (!g_export_perfetto.empty())
    return export_perfetto(ctx);
  if (g_export_out.empty() && !g_export_diff)
    throw UsageError(
        "give --out <folder>, --diff, --folded <file>, --perfetto <file> or --parquet <folder>");
  instr::CompileDb cdb = load_compile_db(ctx);
  auto db = open_workspace(ctx, false);
  instr::ExportOptions eo;
  eo.iteration = g_export_iteration >= 0 ? g_export_iteration : require_plan(*db);
  eo.parse.quiet = ctx.quiet;
  if (g_export_diff)
    eo.diff = ctx.out;
  else
    eo.out_dir = fs::absolute(g_export_out);
  int failed = 0;
  int n = instr::export_tree(*db, cdb, eo, &failed);
  ctx.progress("instrumented " + std::to_string(n) + " file(s)" +
               (g_export_diff ? std::string() : " into " + eo.out_dir.string()) +
               (failed ? "; " + std::to_string(failed) + " failed" : ""));
  return failed ? kExitFailed : kExitOk;
}

} // namespace vprof::driver
