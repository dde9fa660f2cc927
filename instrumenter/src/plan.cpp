// plan: the first plan (roots + depth limit over the static call graph) and plan queries.
#include "internal.hpp"

#include <deque>
#include <stdexcept>
#include <unordered_map>

namespace vprof::instr {

int plan(ws::Database &db, const PlanOptions &opt) {
  std::vector<std::int64_t> roots;
  auto add_query = [&](ws::Statement st) {
    while (st.step())
      roots.push_back(st.int64(0));
  };
  if (opt.most_called > 0) {
    auto st = db.prepare("SELECT f.id FROM functions f JOIN calls c ON c.callee = f.id "
                         "WHERE f.defined = 1 GROUP BY f.id ORDER BY count(*) DESC, f.id LIMIT ?");
    st.bind(1, static_cast<std::int64_t>(opt.most_called));
    add_query(std::move(st));
  }
  for (const auto &r : opt.roots) {
    auto st = db.prepare("SELECT id FROM functions WHERE defined = 1 AND (name = ?1 OR usr = ?1)");
    st.bind(1, r);
    std::size_t before = roots.size();
    add_query(std::move(st));
    if (roots.size() == before)
      throw std::runtime_error("plan: no defined function named '" + r + "' in the call graph");
  }
  if (opt.roots.empty() && opt.most_called <= 0) {
    add_query(db.prepare("SELECT id FROM functions WHERE annotated = 1 AND defined = 1"));
    if (roots.empty())
      throw std::runtime_error("plan: no roots given and no function contains a vprof interval "
                               "annotation (vprof_interval_begin)");
  }
  // Breadth-first over call edges to defined callees.
  std::unordered_map<std::int64_t, int> dist;
  std::deque<std::int64_t> todo;
  for (auto r : roots)
    if (dist.emplace(r, 0).second)
      todo.push_back(r);
  auto next =
      db.prepare("SELECT DISTINCT c.callee FROM calls c JOIN functions f ON f.id = c.callee "
                 "WHERE c.caller = ? AND f.defined = 1");
  while (!todo.empty()) {
    std::int64_t f = todo.front();
    todo.pop_front();
    int d = dist[f];
    if (d >= opt.depth)
      continue;
    next.bind(1, f);
    while (next.step()) {
      std::int64_t g = next.int64(0);
      if (dist.emplace(g, d + 1).second)
        todo.push_back(g);
    }
    next.reset();
  }
  ws::Transaction tx(db);
  db.prepare("DELETE FROM plans WHERE iteration = ?").bind(1, opt.iteration).run();
  auto ins = db.prepare("INSERT INTO plans(iteration, function, reason) VALUES(?,?,?)");
  for (const auto &[f, d] : dist)
    ins.bind(1, opt.iteration).bind(2, f).bind(3, d == 0 ? "root" : "depth").run();
  tx.commit();
  return static_cast<int>(dist.size());
}

std::optional<int> current_iteration(ws::Database &db) {
  auto st = db.prepare("SELECT max(iteration) FROM plans");
  if (st.step() && !st.is_null(0))
    return static_cast<int>(st.int64(0));
  return std::nullopt;
}

bool file_has_plan(ws::Database &db, const std::filesystem::path &file, int iteration) {
  auto st = db.prepare("SELECT 1 FROM plans p JOIN functions f ON f.id = p.function "
                       "WHERE p.iteration = ? AND f.file = ? LIMIT 1");
  st.bind(1, iteration).bind(2, file.string());
  return st.step();
}

} // namespace vprof::instr
