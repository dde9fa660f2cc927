// The profiling subcommands: init, instrument, export, analyze, report, expand, loop.
// Each is a thin front-end over vprof::instr and vprof::analyzer.
#include "commands.hpp"
#include "kernel_wakeups.hpp"
#include "pipeline.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/instrumenter.hpp"
#include "vprof/planner.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

// Opens the workspace of the project; `create` allows a new one (only `vprof init`).
std::unique_ptr<ws::Database> open_workspace(const Context &ctx, bool create) {
  fs::path db = ctx.cfg.database();
  if (!create && !fs::exists(db))
    throw InputError("no workspace at " + db.string() + ": run `vprof init` in " +
                     ctx.cfg.root.string() + " first (or pass -C <project>)");
  try {
    return std::make_unique<ws::Database>(db);
  } catch (const ws::Error &e) {
    throw InputError(e.what());
  }
}

int require_plan(ws::Database &db) {
  int it = current_iteration(db);
  if (it < 0)
    throw InputError("the workspace has no plan: run `vprof init` first");
  return it;
}

instr::CompileDb load_compile_db(const Context &ctx) {
  if (ctx.cfg.compile_commands.empty())
    throw UsageError(
        "no compile database: set `compile_commands` in vprof.toml or pass "
        "--compile-commands (CMake writes one with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; "
        "for make, run it under `bear --`)");
  fs::path p = ctx.cfg.resolve(ctx.cfg.compile_commands);
  try {
    return instr::CompileDb::load(p);
  } catch (const std::exception &e) {
    throw InputError(e.what());
  }
}

