// Building and running one iteration of the profiling loop.
#include "pipeline.hpp"
#include "kernel_wakeups.hpp"
#include "stream_cap.hpp"
#include "vprof/workspace_rows.hpp"

#include "vprof/instrumenter.hpp"
#include "vprof/workspace.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <pwd.h>
#include <sstream>

#include <unistd.h>

namespace vprof::driver {
namespace fs = std::filesystem;

fs::path self_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}

Tools find_tools() {
  Tools t;
  for (const fs::path &dir : {self_dir(), fs::path(VPROF_TOOLS_BUILD_DIR)}) {
    if (!dir.empty() && fs::exists(dir / "vprof-cc") && fs::exists(dir / "vprof-c++")) {
      t.cc = dir / "vprof-cc";
      t.cxx = dir / "vprof-c++";
      return t;
    }
  }
  throw InputError("cannot find the compiler wrappers vprof-cc and vprof-c++ (looked next to "
                   "vprof and in " VPROF_TOOLS_BUILD_DIR "); was vprof built with "
                   "VPROF_BUILD_INSTRUMENTER=ON?");
}

int current_iteration(ws::Database &db) { return ws::newest_plan_iteration(db).value_or(-1); }

fs::path iteration_trace_dir(const Config &cfg, int iteration) {
  return cfg.traces_dir() / ("iter-" + std::to_string(iteration));
}

fs::path iteration_log(const Config &cfg, int iteration, const char *step) {
  fs::path dir = cfg.workspace_dir() / "logs";
  fs::create_directories(dir);
  return dir / ("iter-" + std::to_string(iteration) + "-" + step + ".log");
}

