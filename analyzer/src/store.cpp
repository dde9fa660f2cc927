// The analyzer's workspace tables: storing an analysis run, `expand` (the next
// iteration's plan from the top-k factors, with the stopping rule) and `prune` (the final
// plan). docs/analyzer.md.
#include "call_targets.hpp"
#include "node_kind.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/workspace.hpp"

#include <algorithm>
#include <set>

namespace vprof::analyzer {
namespace {

constexpr const char *kResultsSql =
#include "results.sql.inc"
    ;

using detail::kind_text;

} // namespace

void ensure_tables(ws::Database &db) { db.ensure_tables(kResultsSql); }

std::int64_t store(ws::Database &db, const AnalysisResult &res, int iteration) {
  ensure_tables(db);
  ws::Transaction tx(db);
  double worst = 0;
  for (const auto &g : res.groups)
    worst = std::max(worst, g.max_residual);
  db.prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
             "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
             "ticks_per_second, max_residual) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")
      .bind(1, iteration)
      .bind(2, res.trace_dir)
      .bind(3, static_cast<std::int64_t>(res.records))
      .bind(4, static_cast<std::int64_t>(res.streams))
      .bind(5, static_cast<std::int64_t>(res.processes))
      .bind(6, static_cast<std::int64_t>(res.dropped))
      .bind(7, static_cast<std::int64_t>(res.intervals))
      .bind(8, static_cast<std::int64_t>(res.intervals_unfinished))
      .bind(9, static_cast<std::int64_t>(res.wake_edges))
      .bind(10, res.H)
      .bind(11, res.ticks_per_second)
      .bind(12, worst)
      .run();
  std::int64_t run = db.last_insert_rowid();
  auto st_stats = db.prepare("INSERT INTO interval_stats VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_node = db.prepare("INSERT INTO tree_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_factor = db.prepare("INSERT INTO factors VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_whatif = db.prepare("INSERT INTO whatif VALUES (?,?,?,?,?,?,?)");
  auto st_wait = db.prepare("INSERT INTO waits VALUES (?,?,?,?,?,?,?,?,?,?)");
  auto st_place = db.prepare("INSERT INTO places VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const auto &g : res.groups) {
    const auto &l = g.latency;
    st_stats.bind(1, run).bind(2, g.label).bind(3, static_cast<std::int64_t>(l.count));
    st_stats.bind(4, l.mean_ns).bind(5, l.var_ns2).bind(6, l.cv).bind(7, l.min_ns);
    st_stats.bind(8, l.p50_ns).bind(9, l.p95_ns).bind(10, l.p99_ns).bind(11, l.max_ns);
    st_stats.bind(12, g.max_residual).run();
    for (const auto &ns : g.nodes) {
      const Node &n = res.nodes[ns.node];
      st_node.bind(1, run).bind(2, g.label).bind(3, n.id);
      if (n.parent < 0)
        st_node.bind_null(4);
      else
        st_node.bind(4, n.parent);
      st_node.bind(5, n.path).bind(6, kind_text(n.kind));
      if (n.kind == Node::Kind::Site)
        st_node.bind(7, n.site);
      else
        st_node.bind_null(7);
      if (n.function)
        st_node.bind(8, n.function);
      else
        st_node.bind_null(8);
      st_node.bind(9, n.name);
      if (n.height >= 0)
        st_node.bind(10, n.height);
      else
        st_node.bind_null(10);
      st_node.bind(11, ns.mean_ns).bind(12, ns.var_ns2).bind(13, ns.share);
      st_node.bind(14, ns.body_mean_ns).bind(15, ns.body_var_ns2);
      st_node.bind(16, ns.expanded ? 1 : 0).bind(17, ns.residual).run();
    }
    int rank = 0;
    for (const auto &f : g.factors) {
      st_factor.bind(1, run).bind(2, g.label).bind(3, ++rank).bind(4, f.key);
      st_factor.bind(5, f.kind == Factor::Kind::Variance ? "var" : "cov");
      st_factor.bind(6, f.parent).bind(7, f.a).bind(8, f.a_body ? 1 : 0);
      if (f.b >= 0)
        st_factor.bind(9, f.b).bind(10, f.b_body ? 1 : 0);
      else
        st_factor.bind_null(9).bind_null(10);
      st_factor.bind(11, f.name).bind(12, f.term_ns2).bind(13, f.share);
      if (f.has_ci)
        st_factor.bind(14, f.share_lo).bind(15, f.share_hi);
      else
        st_factor.bind_null(14).bind_null(15);
      st_factor.bind(16, f.specificity).bind(17, f.score).bind(18, f.leaf ? 1 : 0).run();
    }
    int prank = 0;
    for (const auto &p : g.places) {
      st_place.bind(1, run).bind(2, g.label).bind(3, ++prank).bind(4, p.key).bind(5, p.name);
      if (p.function)
        st_place.bind(6, p.function);
      else
        st_place.bind_null(6);
      st_place.bind(7, p.contexts).bind(8, p.mean_ns).bind(9, p.var_ns2).bind(10, p.share);
      st_place.bind(11, p.contribution).bind(12, p.specificity).bind(13, p.score);
      std::string via;
      for (const auto &[w, c] : p.via)
        via += (via.empty() ? "" : "; ") + (w.empty() ? std::string("own path") : w) + "=" +
               std::to_string(c);
      st_place.bind(14, p.waker ? 1 : 0).bind(15, via).run();
    }
    int wrank = 0;
    for (const auto &w : g.waits) {
      st_wait.bind(1, run).bind(2, g.label).bind(3, ++wrank).bind(4, w.key).bind(5, w.name);
      st_wait.bind(6, w.contexts).bind(7, w.mean_ns).bind(8, w.var_ns2).bind(9, w.share);
      st_wait.bind(10, w.contribution).run();
    }
    for (const auto &w : g.whatifs) {
      st_whatif.bind(1, run).bind(2, g.label).bind(3, w.key).bind(4, w.var_after_ns2);
      st_whatif.bind(5, w.var_drop).bind(6, w.p99_after_ns).bind(7, w.p99_drop).run();
    }
  }
  tx.commit();
  return run;
}

namespace {

std::int64_t latest_run(ws::Database &db, int iteration) {
  auto st = db.prepare("SELECT id FROM analysis_runs WHERE iteration = ? ORDER BY id DESC LIMIT 1");
  st.bind(1, iteration);
  return st.step() ? st.int64(0) : -1;
}

// The latest run of `iteration`, or AnalysisError when none was stored.
std::int64_t require_run(ws::Database &db, int iteration) {
  std::int64_t run = latest_run(db, iteration);
  if (run < 0)
    throw AnalysisError(db.path().string() + ": no analysis stored for iteration " +
                        std::to_string(iteration) + " (run `vprof analyze` first)");
  return run;
}
std::vector<std::string> top_keys(ws::Database &db, std::int64_t run, int k) {
  std::vector<std::string> keys;
  auto st =
      db.prepare("SELECT key FROM factors WHERE run = ? AND label = '' ORDER BY rank LIMIT ?");
  st.bind(1, run).bind(2, k);
  while (st.step())
    keys.push_back(st.text(0));
  return keys;
}

} // namespace

ExpandResult expand(ws::Database &db, int iteration, int k, int max_iterations) {
  ensure_tables(db);
  ExpandResult er;
  er.next_iteration = iteration + 1;
  std::int64_t run = require_run(db, iteration);
  er.top_keys = top_keys(db, run, k);
  // A run that dropped records saw only the start of some threads' work: its ranking
  // never decides the stopping rule (the loop goes on expanding; docs/analyzer.md).
  auto dropped = [&](std::int64_t r) {
    auto st = db.prepare("SELECT dropped FROM analysis_runs WHERE id = ?");
    st.bind(1, r);
    return st.step() && st.int64(0) > 0;
  };
  if (iteration > 0 && !dropped(run)) {
    std::int64_t prev = latest_run(db, iteration - 1);
    if (prev >= 0 && !dropped(prev)) {
      auto old = top_keys(db, prev, k);
      std::set<std::string> a(old.begin(), old.end()), b(er.top_keys.begin(), er.top_keys.end());
      if (a == b && !a.empty()) {
        er.stop = true;
        er.reason = "top-k unchanged";
        return er;
      }
    }
  }
  if (iteration + 1 >= max_iterations) {
    er.stop = true;
    er.reason = "iteration budget reached";
    return er;
  }
  std::set<std::int64_t> plan;
  {
    auto st = db.prepare("SELECT function FROM plans WHERE iteration = ?");
    st.bind(1, iteration);
    while (st.step())
      plan.insert(st.int64(0));
  }
  // Candidate functions per factor side.
  auto node_row = db.prepare("SELECT kind, function, site, path FROM tree_nodes WHERE run = ? AND "
                             "label = '' AND node = ?");
  auto waker_kids = db.prepare(
      "SELECT function, node, kind FROM tree_nodes WHERE run = ? AND label = '' AND parent = ?");
  auto callees = db.prepare("SELECT DISTINCT c.callee FROM calls c JOIN functions f ON f.id = "
                            "c.callee WHERE c.caller = ? AND f.defined = 1");
  auto annotated = db.prepare("SELECT id FROM functions WHERE annotated = 1");
  auto defined = db.prepare("SELECT defined FROM functions WHERE id = ?");
  auto is_defined = [&](std::int64_t f) {
    defined.reset();
    defined.bind(1, f);
    return defined.step() && defined.int64(0) != 0;
  };
  std::vector<std::pair<std::int64_t, std::string>> additions;
  std::set<std::int64_t> added;
  auto add = [&](std::int64_t f, const std::string &key) {
    if (f > 0 && !plan.count(f) && !added.count(f) && is_defined(f)) {
      added.insert(f);
      additions.push_back({f, key});
    }
  };
  auto expand_function = [&](std::int64_t f, const std::string &key) {
    add(f, key);
    callees.reset();
    callees.bind(1, f);
    std::vector<std::int64_t> cs;
    while (callees.step())
      cs.push_back(callees.int64(0));
    for (auto c : cs)
      add(c, key);
  };
  // The k best-ranked factors that still have something to add: a factor whose functions
  // and callees are all planned already (a high-level function that stays on top) gives
  // its place to the next one, looking at most 4k ranks deep.
  auto factors = db.prepare("SELECT key, a, a_body, b, b_body FROM factors WHERE run = ? AND "
                            "label = '' ORDER BY rank LIMIT ?");
  factors.bind(1, run).bind(2, 4 * k);
  struct Side {
    std::int64_t node;
    bool body;
  };
  std::vector<std::pair<std::string, std::vector<Side>>> tops;
  while (factors.step()) {
    std::vector<Side> sides{{factors.int64(1), factors.int64(2) != 0}};
    if (!factors.is_null(3))
      sides.push_back({factors.int64(3), factors.int64(4) != 0});
    tops.push_back({factors.text(0), sides});
  }
  // The waker's work is the whole subtree below a wait node: its top frames are usually
  // planned already (the worker loop), the holder's real work sits deeper. Nested waits
  // are not entered: their own factors expand them.
  // The functions that release what a wait of this kind waits for: the static waker
  // candidates, used when the trace shows no instrumented frame of the waker.
  auto wakers_of_kind = [&](const std::string &wait_kind) {
    static const std::vector<std::pair<std::string, std::vector<std::string>>> primitives = {
        {"mutex", {"pthread_mutex_unlock"}},
        {"rwlock", {"pthread_rwlock_unlock"}},
        {"cond", {"pthread_cond_signal", "pthread_cond_broadcast"}},
        {"sem", {"sem_post"}},
        {"custom", {"vprof_wake"}}};
    std::vector<std::int64_t> fs;
    auto callers = db.prepare("SELECT DISTINCT c.caller FROM calls c JOIN functions p ON p.id = "
                              "c.callee JOIN functions d ON d.id = c.caller WHERE p.name = ? "
                              "AND d.defined = 1 ORDER BY c.caller");
    for (const auto &[kind, names] : primitives) {
      if (kind != wait_kind)
        continue;
      for (const auto &name : names) {
        callers.reset();
        callers.bind(1, name);
        while (callers.step())
          fs.push_back(callers.int64(0));
      }
    }
    return fs;
  };
  auto expand_waker = [&](std::int64_t wait_node, const std::string &key) {
    std::vector<std::int64_t> fs, frontier{wait_node};
    while (!frontier.empty()) {
      std::int64_t n = frontier.back();
      frontier.pop_back();
      waker_kids.reset();
      waker_kids.bind(1, run).bind(2, n);
      while (waker_kids.step()) {
        if (waker_kids.text(2) == "wait")
          continue;
        if (!waker_kids.is_null(0))
          fs.push_back(waker_kids.int64(0));
        frontier.push_back(waker_kids.int64(1));
      }
    }
    if (fs.empty()) {
      // No frame of the waker is instrumented: start from the functions that call the
      // waking primitive of this wait's kind (pthread_cond_signal for a condition wait...).
      node_row.reset();
      node_row.bind(1, run).bind(2, wait_node);
      if (node_row.step()) {
        std::string path = node_row.text(3);
        auto at = path.rfind("/wait:");
        if (at != std::string::npos)
          fs = wakers_of_kind(path.substr(at + 6));
      }
    }
    for (auto f : fs)
      expand_function(f, key);
  };
  int expanded_factors = 0;
  for (const auto &[key, sides] : tops) {
    if (expanded_factors == k)
      break;
    const std::size_t before = additions.size();
    for (const auto &s : sides) {
      node_row.reset();
      node_row.bind(1, run).bind(2, s.node);
      if (!node_row.step())
        continue;
      std::string kind = node_row.text(0);
      std::int64_t fn = node_row.is_null(1) ? 0 : node_row.int64(1);
      std::int64_t site = node_row.is_null(2) ? 0 : node_row.int64(2);
      if (kind == "root") {
        if (!s.body)
          continue;
        annotated.reset();
        std::vector<std::int64_t> roots;
        while (annotated.step())
          roots.push_back(annotated.int64(0));
        for (auto r : roots)
          expand_function(r, key);
      } else if (kind == "wait") {
        expand_waker(s.node, key);
      } else if (kind == "site" && !s.body) {
        if (fn)
          expand_function(fn, key);
        // Every function the call may reach: virtual overrides, indirect-call candidates.
        for (const auto &t : detail::call_targets(db, site))
          expand_function(t.function, key);
        // A call that blocked (pthread_cond_wait, a lock call) has wait children: the
        // time is the waker's, so expand into it.
        waker_kids.reset();
        waker_kids.bind(1, run).bind(2, s.node);
        std::vector<std::int64_t> waits;
        while (waker_kids.step())
          if (waker_kids.text(2) == "wait")
            waits.push_back(waker_kids.int64(1));
        for (auto w : waits)
          expand_waker(w, key);
      }
    }
    if (additions.size() > before)
      ++expanded_factors;
  }
  if (additions.empty()) {
    er.stop = true;
    er.reason = "all top factors are leaves";
    return er;
  }
  ws::Transaction tx(db);
  // (expanding a final plan by hand: the next plan is not final)
  auto copy = db.prepare("INSERT OR IGNORE INTO plans(iteration, function, reason) SELECT ?, "
                         "function, CASE WHEN reason LIKE 'final:%' THEN substr(reason, 7) "
                         "ELSE reason END FROM plans WHERE iteration = ?");
  copy.bind(1, iteration + 1).bind(2, iteration).run();
  auto ins = db.prepare("INSERT OR IGNORE INTO plans(iteration, function, reason) VALUES (?,?,?)");
  for (const auto &[f, key] : additions) {
    ins.bind(1, iteration + 1).bind(2, f).bind(3, "expand:" + key).run();
    er.added.push_back(f);
  }
  tx.commit();
  er.reason = "expanded";
  return er;
}

PruneResult prune(ws::Database &db, int iteration, double threshold) {
  ensure_tables(db);
  PruneResult pr;
  pr.next_iteration = iteration + 1;
  require_run(db, iteration); // throws when the iteration was not analysed
  std::set<std::int64_t> keep;
  {
    auto st = db.prepare("SELECT id FROM functions WHERE annotated = 1");
    while (st.step())
      keep.insert(st.int64(0));
  }
  auto site_fn = db.prepare("SELECT function FROM sites WHERE id = ?");
  auto number_after = [](const std::string &key, char sep) -> std::int64_t {
    auto at = key.rfind(sep);
    if (at == std::string::npos)
      return 0;
    try {
      return std::stoll(key.substr(at + 1));
    } catch (...) {
      return 0;
    }
  };
  // Places and waits of the latest run of every iteration up to this one: a run where one
  // outlier dominates Var(L) must not drop what the others showed to matter. A function's
  // own place counts only from runs whose plan held all its defined callees (before that
  // its "self time" was its whole time: the frontier of the plan, not its own work), and
  // from the last run, whose frontier is the loop's answer.
  auto callees = db.prepare("SELECT DISTINCT c.callee FROM calls c JOIN functions d ON d.id = "
                            "c.callee WHERE c.caller = ? AND d.defined = 1");
  auto in_plan = db.prepare("SELECT 1 FROM plans WHERE iteration = ? AND function = ?");
  auto self_time = [&](int it, std::int64_t f) {
    callees.reset();
    callees.bind(1, f);
    std::vector<std::int64_t> cs;
    while (callees.step())
      cs.push_back(callees.int64(0));
    for (auto c : cs) {
      in_plan.reset();
      in_plan.bind(1, it).bind(2, c);
      if (!in_plan.step())
        return false;
    }
    return true;
  };
  auto st = db.prepare(
      "SELECT p.key, r.iteration FROM places p JOIN analysis_runs r ON r.id = p.run WHERE "
      "p.label = '' AND (ABS(p.contribution) >= ?1 OR ABS(p.share) >= ?1) AND p.run IN "
      "(SELECT MAX(id) FROM analysis_runs WHERE iteration <= ?2 GROUP BY iteration) "
      "UNION SELECT w.key, r.iteration FROM waits w JOIN analysis_runs r ON r.id = w.run WHERE "
      "w.label = '' AND (ABS(w.contribution) >= ?1 OR ABS(w.share) >= ?1) AND w.run IN "
      "(SELECT MAX(id) FROM analysis_runs WHERE iteration <= ?2 GROUP BY iteration)");
  st.bind(1, threshold).bind(2, iteration);
  std::vector<std::pair<std::string, int>> hits;
  while (st.step())
    hits.push_back({st.text(0), static_cast<int>(st.int64(1))});
  for (const auto &[key, it] : hits) {
    if (key.rfind("s:", 0) == 0) {
      site_fn.reset();
      site_fn.bind(1, number_after(key, ':'));
      if (site_fn.step())
        keep.insert(site_fn.int64(0));
    } else if (key.rfind("f:", 0) == 0) {
      std::int64_t f = number_after(key, ':');
      if (it == iteration || self_time(it, f))
        keep.insert(f);
    } else if (key.rfind("x:", 0) == 0 || key.rfind("w:", 0) == 0) {
      // x:<callee>@<caller id>, w:<kind>@f:<id> (the function that waited)
      keep.insert(number_after(key, key[0] == 'x' ? '@' : ':'));
    }
  }
  std::vector<std::pair<std::int64_t, std::string>> kept;
  {
    auto plan = db.prepare("SELECT function, reason FROM plans WHERE iteration = ?");
    plan.bind(1, iteration);
    while (plan.step()) {
      if (keep.count(plan.int64(0)))
        kept.push_back({plan.int64(0), plan.text(1)});
      else
        ++pr.dropped;
    }
  }
  pr.kept = kept.size();
  if (pr.dropped == 0)
    return pr;
  ws::Transaction tx(db);
  auto ins = db.prepare("INSERT OR IGNORE INTO plans(iteration, function, reason) VALUES (?,?,?)");
  for (const auto &[f, reason] : kept)
    ins.bind(1, iteration + 1).bind(2, f).bind(3, "final:" + reason).run();
  tx.commit();
  pr.written = true;
  return pr;
}

bool is_final_plan(ws::Database &db, int iteration) {
  auto st = db.prepare("SELECT 1 FROM plans WHERE iteration = ? AND reason LIKE 'final:%' LIMIT 1");
  st.bind(1, iteration);
  return st.step();
}

} // namespace vprof::analyzer

namespace vprof::analyzer {

std::vector<IterationSummary> iteration_history(ws::Database &db) {
  ensure_tables(db);
  std::vector<IterationSummary> out;
  // the latest run of each iteration, its plan's size and its top place by contribution
  auto st = db.prepare(
      "SELECT r.iteration, r.intervals, r.records, r.dropped, "
      "  (SELECT COUNT(DISTINCT function) FROM plans p WHERE p.iteration = r.iteration), "
      "  (SELECT COUNT(*) FROM plans p WHERE p.iteration = r.iteration "
      "     AND p.reason LIKE 'final:%'), "
      "  (SELECT name FROM places pl WHERE pl.run = r.id AND pl.label = '' "
      "     ORDER BY contribution DESC LIMIT 1), "
      "  (SELECT contribution FROM places pl WHERE pl.run = r.id AND pl.label = '' "
      "     ORDER BY contribution DESC LIMIT 1) "
      "FROM analysis_runs r "
      "WHERE r.id = (SELECT MAX(id) FROM analysis_runs q WHERE q.iteration = r.iteration) "
      "ORDER BY r.iteration");
  while (st.step()) {
    IterationSummary s;
    s.iteration = static_cast<int>(st.int64(0));
    s.intervals = static_cast<std::uint64_t>(st.int64(1));
    s.records = static_cast<std::uint64_t>(st.int64(2));
    s.dropped = static_cast<std::uint64_t>(st.int64(3));
    s.plan_functions = static_cast<int>(st.int64(4));
    s.final_plan = st.int64(5) > 0;
    if (!st.is_null(6)) {
      s.top_place = st.text(6);
      s.top_contribution = st.real(7);
    }
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace vprof::analyzer

namespace vprof::analyzer {

int discard_results(ws::Database &db) {
  ensure_tables(db);
  int runs = 0;
  {
    auto st = db.prepare("SELECT COUNT(*) FROM analysis_runs");
    if (st.step())
      runs = static_cast<int>(st.int64(0));
  }
  ws::Transaction tx(db);
  for (const char *table :
       {"whatif", "waits", "places", "factors", "tree_nodes", "interval_stats", "analysis_runs"})
    db.exec(std::string("DELETE FROM ") + table);
  tx.commit();
  return runs;
}

} // namespace vprof::analyzer
