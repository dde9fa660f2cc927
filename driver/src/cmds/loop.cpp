// `vprof loop`: build, run, analyze and expand until the top factors are stable, then
// measure the final plan; resumes from the workspace.
#include "cmds/common.hpp"
#include "commands.hpp"
#include "kernel_wakeups.hpp"
#include "pipeline.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/instrumenter.hpp"
#include "vprof/planner.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

bool g_loop_continue = false;

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

// Records per interval with one decimal: a call just over the budget must not print equal.
std::string one_decimal(double records) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", records);
  return buf;
}

// " name (records), name (records)" of refusals, records per interval with one decimal.
std::string refusal_list(const std::vector<planner::Refusal> &refusals) {
  std::string text;
  for (std::size_t i = 0; i < refusals.size(); ++i)
    text += (i ? ", " : " ") + refusals[i].name + " (" + one_decimal(refusals[i].records) + ")";
  return text;
}

// The answer's chain's calls the final plan leaves untimed, for its line ("": none).
std::string untimed_calls_text(const planner::FinalResult &fr) {
  if (fr.untimed_calls.empty())
    return "";
  return "; " + std::to_string(fr.untimed_calls.size()) +
         " of its calls left untimed, each alone costing more than the final budget of " +
         one_decimal(fr.budget_records) +
         " records per interval (their caller's own time holds them):" +
         refusal_list(fr.untimed_calls);
}

// The answer's function's outside calls timed for a wait in its own code, for the final
// plan's line ("": none).
std::string wait_calls_text(const planner::FinalResult &fr) {
  if (fr.wait_calls == 0)
    return "";
  return "; " + std::to_string(fr.wait_calls) +
         " call(s) of outside functions in the answer's function timed: a wait in its own code "
         "carried variance, and the call that made it holds it (the wait's device time and "
         "wake-up delay with it)";
}

// The functions above the answer and the annotated functions the final budget left out, for
// the final plan's line ("": none).
std::string left_out_text(const planner::FinalResult &fr) {
  if (fr.left_out.empty())
    return "";
  return "; left out for the final budget of " + one_decimal(fr.budget_records) +
         " records per interval (the interval marks need no probe):" + refusal_list(fr.left_out);
}

// What the final plan keeps and why, in one progress line.
std::string final_line(const planner::FinalResult &fr, const std::string &why, double prune) {
  std::string line = why + "; final plan " + std::to_string(fr.next_iteration) + " keeps " +
                     std::to_string(fr.kept) + " function(s), drops " + std::to_string(fr.dropped) +
                     " whose places stay below " + pct(prune) + " of Var(L)";
  if (fr.answer.iteration >= 0)
    line += "; the answer (" + fr.answer.name + ", " + pct(fr.answer.contribution) +
            " in iteration " + std::to_string(fr.answer.iteration) + ") is kept with " +
            std::to_string(fr.chain_kept > 0 ? fr.chain_kept - 1 : 0) + " of the " +
            std::to_string(fr.answer.above.size()) + " function(s) above it";
  line += left_out_text(fr);
  line += wait_calls_text(fr);
  line += untimed_calls_text(fr);
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

// The name of iteration `it`'s answer: its latest run's first place ("" without one).
std::string report_answer(ws::Database &db, int it) {
  auto run = ws::latest_run(db, it);
  if (!run)
    return "";
  auto places = ws::places_of(db, run->id);
  return places.empty() ? "" : places.front().name;
}

// The place a measured final plan (iteration `it`) left unexplored below, in words, or ""
// (the stop line's hint, or the line that resumes). Called "the answer" only when it is the
// answer the final run's report prints; otherwise "the place" (the report may answer with a
// place that names no function, such as the time outside probed functions).
std::string unexplored_text(ws::Database &db, const planner::Unexplored &un, int it) {
  if (un.callees.empty())
    return "";
  std::string names;
  for (std::size_t i = 0; i < un.callees.size() && i < 3; ++i)
    if (auto row = ws::function_row(db, un.callees[i]))
      names += (names.empty() ? "" : ", ") + row->name;
  if (un.callees.size() > 3)
    names += ", ...";
  const bool answer = un.answer.iteration == un.iteration && un.answer.name == un.name &&
                      report_answer(db, it) == un.name;
  return (answer ? "the answer " : "the place ") + un.name + " (" + pct(un.contribution) +
         " of Var(L) in iteration " + std::to_string(un.iteration) + ") calls " +
         std::to_string(un.callees.size()) + " function(s) no plan held (" + names + ")";
}

} // namespace

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
             "function (the deepest place any iteration found) and, within --final-budget, the\n"
             "functions above it, the annotated ones and the functions whose places reach\n"
             "--prune of Var(L); one more run measures it (not counted in the iteration\n"
             "budget). Prints one progress line per step, then for all intervals the places\n"
             "(where the variance comes from), the waits and the top factors, one line per\n"
             "interval type, and the path of the whole report. Resumes from the\n"
             "workspace: an iteration already analysed is not run again; after a final\n"
             "plan, --continue explores below an answer whose callees were never planned.");
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
      const std::string below = unexplored_text(*db, un, it);
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

} // namespace vprof::driver
