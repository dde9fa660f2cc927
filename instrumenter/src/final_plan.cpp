// final_plan: which call sites a final plan keeps (docs/instrumenter.md, "Final plans"):
// direct calls of the program's own functions get no probe (a planned callee's body probe
// times them, a dropped callee's time stays in the caller's body); calls of outside
// functions and virtual calls keep theirs only where the plan lists them.
#include "rewriter.hpp"

#include "vprof/workspace_scan.hpp"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>

namespace vprof::instr::rewriting {

using namespace clang;

void load_final_plan(ws::Database &db, int iteration, State &st) {
  st.final_plan = ws::is_final_plan(db, iteration);
  if (!st.final_plan)
    return;
  for (auto &usr : ws::unplanned_usrs(db, iteration))
    st.dropped.insert(std::move(usr));
  for (const auto &p : ws::final_site_positions(db, iteration))
    if (p.file == st.main_path)
      st.final_sites.insert({static_cast<unsigned>(p.line), static_cast<unsigned>(p.col)});
}

// The call site of a planned function is not timed either: its body probe times it (the
// call site would only repeat it, with the call's position, which the final report's
// places do not use). Virtual calls keep their probe: they name the dispatch, not one
// function. A planned callee whose body the user keeps probe-free (naked,
// no_instrument_function) has no body probe: its call site is its only timing.
bool final_plan_skips_callee(const State &st, const FunctionDecl *callee, bool *unprobed_callee) {
  std::string u = detail::usr_of(callee);
  const auto *m = dyn_cast<CXXMethodDecl>(callee);
  *unprobed_callee = st.planned.count(u) &&
                     (callee->hasAttr<NoInstrumentFunctionAttr>() || callee->hasAttr<NakedAttr>());
  return (st.dropped.count(u) || st.planned.count(u)) && (!m || !m->isVirtual()) &&
         !*unprobed_callee;
}

bool final_plan_lists_call(const State &st, unsigned line, unsigned col) {
  return st.final_sites.count({line, col}) > 0;
}

} // namespace vprof::instr::rewriting
