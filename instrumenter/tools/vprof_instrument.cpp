// vprof-instrument: thin command line over the instrumenter library (scan, plan, rewrite,
// export), for tests and scripts; the vprof driver exposes the same calls.
#include <vprof/instrumenter.hpp>
#include <vprof/planner.hpp>

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace vprof;

namespace {

// Exit codes: 0 ok, 1 usage/bad input, 2 some translation units failed.
fs::path workspace_path(const std::string &given, bool create) {
  if (!given.empty())
    return given;
  if (auto p = instr::find_workspace(fs::current_path()))
    return *p;
  if (create)
    return ws::default_path(fs::current_path());
  throw std::runtime_error("no workspace: pass -w or set VPROF_WORKSPACE, or run `scan` first");
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"vprof-instrument: call graph scan, plan and plan-driven rewriting"};
  app.require_subcommand(1);
  std::string wspath, dbpath = ".";
  bool quiet = false;
  std::vector<std::string> extra;
  app.add_option("-w,--workspace", wspath,
                 "workspace database (default: $VPROF_WORKSPACE or .vprof/vprof.db upwards)");
  app.add_flag("-q,--quiet", quiet, "no progress or skip diagnostics");
  app.add_option("--extra-arg", extra, "argument appended to every compile command");

  auto *scan = app.add_subcommand("scan", "parse every TU and store the call graph and heights");
  scan->add_option("-p,--compile-db", dbpath, "compile_commands.json or its directory")
      ->capture_default_str();

  auto *plan = app.add_subcommand("plan", "write the first plan: roots + depth");
  planner::FirstPlanOptions po;
  plan->add_option("-r,--root", po.roots,
                   "root function (qualified name or USR); default: annotated functions");
  plan->add_option("--most-called", po.most_called,
                   "roots = the N defined functions with most call sites");
  plan->add_option("-d,--depth", po.depth, "callee depth below the roots")->capture_default_str();
  plan->add_option("-i,--iteration", po.iteration, "plan iteration")->capture_default_str();

  auto *rw = app.add_subcommand("rewrite", "print one instrumented TU (stdout or -o)");
  std::string file, out;
  int iteration = -1;
  rw->add_option("file", file, "source file of the compile database")->required();
  rw->add_option("-p,--compile-db", dbpath, "compile_commands.json or its directory")
      ->capture_default_str();
  rw->add_option("-i,--iteration", iteration, "plan iteration (default: the latest)");
  rw->add_option("-o,--output", out, "write here instead of stdout");

  auto *ex = app.add_subcommand("export", "write the instrumented tree, or print a diff");
  std::string outdir, root;
  bool diff = false;
  ex->add_option("-p,--compile-db", dbpath, "compile_commands.json or its directory")
      ->capture_default_str();
  ex->add_option("-i,--iteration", iteration, "plan iteration (default: the latest)");
  ex->add_option("-o,--out", outdir, "output folder (mirrors the source root)");
  ex->add_option("--root", root, "source root (default: common parent of the sources)");
  ex->add_flag("--diff", diff, "print a unified diff instead");

  CLI11_PARSE(app, argc, argv);
  try {
    instr::ParseOptions popt;
    popt.quiet = quiet;
    popt.extra_args = extra;
    if (*scan) {
      auto cdb = instr::CompileDb::load(dbpath);
      ws::Database db(workspace_path(wspath, true));
      db.set_meta("compile_db", fs::absolute(dbpath).string());
      auto s = instr::scan(db, cdb, popt);
      std::cerr << "vprof: scanned " << s.tus << " TUs (" << s.failed << " failed): " << s.functions
                << " functions, " << s.calls << " calls, max height " << s.max_height << "\n";
      return s.failed ? 2 : 0;
    }
    ws::Database db(workspace_path(wspath, false));
    if (*plan) {
      int n = planner::first_plan(db, po);
      std::cerr << "vprof: plan " << po.iteration << ": " << n << " functions\n";
      return 0;
    }
    if (iteration < 0) {
      auto it = instr::current_iteration(db);
      if (!it)
        throw std::runtime_error("the workspace has no plan: run `plan` first");
      iteration = *it;
    }
    auto cdb = instr::CompileDb::load(dbpath);
    if (*rw) {
      const instr::CompileCommand *c = cdb.find(file);
      if (!c)
        throw std::runtime_error(file + ": not in the compile database");
      auto r = instr::rewrite(db, *c, iteration, popt);
      if (!r.ok) {
        std::cerr << "vprof: rewrite: " << r.error << "\n";
        return 2;
      }
      std::string text = r.output;
      if (!r.changed) {
        std::ifstream in(c->file, std::ios::binary);
        text.assign(std::istreambuf_iterator<char>(in), {});
      }
      if (out.empty()) {
        std::cout << text;
      } else {
        std::ofstream o(out, std::ios::binary);
        o << text;
        if (!o)
          throw std::runtime_error(out + ": cannot write");
      }
      if (!quiet)
        std::cerr << "vprof: " << c->file << ": " << r.body_sites << " body and " << r.call_sites
                  << " call probes, " << r.skipped.size() << " skipped\n";
      return 0;
    }
    if (*ex) {
      if (outdir.empty() && !diff)
        throw std::runtime_error("export: give --out DIR or --diff");
      instr::ExportOptions eo;
      eo.iteration = iteration;
      eo.out_dir = outdir;
      eo.root = root;
      eo.diff = diff ? &std::cout : nullptr;
      eo.parse = popt;
      int failed = 0;
      int n = instr::export_tree(db, cdb, eo, &failed);
      std::cerr << "vprof: exported " << n << " instrumented files (" << failed << " failed)\n";
      return failed ? 2 : 0;
    }
  } catch (const std::exception &e) {
    std::cerr << "vprof-instrument: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
