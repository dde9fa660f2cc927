// What the workspace knows of the trace's sites (names, heights, kinds) and the engine's
// options from the run's settings.
#include "stages.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_analysis.hpp"
#include "vprof/workspace_rows.hpp"

#include <Eigen/Dense>

#include <algorithm>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

DbFacts read_db(ws::Database *db, const std::vector<detail::NodeDef> &nodes) {
  DbFacts f;
  if (!db)
    return f;
  f.have = true;
  if (auto h = db->meta("H")) {
    try {
      f.H = std::stoi(*h);
    } catch (...) {
      f.H = -1;
    }
  }
  if (f.H < 0)
    f.H = ws::max_annotated_height(*db).value_or(-1);
  if (f.H < 0)
    f.H = ws::max_height(*db).value_or(-1);
  ws::SiteFactsReader reader(*db);
  for (const auto &n : nodes) {
    if (n.label >= detail::kLabelWaitBase || f.sites.count(static_cast<std::int64_t>(n.label)))
      continue;
    auto site = static_cast<std::int64_t>(n.label);
    SiteInfo si;
    if (auto sf = reader.read(site)) {
      si.kind = sf->body ? "body" : "call";
      const std::string &fname = sf->function_name;
      const std::string &file = sf->file;
      auto slash = file.find_last_of('/');
      std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
      int caller_h = sf->function_height;
      si.caller = sf->function;
      si.caller_name = fname;
      if (sf->body) {
        si.function = sf->function;
        si.name = fname;
        si.height = caller_h;
        si.has_callees = sf->has_defined_callees;
      } else {
        si.function = sf->callee;
        const std::string &callee = sf->callee_name;
        si.callee_name = callee;
        si.name = callee + "() @" + base + ":" + std::to_string(sf->line);
        bool callee_defined = sf->callee_defined;
        // call targets (virtual overrides, indirect candidates, template patterns whose
        // callee the site table could not resolve)
        auto targets = ws::call_targets(*db, site);
        int target_h = -1;
        auto ntargets = targets.size();
        bool dispatch = ntargets > 1;
        for (const auto &t : targets) {
          target_h = std::max(target_h, t.height);
          dispatch = dispatch || t.dispatch;
        }
        si.dispatch = dispatch;
        if (dispatch) {
          // A virtual or indirect call names the dispatch, not one function: it sits one
          // level above the highest of its targets, so an instrumented target's body
          // below it is more specific.
          si.height = target_h + 1;
        } else if (callee_defined && sf->callee_height >= 0) {
          si.height = std::max(sf->callee_height, target_h);
        } else if (ntargets > 0) {
          si.height = target_h;
        } else {
          // Outside the program (libc, a library): its height in our call graph is
          // unknown (0 only because its body is not seen). The call is a statement of
          // the caller, the deepest code the user can change: rank it at the caller's
          // height (docs/statistics.md, "Specificity and score").
          si.external = true;
          si.height = caller_h;
        }
        si.has_callees = callee_defined || ntargets > 0;
      }
    }
    f.sites[site] = si;
  }
  return f;
}

// Site ids at or above this (16M) stay out of the engine's dense site table.
constexpr ws::SiteId kSiteTableLimit = 16777216;

EngineOptions engine_options(ws::Database *db) {
  EngineOptions eopt;
  if (db) {
    eopt.site_function = ws::site_function_table(*db, kSiteTableLimit);
    eopt.calls = ws::call_edges(*db);
  }
  return eopt;
}

} // namespace vprof::analyzer::detail
