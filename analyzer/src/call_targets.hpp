// Internal: the functions a call site may reach, from the workspace call graph (used for
// specificity in analyzer.cpp and by expand in store.cpp). docs/analyzer.md, "Expansion".
#pragma once

#include "vprof/workspace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vprof::analyzer::detail {

struct CallTarget {
  std::int64_t function = 0;
  int height = -1;       // -1: unknown
  bool dispatch = false; // reached through a virtual or indirect call edge
};

// Defined functions called at the position of call site `site`: the callees of the
// `calls` edges with the site's (caller, file, line, col) — the direct callee, every
// override of a virtual call, the candidates of an indirect call. When no edge has that
// exact column and the site's callee is unresolved (a call in a template pattern), edges
// on the same line whose callee's unqualified name equals the spelled callee's last
// identifier are taken. Empty for an unknown site or a call into external code.
std::vector<CallTarget> call_targets(ws::Database &db, std::int64_t site);

} // namespace vprof::analyzer::detail