std::string ms(double ns) {
  char buf[64];
  if (ns >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  return buf;
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

fs::path report_path(const Config &cfg, int iteration, const char *ext) {
  return cfg.workspace_dir() / "reports" / ("iter-" + std::to_string(iteration) + ext);
}

void write_file(const fs::path &p, const std::string &text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out)
    throw std::runtime_error(p.string() + ": cannot write");
}

planner::Budget budget_of(const Config &cfg) {
  planner::Budget b;
  b.exploration = cfg.budget;
  b.final_share = cfg.final_budget;
  b.record_ns = cfg.record_ns;
  // the runtime's cap as the workload gets it (stream_cap_mb, 16-byte records; 0: none)
  b.stream_cap_records = (cfg.stream_cap_mb << 20) / 16;
  return b;
}

analyzer::AnalyzeOptions analyze_options(const Config &cfg) {
  analyzer::AnalyzeOptions o;
  o.bootstrap_samples = cfg.bootstrap;
  o.seed = cfg.seed;
  o.ranking = cfg.ranking == "vprofiler" ? analyzer::Ranking::VProfiler : analyzer::Ranking::Net;
  o.tail_percentile = cfg.tail_percentile;
  return o;
}

// One line summing up an analysis: intervals, latency, top place.
std::string summary_line(const analyzer::AnalysisResult &res) {
  const auto &g = res.groups.front();
  std::string line = std::to_string(res.intervals) + " intervals, mean " + ms(g.latency.mean_ns) +
                     ", p99 " + ms(g.latency.p99_ns) + ", CV " +
                     std::to_string(g.latency.cv).substr(0, 4);
  if (!g.places.empty())
    line += "; top place " + g.places.front().name + " (" + pct(g.places.front().contribution) +
            " of Var(L))";
  return line;
}

// What `vprof loop` prints at the end: the answer for all intervals (places, waits,
// factors, what-if), one line per interval type, and where the whole report is.
std::string summary_text(const Context &ctx, const analyzer::AnalysisResult &res, int iteration) {
  analyzer::RenderOptions ro;
  ro.all_groups = false;
  ro.tree = false;
  ro.max_factors = 10;
  std::ostringstream out;
  out << analyzer::render_text(res, ro);
  if (res.groups.size() > 1) {
    out << "by interval type (top place by score):\n";
    for (std::size_t i = 1; i < res.groups.size(); ++i) {
      const auto &g = res.groups[i];
      out << "  " << g.label << ": n=" << g.latency.count << ", mean " << ms(g.latency.mean_ns)
          << ", p99 " << ms(g.latency.p99_ns);
      if (!g.places.empty())
        out << "; " << g.places.front().name << " (" << pct(g.places.front().contribution)
            << " of its Var(L))";
      out << "\n";
    }
  }
  out << "\nthe whole report (every interval type, the variance tree): "
      << report_path(ctx.cfg, iteration, ".txt").string() << " (`vprof report`)\n";
  out << "the HTML report with the variance flame graph: "
      << report_path(ctx.cfg, iteration, ".html").string() << " (`vprof report --html FILE`)\n";
  // the last line: the analyzer's answer for all intervals, as every report prints it
  out << "answer: " << analyzer::answer_sentence(res.groups.front()) << "\n";
  return out.str();
}

// The reports name trace directories relative to the project root (they are read in the
// project, and a report moved or checked in keeps no machine's absolute path); the workspace
// keeps the absolute ones it stored.
void relative_to_project(const fs::path &root, analyzer::AnalysisResult &res) {
  auto rel = [&](const std::string &dir) {
    std::error_code ec;
    fs::path r = fs::relative(dir, root, ec);
    return ec || r.empty() || *r.begin() == ".." ? dir : r.string();
  };
  for (auto &h : res.hosts)
    h.dir = rel(h.dir);
  if (res.hosts.empty()) {
    res.trace_dir = rel(res.trace_dir);
    return;
  }
  res.trace_dir.clear();
  for (const auto &h : res.hosts)
    res.trace_dir += (res.trace_dir.empty() ? "" : ", ") + h.dir;
}

// Analyzes `trace_dirs` (one, or one per host merged on one time line) as a run of
// `iteration`, stores it and writes the reports.
analyzer::AnalysisResult analyze_and_store(const Context &ctx, ws::Database &db,
                                           const std::vector<fs::path> &trace_dirs, int iteration) {
  analyzer::AnalysisResult res;
  try {
    res = analyzer::analyze(trace_dirs, &db, analyze_options(ctx.cfg));
  } catch (const trace::TraceError &e) {
    throw InputError(e.what());
  }
  const std::string trace_dir = res.trace_dir;
  for (const auto &w : res.warnings)
    ctx.progress("warning: " + w);
  if (res.groups.empty() || res.intervals < static_cast<std::uint64_t>(ctx.cfg.min_intervals))
    throw std::runtime_error(
        trace_dir + ": " + std::to_string(res.intervals) +
        " finished intervals, fewer than min_intervals = " + std::to_string(ctx.cfg.min_intervals) +
        ": does the workload run annotated code (VPROF_INTERVAL_BEGIN/END)?");
  analyzer::store(db, res, iteration);
  relative_to_project(ctx.cfg.root, res);
  write_file(report_path(ctx.cfg, iteration, ".txt"), analyzer::render_text(res));
  analyzer::JsonOptions compact;
  compact.full = false; // the whole tree is in the workspace; the file keeps what is read
  write_file(report_path(ctx.cfg, iteration, ".json"), analyzer::render_json(res, compact));
  write_file(report_path(ctx.cfg, iteration, ".summary.txt"), summary_text(ctx, res, iteration));
  analyzer::HtmlOptions ho;
  ho.title =
      "vprof: " + ctx.cfg.root.filename().string() + ", iteration " + std::to_string(iteration);
  ho.history = analyzer::iteration_history(db);
  write_file(report_path(ctx.cfg, iteration, ".html"), analyzer::render_html(res, ho));
  return res;
}

// ---- vprof init -----------------------------------------------------------------

void setup_init(CLI::App &sub, Context &ctx) {
  add_plan_flags(sub, ctx);
  sub.footer("Creates .vprof/vprof.db, parses every translation unit of the compile database\n"
             "once to build the static call graph (with heights), and writes the first plan:\n"
             "the roots (default: functions with interval annotations) and their callees down\n"
             "to --depth. Running it again rescans and replaces the first plan.");
}

int run_init(Context &ctx) {
  instr::CompileDb cdb = load_compile_db(ctx);
  auto db = open_workspace(ctx, true);
  db->set_meta("project_root", ctx.cfg.root.string());
  ctx.progress("scanning " + std::to_string(cdb.commands().size()) + " translation unit(s)");
  instr::ParseOptions po;
  po.quiet = ctx.quiet;
  instr::ScanStats st = instr::scan(*db, cdb, po);
  ctx.progress("call graph: " + std::to_string(st.functions) + " functions, " +
               std::to_string(st.calls) + " call edges, height " + std::to_string(st.max_height) +
               (st.failed ? ", " + std::to_string(st.failed) + " TU(s) failed to parse" : ""));
  if (st.tus == st.failed)
    throw InputError("no translation unit of " + ctx.cfg.compile_commands.string() +
                     " could be parsed");
  planner::FirstPlanOptions plan;
  plan.roots = ctx.cfg.roots;
  plan.depth = ctx.cfg.depth;
  plan.iteration = 0;
  int n;
  try {
    n = planner::first_plan(*db, plan);
  } catch (const planner::PlanError &e) {
    throw UsageError(e.what());
  }
  // A new first plan starts a new history: later plans, the analyses, traces and reports
  // belong to the old one, and a new identity makes every object compiled for it stale.
  ws::delete_plans_after(*db, 0);
  int old_runs = analyzer::discard_results(*db);
  std::error_code ec;
  fs::remove_all(ctx.cfg.traces_dir(), ec);
  fs::remove_all(ctx.cfg.workspace_dir() / "reports", ec);
  instr::new_workspace_identity(*db);
  if (old_runs > 0)
    ctx.progress("a new history: the " + std::to_string(old_runs) +
                 " analysed run(s) of the previous one, their traces and reports are discarded");
  ctx.progress("plan 0: " + std::to_string(n) + " function(s) (" +
               (ctx.cfg.roots.empty() ? std::string("annotated functions") : "roots") + ", depth " +
               std::to_string(ctx.cfg.depth) + ")");
  *ctx.out << "workspace " << ctx.cfg.database().string() << ": " << st.functions << " functions, "
           << st.calls << " calls, plan 0 has " << n << " functions\n";
  return st.failed ? kExitFailed : kExitOk;
}

// ---- vprof instrument -----------------------------------------------------------

std::string g_instr_file;
int g_instr_iteration = -1;

void setup_instrument(CLI::App &sub, Context &ctx) {
  add_plan_flags(sub, ctx);
  sub.add_option("file", g_instr_file, "a source file of the compile database")->required();
  sub.add_option("--iteration", g_instr_iteration, "plan iteration (default: the newest)");
  sub.footer("Prints the instrumented text of one source file (what vprof-cc compiles) to\n"
             "stdout; the file itself is never modified. Refused rewrites are listed on stderr.");
}

int run_instrument(Context &ctx) {
  instr::CompileDb cdb = load_compile_db(ctx);
  auto db = open_workspace(ctx, false);
  int it = g_instr_iteration >= 0 ? g_instr_iteration : require_plan(*db);
  const instr::CompileCommand *cmd = cdb.find(fs::absolute(g_instr_file));
  if (!cmd)
    throw InputError(g_instr_file + ": not in the compile database " +
                     ctx.cfg.compile_commands.string());
  instr::ParseOptions po;
  po.quiet = ctx.quiet;
  instr::RewriteResult r = instr::rewrite(*db, *cmd, it, po);
  if (!r.ok)
    throw InputError(g_instr_file + ": " + r.error);
  if (!r.changed) {
    ctx.progress(g_instr_file + ": nothing of plan " + std::to_string(it) + " is defined here");
    std::ifstream in(cmd->file);
    *ctx.out << in.rdbuf();
    return kExitOk;
  }
  *ctx.out << r.output;
  ctx.progress(g_instr_file + ": " + std::to_string(r.body_sites) + " body and " +
               std::to_string(r.call_sites) + " call-site probes, " +
               std::to_string(r.skipped.size()) + " refused");
  return kExitOk;
}

// ---- vprof export ---------------------------------------------------------------

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

// ---- vprof analyze --------------------------------------------------------------

std::vector<std::string> g_analyze_dirs;
int g_analyze_iteration = -1;
bool g_analyze_json = false;

void setup_analyze(CLI::App &sub, Context &ctx) {
  add_analyze_flags(sub, ctx);
  sub.add_option("trace_dir", g_analyze_dirs,
                 "trace directory (default: the newest iteration's, .vprof/traces/iter-N); "
                 "several: one per host or run, merged on one time line (docs/multihost.md)");
  sub.add_option("--iteration", g_analyze_iteration,
                 "the plan iteration the trace belongs to (default: the newest)");
  sub.add_flag("--json", g_analyze_json, "print the report as JSON");
  sub.footer("Builds every interval's critical path across threads, processes and hosts, the\n"
             "variance trees and the ranked factors; stores them in the workspace and prints the\n"
             "report. Works without a workspace too (sites are then named by number). Several\n"
             "trace directories are aligned by their clock samples and message edges.");
}

int run_analyze(Context &ctx) {
  std::unique_ptr<ws::Database> db;
  if (fs::exists(ctx.cfg.database()))
    db = open_workspace(ctx, false);
  int it = g_analyze_iteration;
  if (it < 0 && db)
    it = std::max(0, current_iteration(*db));
  std::vector<fs::path> dirs;
  for (const auto &d : g_analyze_dirs)
    dirs.push_back(fs::absolute(d));
  if (dirs.empty())
    dirs.push_back(iteration_trace_dir(ctx.cfg, std::max(it, 0)));
  std::string names;
  for (const auto &dir : dirs) {
    if (!fs::is_directory(dir))
      throw InputError(dir.string() + ": no such trace directory");
    names += (names.empty() ? "" : ", ") + dir.string();
  }
  ctx.progress("analyzing " + names);
  analyzer::AnalysisResult res;
  if (db) {
    res = analyze_and_store(ctx, *db, dirs, std::max(it, 0));
  } else {
    try {
      res = analyzer::analyze(dirs, nullptr, analyze_options(ctx.cfg));
    } catch (const trace::TraceError &e) {
      throw InputError(e.what());
    }
  }
  ctx.progress(summary_line(res));
  *ctx.out << (g_analyze_json ? analyzer::render_json(res) : analyzer::render_text(res));
  return kExitOk;
}

// ---- vprof report ---------------------------------------------------------------

int g_report_iteration = -1;
bool g_report_json = false;
std::string g_report_html;
CLI::Option *g_report_html_opt = nullptr;

void setup_report(CLI::App &sub, Context &) {
  sub.add_option("--iteration", g_report_iteration, "iteration (default: the newest analysed)");
  auto *json = sub.add_flag("--json", g_report_json, "JSON instead of text");
  g_report_html_opt =
      sub.add_option("--html", g_report_html,
                     "the HTML report (variance flame graph, sortable tables, latency histogram, "
                     "iteration history): copied to FILE, or its path printed without FILE")
          ->expected(0, 1);
  g_report_html_opt->excludes(json);
  sub.footer("Prints the stored report of an analysed iteration: latency statistics, the\n"
             "variance tree, the ranked factor table (share of Var(L) with bootstrap interval,\n"
             "specificity, score) and what-if estimates. The HTML report is one self-contained\n"
             "file (no network): open it in any browser.");
}

int run_report(Context &ctx) {
  int it = g_report_iteration;
  if (it < 0) {
    auto db = open_workspace(ctx, false);
    auto history = analyzer::iteration_history(*db);
    if (history.empty())
      throw InputError("nothing analysed yet: run `vprof analyze` or `vprof loop`");
    it = history.back().iteration;
  }
  const bool html = g_report_html_opt && g_report_html_opt->count() > 0;
  fs::path p = report_path(ctx.cfg, it, html ? ".html" : g_report_json ? ".json" : ".txt");
  if (!fs::exists(p))
    throw InputError(p.string() + ": no " + (html ? "HTML " : "") + "report for iteration " +
                     std::to_string(it) +
                     (html ? " (analysed before HTML reports existed: run "
                             "`vprof analyze --iteration N` again)"
                           : ""));
  if (html && g_report_html.empty()) {
    *ctx.out << p.string() << "\n";
    return kExitOk;
  }
  if (html) {
    fs::path dst = fs::absolute(g_report_html);
    std::error_code ec;
    fs::copy_file(p, dst, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw InputError(dst.string() + ": cannot write: " + ec.message());
    *ctx.out << dst.string() << "\n";
    return kExitOk;
  }
  std::ifstream in(p);
  if (!in)
    throw InputError(p.string() + ": cannot read");
  *ctx.out << in.rdbuf();
  return kExitOk;
}

// ---- vprof expand ---------------------------------------------------------------

int g_expand_iteration = -1;

void setup_expand(CLI::App &sub, Context &ctx) {
  add_loop_flags(sub, ctx);
  sub.add_option("--iteration", g_expand_iteration, "the analysed iteration (default: newest)");
  sub.footer("Adds the callees of the top-k factors' functions (for a wait factor: the waker's\n"
             "functions) to the next plan, as many as the probe budget allows: a hot callee\n"
             "stays timed at its call sites (docs/planner.md). Exit 0 when a new plan was\n"
             "written, 1 when the stopping rule holds (the reason is printed).");
}

// One line on what the budget did to an expansion.
std::string budget_line(const planner::ExpandResult &ex) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "probes: %.0f records per interval measured, %.0f predicted, budget %.0f",
                ex.measured_records, ex.predicted_records, ex.budget_records);
  std::string line = buf;
  if (ex.path_factor > 1.05) {
    std::snprintf(buf, sizeof buf,
                  " (counted on an interval's critical path: x%.1f the records written per "
                  "interval, the probes of the other intervals of its batch)",
                  ex.path_factor);
    line += buf;
  }
  if (ex.calibration > 1.05) {
    std::snprintf(buf, sizeof buf, " (estimates x%.1f: the last plan cost more than predicted)",
                  ex.calibration);
    line += buf;
  }
  if (!ex.trimmed.empty())
    line += "; " + std::to_string(ex.trimmed.size()) + " costly function(s) dropped to fit";
  if (!ex.trimmed_for_lead.empty())
    line += " (" + std::to_string(ex.trimmed_for_lead.size()) +
            " of them carrying less than the place expanded first, " + ex.lead +
            ", to make room for it)";
  if (!ex.body_only.empty())
    line += "; " + std::to_string(ex.body_only.size()) +
            " outer frame(s) probed for their body alone (their calls would not fit)";
  if (!ex.refused.empty())
    line += "; " + std::to_string(ex.refused.size()) +
            " candidate(s) refused (hot callees stay timed at their call sites)";
  return line;
}

