// Test helpers: the planner's expansion and final plan with a budget that admits anything,
// for tests of what a factor expands into (tests/planner/ tests the budget itself).
#pragma once

#include "vprof/planner.hpp"

namespace vprof::testing {

inline planner::Budget unlimited_budget() {
  planner::Budget b;
  b.exploration = 1;
  b.final_share = 1;
  b.record_ns = 1e-9;
  return b;
}

inline planner::ExpandResult expand(ws::Database &db, int iteration, int k, int max_iterations) {
  planner::ExpandOptions o;
  o.k = k;
  o.max_iterations = max_iterations;
  o.budget = unlimited_budget();
  return planner::expand(db, iteration, o);
}

inline planner::FinalResult final_plan(ws::Database &db, int iteration, double threshold) {
  planner::FinalOptions o;
  o.threshold = threshold;
  o.budget = unlimited_budget();
  return planner::final_plan(db, iteration, o);
}

} // namespace vprof::testing