namespace {

// The build check's findings as lines for the user: each file and why.
std::string build_findings(const instr::BuildCheck &chk, int iteration) {
  std::ostringstream os;
  for (const auto &[file, why] : chk.fallbacks)
    os << "  " << file.string() << ": built from its original source, without probes: " << why
       << "\n";
  for (const auto &file : chk.not_compiled)
    os << "  " << file.string() << ": planned, but the build did not compile it for plan "
       << iteration << "\n";
  for (const auto &[file, object] : chk.stale)
    os << "  " << file.string() << ": its object " << object.string()
       << " is still the one of another plan (not rebuilt)\n";
  return os.str();
}

// How many planned call sites and functions the rewrite refused (instr::Diagnostic::Target).
struct RefusalCounts {
  std::size_t calls = 0, functions = 0;
};

RefusalCounts count_refusals(const std::vector<instr::Diagnostic> &refused) {
  RefusalCounts n;
  for (const auto &d : refused)
    (d.target == instr::Diagnostic::Target::function ? n.functions : n.calls)++;
  return n;
}

// The refusals after the first `shown`, by name with their count, in order of appearance
// ("memcpy x12, base64_encode x3"): the loop's output names every one it could not probe.
std::string named_rest(const std::vector<instr::Diagnostic> &refused, std::size_t shown) {
  std::vector<std::pair<std::string, std::size_t>> names;
  for (std::size_t i = shown; i < refused.size(); ++i) {
    const std::string name = refused[i].subject.empty() ? "?" : refused[i].subject;
    auto it =
        std::find_if(names.begin(), names.end(), [&](const auto &n) { return n.first == name; });
    if (it == names.end())
      names.push_back({name, 1});
    else
      ++it->second;
  }
  std::string out;
  for (const auto &[name, n] : names)
    out += (out.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
  return out;
}

std::string shown_path(const Config &cfg, const std::string &file) {
  const fs::path rel = fs::path(file).lexically_relative(cfg.root.lexically_normal());
  return !rel.empty() && *rel.begin() != ".." ? rel.string() : file;
}

} // namespace

std::string refusals_line(const Config &cfg, const std::vector<instr::Diagnostic> &refused,
                          int iteration, std::size_t shown) {
  const RefusalCounts n = count_refusals(refused);
  std::string line = "iteration " + std::to_string(iteration) + ": ";
  if (n.functions)
    line += std::to_string(n.functions) + " planned function(s)" + (n.calls ? " and " : "");
  if (n.calls)
    line += std::to_string(n.calls) + " call site(s) of planned functions";
  line += " could not be probed: ";
  // consecutive ones refused for the same reason share it: "f at a.c:3, g at a.c:4 (why)"
  const std::size_t k = std::min(shown, refused.size());
  for (std::size_t i = 0; i < k; ++i) {
    const auto &d = refused[i];
    line += (d.subject.empty() ? std::string("?") : d.subject) + " at " + shown_path(cfg, d.file) +
            ":" + std::to_string(d.line);
    if (i + 1 < k && refused[i + 1].reason == d.reason)
      line += ", ";
    else
      line += " (" + d.reason + ")" + (i + 1 < k ? "; " : "");
  }
  std::string file = refused.front().file;
  for (const auto &d : refused)
    if (d.file != file)
      file = "<file>";
  const std::string all =
      "`vprof instrument " + (file == "<file>" ? file : shown_path(cfg, file)) + "` lists all";
  if (refused.size() > shown)
    line += "; and " + std::to_string(refused.size() - shown) +
            " more: " + named_rest(refused, shown) + "; " + all;
  else
    line += " (" + all + ")";
  return line;
}

void build_iteration(const Context &ctx, const Tools &tools, ws::Database &db,
                     const instr::CompileDb *cdb, int iteration) {
  if (ctx.cfg.build.empty())
    throw UsageError("no build command: set `build` in vprof.toml or pass --build");
  const fs::path wsdb = ctx.cfg.database();
  std::vector<fs::path> stale;
  if (cdb)
    stale = instr::invalidate_stale_objects(db, wsdb, *cdb, iteration);
  if (!stale.empty())
    ctx.progress("iteration " + std::to_string(iteration) + ": " + std::to_string(stale.size()) +
                 " object(s) compiled for another plan (or without vprof) will be rebuilt");
  ProcessOptions opts;
  opts.cwd = ctx.cfg.root;
  opts.env["CC"] = tools.cc.string();
  opts.env["CXX"] = tools.cxx.string();
  opts.env["VPROF_WORKSPACE"] = wsdb.string();
  opts.env["VPROF_ITERATION"] = std::to_string(iteration);
  opts.log = iteration_log(ctx.cfg, iteration, "build");
  ProcessResult r = run_shell(ctx.cfg.build, opts);
  if (r.exit_code != 0)
    throw std::runtime_error("build failed (" + r.describe() + "): " + ctx.cfg.build +
                             "\nlast lines of " + opts.log->string() + ":\n" +
                             tail_file(*opts.log, 20));
  if (ctx.verbose)
    ctx.progress("built in " + std::to_string(r.seconds).substr(0, 5) +
                 " s (log: " + opts.log->string() + ")");
  instr::BuildCheck chk = instr::check_build(db, wsdb, iteration, cdb);
  if (!chk.not_built.empty())
    ctx.progress(
        "iteration " + std::to_string(iteration) + ": " + std::to_string(chk.not_built.size()) +
        " planned file(s) are not built by `build` (e.g. " + chk.not_built.front().string() +
        "): their functions cannot run in the profiled program");
  if (!chk.refused.empty())
    ctx.progress(refusals_line(ctx.cfg, chk.refused, iteration));
  if (chk.clean())
    return;
  const std::size_t n = chk.fallbacks.size() + chk.not_compiled.size() + chk.stale.size();
  std::string what = std::to_string(n) + " planned file(s) of iteration " +
                     std::to_string(iteration) + " are not instrumented as planned:\n" +
                     build_findings(chk, iteration);
  if (ctx.cfg.allow_fallback) {
    ctx.progress("warning: " + what +
                 "their functions are measured as part of their callers "
                 "(allow_fallback = true)");
    return;
  }
  throw std::runtime_error(
      what +
      "a profile without them would silently be wrong. Fix the build (does `build` "
      "compile these files through $CC/$CXX? `vprof instrument <file>` shows what is "
      "refused and why), or set allow_fallback = true in vprof.toml to go on without "
      "their probes. Build log: " +
      opts.log->string());
}

namespace {
bool is_at_or_below(const fs::path &p, const fs::path &dir) {
  const fs::path rel = p.lexically_normal().lexically_relative(dir.lexically_normal());
  return !rel.empty() && *rel.begin() != "..";
}
} // namespace

std::vector<std::string> take_unusable_trace_dir_notes(const fs::path &trace_dir,
                                                       fs::file_time_type since) {
  const char *tmp = std::getenv("TMPDIR");
  fs::path dir = tmp && *tmp ? tmp : "/tmp";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("vprof-unusable-trace-dir.", 0) != 0)
      continue;
    std::error_code tec;
    if (fs::last_write_time(e.path(), tec) < since || tec)
      continue;
    std::ifstream in(e.path());
    long pid = 0, uid = 0;
    int err = 0;
    std::string note_dir;
    if (in >> pid >> uid >> err && std::getline(in >> std::ws, note_dir)) {
      if (!is_at_or_below(note_dir, trace_dir))
        continue;
      std::string user = std::to_string(uid);
      if (const struct passwd *pw = ::getpwuid(static_cast<uid_t>(uid)))
        user += " (" + std::string(pw->pw_name) + ")";
      out.push_back("process " + std::to_string(pid) + " of user " + user +
                    " could not write its trace to " + note_dir + " (" + std::strerror(err) +
                    ") and ran untraced");
    }
    fs::remove(e.path(), ec);
  }
  return out;
}