// `max_iterations` < 0: the configured iteration budget.
planner::ExpandOptions expand_options(const Config &cfg, int max_iterations = -1) {
  planner::ExpandOptions o;
  o.k = cfg.k;
  o.max_iterations = max_iterations >= 0 ? max_iterations : cfg.iterations;
  o.budget = budget_of(cfg);
  o.label = cfg.label;
  o.exclude_labels = cfg.exclude_labels;
  return o;
}

int run_expand(Context &ctx) {
  check_labels(ctx.cfg);
  auto db = open_workspace(ctx, false);
  int it = g_expand_iteration >= 0 ? g_expand_iteration : require_plan(*db);
  planner::ExpandResult ex;
  try {
    ex = planner::expand(*db, it, expand_options(ctx.cfg));
  } catch (const planner::PlanError &e) {
    throw InputError(e.what());
  }
  if (ex.stop) {
    *ctx.out << "stop: " << ex.reason << "\n";
    return kExitFailed;
  }
  ctx.progress(budget_line(ex));
  *ctx.out << "plan " << ex.next_iteration << ": " << ex.added.size() << " function(s) added ("
           << ws::plan_size(*db, ex.next_iteration) << " in all)\n";
  return kExitOk;
}

// ---- vprof build ----------------------------------------------------------------

