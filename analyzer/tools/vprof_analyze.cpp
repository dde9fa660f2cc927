// vprof-analyze: thin front end of vprof::analyzer (the driver's `vprof analyze/expand`
// call the same functions). Exit 0 ok, 1 bad trace or analysis error, 2 usage, 4 internal
// error (docs/cli.md).
#include "vprof/analyzer.hpp"
#include "vprof/planner.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: vprof-analyze <trace-dir>... [--db FILE] [--store ITERATION] [--json]\n"
      "                     [--seed N] [--bootstrap N] [--top N] [--ranking net|vprofiler]\n"
      "       vprof-analyze --expand ITERATION --db FILE [-k K] [--max-iterations N]\n"
      "Analyses a trace directory, or several (one per host, merged on one time line;\n"
      "docs/multihost.md) (report on stdout; --store saves it as a run of the\n"
      "given plan iteration), or writes the next plan from a stored run (--expand).\n"
      "Exit status: 0 ok (expand: also when it stops), 1 error, 2 usage, 4 internal error\n"
      "(a bug in vprof: please report it with the trace).\n");
  return 2;
}

bool to_int(const char *s, long long &v) {
  char *end = nullptr;
  v = std::strtoll(s, &end, 10);
  return end && *end == 0 && end != s;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::filesystem::path> trace_dirs;
  std::string db_path;
  std::optional<long long> store_iter, expand_iter;
  bool json = false;
  long long k = 5, max_iter = 8, top = 20;
  vprof::analyzer::AnalyzeOptions opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](long long &v) { return i + 1 < argc && to_int(argv[++i], v); };
    long long v;
    if (a == "--db" && i + 1 < argc)
      db_path = argv[++i];
    else if (a == "--json")
      json = true;
    else if (a == "--store" && next(v))
      store_iter = v;
    else if (a == "--expand" && next(v))
      expand_iter = v;
    else if (a == "-k" && next(v))
      k = v;
    else if (a == "--max-iterations" && next(v))
      max_iter = v;
    else if (a == "--seed" && next(v))
      opt.seed = static_cast<std::uint64_t>(v);
    else if (a == "--bootstrap" && next(v))
      opt.bootstrap_samples = static_cast<int>(v);
    else if (a == "--ranking" && i + 1 < argc) {
      std::string r = argv[++i];
      if (r != "net" && r != "vprofiler")
        return usage();
      opt.ranking =
          r == "net" ? vprof::analyzer::Ranking::Net : vprof::analyzer::Ranking::VProfiler;
    } else if (a == "--top" && next(v))
      top = v;
    else if (a == "-h" || a == "--help")
      return usage(), 0;
    else if (a[0] != '-')
      trace_dirs.emplace_back(a);
    else
      return usage();
  }
  try {
    std::unique_ptr<vprof::ws::Database> db;
    if (!db_path.empty())
      db = std::make_unique<vprof::ws::Database>(db_path);
    if (expand_iter) {
      if (!db)
        return usage();
      vprof::planner::ExpandOptions eo;
      eo.k = static_cast<int>(k);
      eo.max_iterations = static_cast<int>(max_iter);
      auto r = vprof::planner::expand(*db, static_cast<int>(*expand_iter), eo);
      std::printf("%s: %s\n", r.stop ? "stop" : "expanded", r.reason.c_str());
      for (auto f : r.added)
        std::printf("plan %d += function %lld\n", r.next_iteration, static_cast<long long>(f));
      return 0;
    }
    if (trace_dirs.empty() || (store_iter && !db))
      return usage();
    auto res = vprof::analyzer::analyze(trace_dirs, db.get(), opt);
    if (store_iter)
      vprof::analyzer::store(*db, res, static_cast<int>(*store_iter));
    vprof::analyzer::RenderOptions ro;
    ro.max_factors = static_cast<int>(top);
    std::string out =
        json ? vprof::analyzer::render_json(res) + "\n" : vprof::analyzer::render_text(res, ro);
    std::fwrite(out.data(), 1, out.size(), stdout);
  } catch (const vprof::analyzer::InternalError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vprof-analyze: internal error: %s\n", e.what());
    return 4;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "vprof-analyze: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
