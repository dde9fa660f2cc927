// `vprof analyze [DIR...]`: critical paths, variance trees and ranked factors of a trace.
#include "cmds/common.hpp"
#include "commands.hpp"
#include "pipeline.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"

#include <algorithm>
#include <filesystem>
#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> g_analyze_dirs;
int g_analyze_iteration = -1;
bool g_analyze_json = false;

} // namespace

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

} // namespace vprof::driver