int g_build_iteration = -1;

void setup_build(CLI::App &sub, Context &ctx) {
  add_loop_flags(sub, ctx);
  sub.add_option("--iteration", g_build_iteration,
                 "the plan to build (default: the newest, e.g. the final plan after a loop)");
  sub.footer("Builds the program with the probes of one plan through the `build` command of\n"
             "vprof.toml, as `vprof loop` does (objects compiled for another plan are rebuilt,\n"
             "a planned file that could not be instrumented is an error), without running the\n"
             "workload: for repeated measurements of a plan, or to compare plans side by side\n"
             "(benchmarks/real/*/ab.py).");
}

int run_build(Context &ctx) {
  auto db = open_workspace(ctx, false);
  int it = g_build_iteration >= 0 ? g_build_iteration : require_plan(*db);
  if (ws::plan_size(*db, it) == 0)
    throw InputError("the workspace has no plan " + std::to_string(it));
  Tools tools = find_tools();
  std::optional<instr::CompileDb> cdb;
  if (!ctx.cfg.compile_commands.empty())
    cdb = load_compile_db(ctx);
  ctx.progress("building plan " + std::to_string(it) + " (" +
               std::to_string(ws::plan_size(*db, it)) + " planned function(s))");
  build_iteration(ctx, tools, *db, cdb ? &*cdb : nullptr, it);
  *ctx.out << "built plan " << it << "\n";
  return kExitOk;
}

