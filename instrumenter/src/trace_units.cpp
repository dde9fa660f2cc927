// Trace units (docs/instrumenter.md, "The trace proves its plan"): every instrumented
// translation unit registers, from a constructor the wrapper appends to it, the workspace,
// plan stamp and iteration it was built for; the runtime writes them to <pid>.units. Before
// a trace is analysed its units are held against the plan: a binary built for another plan,
// iteration or workspace (an installed copy the build did not refresh) is refused.
#include "internal.hpp"

#include <vprof/instrumenter.hpp>
#include <vprof/workspace_rows.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace vprof::instr {
namespace {

// "<pid>.units" -> pid, or -1.
int units_file_pid(const fs::path &p) {
  if (p.extension() != ".units")
    return -1;
  const std::string stem = p.stem().string();
  if (stem.empty() || stem.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoi(stem);
}

} // namespace

std::string unit_registration(const UnitStamp &u) {
  // C89 and C++ alike: a comment in /* */, the declaration before the definition (no
  // -Wmissing-prototypes for a static function), the constructor keeps it from being unused.
  std::ostringstream out;
  out << "\n/* vprof: the plan this translation unit was built for */\n"
      << "static void vprof_unit_register_(void) __attribute__((constructor));\n"
      << "static void vprof_unit_register_(void) {\n"
      << "  vprof_register_unit(" << detail::c_string_literal(u.workspace_id) << ", "
      << detail::c_string_literal(u.stamp) << ", " << u.iteration << ", "
      << detail::c_string_literal(u.source.string()) << ");\n"
      << "}\n";
  return out.str();
}

std::vector<TraceUnits> read_trace_units(const fs::path &trace_dir) {
  std::vector<TraceUnits> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(trace_dir, ec)) {
    int pid = units_file_pid(e.path());
    if (pid < 0)
      continue;
    TraceUnits t;
    t.pid = pid;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string ws_id, stamp, iteration, source;
      if (!std::getline(fields, ws_id, '\t') || !std::getline(fields, stamp, '\t'))
        continue;
      if (ws_id == "overflow") {
        t.overflow = true;
        continue;
      }
      if (!std::getline(fields, iteration, '\t') || !std::getline(fields, source))
        continue;
      UnitStamp u;
      u.workspace_id = ws_id;
      u.stamp = stamp;
      u.iteration = std::atoi(iteration.c_str());
      u.source = source;
      t.units.push_back(std::move(u));
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const TraceUnits &a, const TraceUnits &b) { return a.pid < b.pid; });
  return out;
}

TraceUnitCheck check_trace_units(ws::Database &wsdb, const fs::path &workspace_db, int iteration,
                                 const fs::path &trace_dir) {
  const std::string workspace = workspace_identity(wsdb);
  const auto expected = plan_stamps(wsdb, iteration);
  TraceUnitCheck out;
  std::set<std::string> registered;
  for (const auto &t : read_trace_units(trace_dir))
    for (const auto &u : t.units) {
      out.any_units = true;
      auto it = expected.find(u.source.string());
      std::string want = it == expected.end() ? std::string(kNoPlanStamp) : it->second;
      bool other = u.workspace_id != workspace;
      if (other || u.stamp != want)
        out.mismatched.push_back({t.pid, u, want, other});
      else
        registered.insert(u.source.string());
    }
  if (!out.any_units)
    return out;
  std::set<std::string> compiled; // instrumented for this plan, by the records
  for (const auto &r : read_object_records(workspace_db)) {
    auto it = expected.find(r.source.string());
    if (it != expected.end() && r.stamp == it->second && r.fallback.empty())
      compiled.insert(r.source.string());
  }
  std::set<std::string> planned_files;
  for (const auto &f : ws::planned_functions(wsdb, iteration))
    planned_files.insert(f.file);
  for (const auto &file : planned_files)
    if (compiled.count(file) && !registered.count(file))
      out.unregistered.push_back(file);
  return out;
}

std::string describe_unit_mismatches(const std::vector<UnitMismatch> &bad, int iteration,
                                     const fs::path &trace_dir) {
  std::ostringstream out;
  out << "the trace in " << trace_dir.string() << " was written by a binary built for another "
      << (bad.front().other_workspace ? "vprof workspace" : "plan") << " than iteration "
      << iteration << "'s:\n";
  const std::size_t shown = std::min<std::size_t>(bad.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto &m = bad[i];
    out << "  process " << m.pid << ": " << m.found.source.string();
    if (m.other_workspace)
      out << " was compiled by another workspace (" << m.found.workspace_id << ")\n";
    else
      out << " was compiled for iteration " << m.found.iteration << "'s plan (stamp "
          << m.found.stamp << "), this one's is " << m.expected_stamp << "\n";
  }
  if (bad.size() > shown)
    out << "  … and " << bad.size() - shown << " more\n";
  out << "the workload ran a program the `build` command did not produce: if it runs an "
         "installed copy, make `build` install it too (e.g. `make && make install`)";
  return out.str();
}

} // namespace vprof::instr
