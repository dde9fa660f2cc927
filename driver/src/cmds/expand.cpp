// `vprof expand`: adds the top-k factors' callees to the next plan, within the budget.
#include "cmds/common.hpp"
#include "commands.hpp"
#include "pipeline.hpp"

#include "vprof/planner.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <ostream>

namespace vprof::driver {
namespace {

int g_expand_iteration = -1;

} // namespace

void setup_expand(CLI::App &sub, Context &ctx) {
  add_loop_flags(sub, ctx);
  sub.add_option("--iteration", g_expand_iteration, "the analysed iteration (default: newest)");
  sub.footer("Adds the callees of the top-k factors' functions (for a wait factor: the waker's\n"
             "functions) to the next plan, as many as the probe budget allows: a hot callee\n"
             "stays timed at its call sites (docs/planner.md). Exit 0 when a new plan was\n"
             "written, 1 when the stopping rule holds (the reason is printed).");
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

} // namespace vprof::driver
