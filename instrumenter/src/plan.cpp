// plan queries the rewriter and the compiler wrapper ask (the plans are the planner's).
#include "internal.hpp"

namespace vprof::instr {

std::optional<int> current_iteration(ws::Database &db) { return ws::newest_plan_iteration(db); }

bool file_has_plan(ws::Database &db, const std::filesystem::path &file, int iteration) {
  auto st = db.prepare("SELECT 1 FROM plans p JOIN functions f ON f.id = p.function "
                       "WHERE p.iteration = ? AND f.file = ? LIMIT 1");
  st.bind(1, iteration).bind(2, file.string());
  return st.step();
}

} // namespace vprof::instr
