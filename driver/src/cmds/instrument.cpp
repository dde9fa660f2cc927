// `vprof instrument FILE`: prints one source file instrumented per the plan.
#include "cmds/common.hpp"
#include "commands.hpp"

#include "vprof/instrumenter.hpp"
#include "vprof/workspace.hpp"

#include <filesystem>
#include <fstream>
#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

std::string g_instr_file;
int g_instr_iteration = -1;

} // namespace

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

} // namespace vprof::driver
