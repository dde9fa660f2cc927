// `vprof report`: prints (or copies, --html) the stored report of an analysed iteration.
#include "cmds/common.hpp"
#include "commands.hpp"

#include "vprof/analyzer.hpp"
#include "vprof/workspace.hpp"

#include <filesystem>
#include <fstream>
#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

int g_report_iteration = -1;
bool g_report_json = false;
std::string g_report_html;
CLI::Option *g_report_html_opt = nullptr;

} // namespace

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

} // namespace vprof::driver
