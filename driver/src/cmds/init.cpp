// `vprof init`: creates the workspace, scans the call graph and writes the first plan.
#include "cmds/common.hpp"
#include "commands.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/instrumenter.hpp"
#include "vprof/planner.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <filesystem>
#include <fstream>
#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

// The skipped units, one "file: reason" a line, in .vprof/skipped-units.txt (removed when
// none was skipped), and the summary's clause naming the file ("" when none).
std::string skipped_units_note(const Context &ctx, const instr::ScanStats &st) {
  const fs::path list = ctx.cfg.workspace_dir() / "skipped-units.txt";
  std::error_code ec;
  if (st.skipped.empty()) {
    fs::remove(list, ec);
    return "";
  }
  std::ofstream out(list);
  for (const auto &u : st.skipped)
    out << u.file << ": " << u.reason << "\n";
  const int unparsed = st.failed - st.crashed;
  std::string why;
  if (unparsed)
    why = std::to_string(unparsed) + " did not parse";
  if (st.crashed)
    why += (why.empty() ? "" : ", ") + std::to_string(st.crashed) + " crashed the scan";
  return "; " + std::to_string(st.failed) + " of " + std::to_string(st.tus) +
         " translation unit(s) skipped (" + why + "), listed in " + list.string() +
         ": their functions are not in the call graph";
}

} // namespace

void setup_init(CLI::App &sub, Context &ctx) {
  add_plan_flags(sub, ctx);
  sub.footer("Creates .vprof/vprof.db, parses every translation unit of the compile database\n"
             "once to build the static call graph (with heights), and writes the first plan:\n"
             "the roots (default: functions with interval annotations) and their callees down\n"
             "to --depth. Running it again rescans and replaces the first plan.\n"
             "A translation unit that does not parse, or crashes the scan, is named and skipped;\n"
             "the last line counts them and names the file that lists them (exit 0: the\n"
             "workspace holds every other unit; exit 3 when no unit parsed).");
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
               std::to_string(st.calls) + " call edges, height " + std::to_string(st.max_height));
  if (st.tus == st.failed)
    throw InputError(
        "no translation unit of " + ctx.cfg.compile_commands.string() + " could be parsed" +
        (st.crashed ? " (the scan crashed in " + std::to_string(st.crashed) + ")" : ""));
  const std::string skipped = skipped_units_note(ctx, st);
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
           << st.calls << " calls, plan 0 has " << n << " functions" << skipped << "\n";
  return kExitOk;
}

} // namespace vprof::driver