fs::path run_iteration(const Context &ctx, int iteration, KernelWakeups *kernel) {
  if (ctx.cfg.workload.empty())
    throw UsageError("no workload command: set `workload` in vprof.toml or pass --workload");
  fs::path dir = iteration_trace_dir(ctx.cfg, iteration);
  fs::remove_all(dir);
  fs::create_directories(dir);
  ProcessOptions opts;
  opts.cwd = ctx.cfg.root;
  opts.env["VPROF_TRACE_DIR"] = dir.string();
  opts.env["VPROF_MAX_THREAD_MB"] = stream_cap_env(ctx.cfg);
  opts.log = iteration_log(ctx.cfg, iteration, "workload");
  if (kernel && kernel->prepare())
    opts.before_exec = [&](int pid) { kernel->attach(pid, dir); };
  // notes left by processes that could not write the trace directory (a second of slack:
  // file times may be coarser than the clock)
  const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  ProcessResult r = run_shell(ctx.cfg.workload, opts);
  const std::string kernel_status = kernel ? kernel->finish() : std::string();
  std::vector<std::string> untraced = take_unusable_trace_dir_notes(dir, started);
  if (r.exit_code != 0)
    throw std::runtime_error("workload failed (" + r.describe() + "): " + ctx.cfg.workload +
                             "\nlast lines of " + opts.log->string() + ":\n" +
                             tail_file(*opts.log, 20));
  if (!untraced.empty()) {
    std::string what;
    for (const auto &u : untraced)
      what += "  " + u + "\n";
    throw std::runtime_error(
        "the trace of iteration " + std::to_string(iteration) + " is incomplete:\n" + what +
        "make the trace directory writable for that user before the program starts (e.g. "
        "`chmod 1777 \"$VPROF_TRACE_DIR\"` in the workload script, when the server runs as "
        "another user), or point VPROF_TRACE_DIR at a directory it can write");
  }
  bool any = false;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    any = any || e.path().extension() == ".vpt";
  if (!any)
    throw std::runtime_error("the workload wrote no trace into " + dir.string() +
                             ": was the program built by the `build` command through "
                             "$CC/$CXX (the vprof wrappers)?");
  if (ctx.verbose)
    ctx.progress("workload ran in " + std::to_string(r.seconds).substr(0, 5) + " s (log: " +
                 opts.log->string() + ")" + (kernel_status.empty() ? "" : "; " + kernel_status));
  if (StreamDrops drops = count_stream_drops(dir); drops.records > 0)
    ctx.progress("iteration " + std::to_string(iteration) +
                 ": warning: " + stream_cap_line(drops, ctx.cfg));
  return dir;
}

void check_trace_plan(const Context &ctx, ws::Database &db, int iteration,
                      const fs::path &trace_dir) {
  auto chk = instr::check_trace_units(db, ctx.cfg.database(), iteration, trace_dir);
  if (!chk.mismatched.empty())
    throw std::runtime_error(instr::describe_unit_mismatches(chk.mismatched, iteration, trace_dir));
  const std::string it = std::to_string(iteration);
  if (!chk.any_units && ws::plan_size(db, iteration) > 0)
    ctx.progress("warning: no process of the trace in " + trace_dir.string() +
                 " says which plan it was built for (built by an older vprof, or without the "
                 "wrappers): it is analysed as iteration " +
                 it + "'s");
  if (!chk.unregistered.empty())
    ctx.progress("warning: " + std::to_string(chk.unregistered.size()) +
                 " planned file(s) compiled for iteration " + it +
                 " are in no process of its trace (e.g. " + chk.unregistered.front().string() +
                 "): if the workload runs an installed copy, make `build` install it too");
}

} // namespace vprof::driver
