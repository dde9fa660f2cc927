// plan queries the rewriter and the compiler wrapper ask (the plans are the planner's).
#include "internal.hpp"

namespace vprof::instr {

std::optional<int> current_iteration(ws::Database &db) { return ws::newest_plan_iteration(db); }

bool file_has_plan(ws::Database &db, const std::filesystem::path &file, int iteration) {
  return ws::file_has_plan(db, file.string(), iteration);
}

} // namespace vprof::instr
