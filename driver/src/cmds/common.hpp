// What several profiling subcommands (driver/src/cmds/) share: opening the workspace and the
// compile database, number formats, the planner's and the analyzer's options, and analysing
// a run into the workspace with its reports.
#pragma once

#include "commands.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/instrumenter.hpp"
#include "vprof/planner.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace vprof::ws {
class Database;
}

namespace vprof::driver {

// Opens the workspace of the project; `create` allows a new one (only `vprof init`).
// Throws InputError when there is none (or it cannot be opened).
std::unique_ptr<ws::Database> open_workspace(const Context &ctx, bool create);

// The newest plan's iteration; throws InputError when `vprof init` has not made one.
int require_plan(ws::Database &db);

// The compile database of the settings; UsageError when none is set, InputError when it
// cannot be read.
instr::CompileDb load_compile_db(const Context &ctx);

// A duration in ns as "1.23 ms" or "45.6 us"; a fraction as "12.3%".
std::string ms(double ns);
std::string pct(double f);

// .vprof/reports/iter-<iteration><ext>, where an analysis's reports are written.
std::filesystem::path report_path(const Config &cfg, int iteration, const char *ext);

// Writes `text` to `p`, creating its folder; throws std::runtime_error when it cannot.
void write_file(const std::filesystem::path &p, const std::string &text);

// The probe budgets of the settings (exploration, final plan, record cost, stream cap).
planner::Budget budget_of(const Config &cfg);

// The analyzer's options of the settings (bootstrap, seed, ranking, tail percentile).
analyzer::AnalyzeOptions analyze_options(const Config &cfg);

// One line summing up an analysis: intervals, latency, top place.
std::string summary_line(const analyzer::AnalysisResult &res);

// What `vprof loop` prints at the end: the answer for all intervals (places, waits,
// factors, what-if), one line per interval type, and where the whole report is.
std::string summary_text(const Context &ctx, const analyzer::AnalysisResult &res, int iteration);

// Analyzes `trace_dirs` (one, or one per host merged on one time line) as a run of
// `iteration`, stores it and writes the reports (.txt, .json, .summary.txt, .html). Throws
// InputError for a bad trace, std::runtime_error for fewer than min_intervals intervals.
analyzer::AnalysisResult analyze_and_store(const Context &ctx, ws::Database &db,
                                           const std::vector<std::filesystem::path> &trace_dirs,
                                           int iteration);

// One line on what the budget did to an expansion.
std::string budget_line(const planner::ExpandResult &ex);

// The expansion options of the settings; `max_iterations` < 0: the configured iteration
// budget.
planner::ExpandOptions expand_options(const Config &cfg, int max_iterations = -1);

} // namespace vprof::driver
