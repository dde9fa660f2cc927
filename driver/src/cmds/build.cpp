// `vprof build`: builds the program with one plan's probes, as the loop does, without a run.
#include "cmds/common.hpp"
#include "commands.hpp"
#include "pipeline.hpp"

#include "vprof/instrumenter.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <optional>
#include <ostream>

namespace vprof::driver {
namespace {

int g_build_iteration = -1;

} // namespace

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

} // namespace vprof::driver
