// What several profiling subcommands share: opening the workspace and the compile
// database, number formats, the planner's and the analyzer's options, and analysing a run
// into the workspace with its reports.
#include "cmds/common.hpp"
#include "pipeline.hpp"

#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

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

} // namespace

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
planner::ExpandOptions expand_options(const Config &cfg, int max_iterations) {
  planner::ExpandOptions o;
  o.k = cfg.k;
  o.max_iterations = max_iterations >= 0 ? max_iterations : cfg.iterations;
  o.budget = budget_of(cfg);
  o.label = cfg.label;
  o.exclude_labels = cfg.exclude_labels;
  return o;
}

} // namespace vprof::driver