// ---- vprof loop -----------------------------------------------------------------

bool g_loop_continue = false;

void setup_loop(CLI::App &sub, Context &ctx) {
  add_loop_flags(sub, ctx);
  add_analyze_flags(sub, ctx);
  add_record_flags(sub, ctx);
  sub.add_flag("--continue", g_loop_continue,
               "after a measured final plan whose answer is a function with callees no plan "
               "held: explore below it (from the last exploration iteration, with a new "
               "iteration budget of `iterations`), then measure a new final plan");
  sub.footer("Repeats build -> run workload -> analyze -> expand without prompts until the\n"
             "top-k factors are stable, every top factor is a leaf, the probe budget admits\n"
             "nothing more, or the iteration budget is spent; every plan stays within --budget\n"
             "(probe cost per interval / mean latency). Then the final plan keeps the answer's\n"
             "chain (the deepest place any iteration found) and, within --final-budget, the\n"
             "functions whose places reach --prune of Var(L); one more run measures it (not\n"
             "counted in the iteration budget). Prints one progress line per step, then for all "
             "intervals the\n"
             "places (where the variance comes from), the waits and the top factors, one line\n"
             "per interval type, and the path of the whole report. Resumes from the\n"
             "workspace: an iteration already analysed is not run again; after a final\n"
             "plan, --continue explores below an answer whose callees were never planned.");
}

// An iteration's answer: its best-ranked place carrying this share (FinalOptions).
const double kAnswerShare = planner::FinalOptions{}.answer_share;

bool iteration_analysed(ws::Database &db, int it) { return ws::latest_run(db, it).has_value(); }

// Old traces take gigabytes on a real server: a loop keeps the newest two analysed
// iterations' traces unless keep_traces is set.
void remove_old_traces(const Context &ctx, int analysed) {
  if (ctx.cfg.keep_traces)
    return;
  std::error_code ec;
  for (int old = 0; old < analysed - 1; ++old)
    fs::remove_all(iteration_trace_dir(ctx.cfg, old), ec);
}

// What the final plan keeps and why, in one progress line.
std::string final_line(const planner::FinalResult &fr, const std::string &why, double prune) {
  std::string line = why + "; final plan " + std::to_string(fr.next_iteration) + " keeps " +
                     std::to_string(fr.kept) + " function(s), drops " + std::to_string(fr.dropped) +
                     " whose places stay below " + pct(prune) + " of Var(L)";
  if (fr.answer.iteration >= 0)
    line += "; the answer's chain (" + fr.answer.name + ", " + pct(fr.answer.contribution) +
            " in iteration " + std::to_string(fr.answer.iteration) +
            ") is kept: " + std::to_string(fr.answer.chain.size()) + " function(s)";
  if (!fr.dropped_for_cost.empty())
    line +=
        "; " + std::to_string(fr.dropped_for_cost.size()) + " more dropped for the final budget";
  return line;
}

// A loop whose last run lost records at the stream cap says so beside its stop reason: the
// cap, not the reason named, limited what that run could show.
std::string stream_cap_note(const Context &ctx, ws::Database &db, int iteration,
                            const std::string &reason) {
  auto run = iteration >= 0 ? ws::latest_run(db, iteration) : std::nullopt;
  if (!run || run->dropped == 0 || reason.find("stream cap") != std::string::npos)
    return "";
  return "; its run hit the stream cap (" + std::to_string(run->dropped) +
         " records dropped, stream_cap_mb = " + std::to_string(ctx.cfg.stream_cap_mb) +
         "): raise stream_cap_mb in vprof.toml or shorten the workload";
}

// The groups the loop expands on must exist in the run of `it` (`label`, `exclude_labels`):
// a label no interval carries is the user's mistake, named with the labels that exist.
void check_loop_groups(const Context &ctx, ws::Database &db, int it) {
  if (ctx.cfg.label.empty() && ctx.cfg.exclude_labels.empty())
    return;
  auto run = ws::latest_run(db, it);
  if (!run)
    return;
  try {
    planner::loop_groups(db, *run, ctx.cfg.label, ctx.cfg.exclude_labels);
  } catch (const planner::PlanError &e) {
    throw UsageError(
        (ctx.cfg.config_file.empty() ? std::string("settings") : ctx.cfg.config_file.string()) +
        ": " + e.what());
  }
}

// The answer a measured final plan left unexplored below, in words, or "" (the stop line's
// hint, or the line that resumes).
std::string unexplored_text(ws::Database &db, const planner::Unexplored &un) {
  if (un.callees.empty())
    return "";
  std::string names;
  for (std::size_t i = 0; i < un.callees.size() && i < 3; ++i)
    if (auto row = ws::function_row(db, un.callees[i]))
      names += (names.empty() ? "" : ", ") + row->name;
  if (un.callees.size() > 3)
    names += ", ...";
  const bool answer = un.answer.iteration == un.iteration && un.answer.name == un.name;
  return (answer ? "the answer " : "the place ") + un.name + " (" + pct(un.contribution) +
         " of Var(L) in iteration " + std::to_string(un.iteration) + ") calls " +
         std::to_string(un.callees.size()) + " function(s) no plan held (" + names + ")";
}

int run_loop(Context &ctx) {
  check_labels(ctx.cfg);
  auto db = open_workspace(ctx, false);
  int it = require_plan(*db);
  Tools tools = find_tools();
  // the compile database names the objects of planned files this workspace never compiled
  std::optional<instr::CompileDb> cdb;
  if (!ctx.cfg.compile_commands.empty())
    cdb = load_compile_db(ctx);
  std::string stop_reason;
  analyzer::AnalysisResult last;
  bool have_last = false;
  int last_it = -1;
  KernelWakeups kernel(ctx); // one per invocation: "cannot record" is said once
  // the iteration budget's end: `iterations`, or past a final plan the loop continued from
  int budget_end = ctx.cfg.iterations;
  bool continued = false;
  std::string explored; // why exploration stopped before the final plan (this invocation)
  // an interrupted --continue resumes with the budget it had: `iterations` after the newest
  // final plan below the current one
  if (g_loop_continue)
    for (int f = it - 1; f >= 0; --f)
      if (ws::is_final_plan(*db, f)) {
        budget_end = std::max(budget_end, f + 1 + ctx.cfg.iterations);
        break;
      }
  for (;;) {
    if (!iteration_analysed(*db, it)) {
      if (it >= budget_end && !ws::is_final_plan(*db, it)) {
        stop_reason = "iteration budget reached";
        break;
      }
      ctx.progress("iteration " + std::to_string(it) + ": building with " +
                   std::to_string(ws::plan_size(*db, it)) + " planned function(s)");
      build_iteration(ctx, tools, *db, cdb ? &*cdb : nullptr, it);
      ctx.progress("iteration " + std::to_string(it) + ": running the workload");
      fs::path dir = run_iteration(ctx, it, &kernel);
      check_trace_plan(ctx, *db, it, dir);
      last = analyze_and_store(ctx, *db, {dir}, it);
      remove_old_traces(ctx, it);
      have_last = true;
      last_it = it;
      ctx.progress("iteration " + std::to_string(it) + ": " + summary_line(last));
    } else {
      ctx.progress("iteration " + std::to_string(it) + ": already analysed, resuming");
      last_it = it;
    }
    check_loop_groups(ctx, *db, it);
    if (ws::is_final_plan(*db, it)) {
      const planner::Unexplored un = planner::unexplored_below_answer(*db, it, kAnswerShare);
      const std::string below = unexplored_text(*db, un);
      if (!g_loop_continue || continued || below.empty() || un.source < 0) {
        stop_reason = "final plan measured";
        if (!explored.empty())
          stop_reason += " (exploration stopped: " + explored + ")";
        if (!below.empty() && !continued)
          stop_reason += "; " + below + ": `vprof loop --continue` explores below it";
        else if (g_loop_continue && !continued)
          stop_reason +=
              "; nothing to continue: " +
              (un.answer.iteration < 0 ? std::string("no iteration found an answer")
                                       : "the callees of every function whose place carried " +
                                             pct(kAnswerShare) + " of Var(L) were planned already");
        break;
      }
      // Exploration resumes from the last exploration run, as if its iteration budget had
      // been larger; the new plan follows the final one, with a new budget after it.
      continued = true;
      budget_end = it + 1 + ctx.cfg.iterations;
      planner::ExpandOptions eo = expand_options(ctx.cfg, budget_end);
      eo.write_iteration = it + 1;
      eo.resume = true;
      planner::ExpandResult ex = planner::expand(*db, un.source, eo);
      if (ex.stop) {
        stop_reason = ex.reason + " (continuing from iteration " + std::to_string(un.source) +
                      " below the final plan's answer)";
        break;
      }
      ctx.progress("iteration " + std::to_string(it) + ": continuing: " + below +
                   "; expanded iteration " + std::to_string(un.source) + "'s run by " +
                   std::to_string(ex.added.size()) + " function(s) into plan " +
                   std::to_string(ex.next_iteration) + " (" + budget_line(ex) + ")");
      it = ex.next_iteration;
      continue;
    }
    planner::ExpandResult ex = planner::expand(*db, it, expand_options(ctx.cfg, budget_end));
    if (ex.stop && ctx.cfg.prune > 0) {
      planner::FinalOptions fo;
      fo.threshold = ctx.cfg.prune;
      fo.budget = budget_of(ctx.cfg);
      planner::FinalResult fr = planner::final_plan(*db, it, fo);
      if (fr.written) {
        ctx.progress("iteration " + std::to_string(it) + ": " +
                     final_line(fr, ex.reason, ctx.cfg.prune));
        explored = ex.reason;
        it = fr.next_iteration;
        continue;
      }
    }
    if (ex.stop) {
      stop_reason = ex.reason;
      break;
    }
    ctx.progress("iteration " + std::to_string(it) + ": expanded " +
                 std::to_string(ex.added.size()) + " function(s) into plan " +
                 std::to_string(ex.next_iteration) + " (" + budget_line(ex) + ")");
    it = ex.next_iteration;
  }
  ctx.progress("stopped after iteration " + std::to_string(last_it) + ": " + stop_reason +
               stream_cap_note(ctx, *db, last_it, stop_reason));
  if (have_last) {
    *ctx.out << summary_text(ctx, last, last_it);
  } else if (last_it >= 0) {
    std::ifstream in(report_path(ctx.cfg, last_it, ".summary.txt"));
    if (!in)
      in.open(report_path(ctx.cfg, last_it, ".txt"));
    *ctx.out << in.rdbuf();
  }
  return kExitOk;
}

} // namespace

// Registration (called from commands.cpp).
const std::vector<Command> &pipeline_commands() {
  static const std::vector<Command> table = {
      {"init", "create the workspace, scan the call graph, write the first plan", setup_init,
       run_init},
      {"instrument", "print one source file instrumented per the plan", setup_instrument,
       run_instrument},
      {"export", "write the instrumented tree to a folder, or print it as a diff", setup_export,
       run_export},
      {"analyze", "critical paths, variance trees and ranked factors of a trace", setup_analyze,
       run_analyze},
      {"report", "print the stored report of an analysed iteration", setup_report, run_report},
      {"expand", "add the top-k factors' callees to the next plan", setup_expand, run_expand},
      {"build", "build the program with one plan's probes (default: the newest)", setup_build,
       run_build},
      {"loop", "build, run, analyze, expand until the top factors are stable", setup_loop,
       run_loop},
  };
  return table;
}

} // namespace vprof::driver
