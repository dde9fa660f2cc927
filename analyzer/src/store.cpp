// Storing an analysis run in the workspace's result tables (the schema is the workspace's,
// analyzer/workspace/src/schema.sql), the iteration history and discarding a history.
// docs/analyzer.md.
#include "node_kind.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <algorithm>

namespace vprof::analyzer {
namespace {

using detail::kind_text;

const char *place_kind_text(Place::Kind k) {
  switch (k) {
  case Place::Kind::Call:
    return "call";
  case Place::Kind::Site:
    return "site";
  case Place::Kind::Wait:
    return "wait";
  case Place::Kind::Function:
    break;
  }
  return "function";
}

} // namespace

std::int64_t store(ws::Database &db, const AnalysisResult &res, int iteration) {
  ws::Transaction tx(db);
  double worst = 0;
  for (const auto &g : res.groups)
    worst = std::max(worst, g.max_residual);
  db.prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
             "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
             "ticks_per_second, max_residual, max_stream_records, ranking) "
             "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
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
      .bind(13, static_cast<std::int64_t>(res.max_stream_records))
      .bind(14, res.ranking == Ranking::Net ? "net" : "vprofiler")
      .run();
  std::int64_t run = db.last_insert_rowid();
  auto st_stats = db.prepare("INSERT INTO interval_stats VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_node = db.prepare("INSERT INTO tree_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_factor =
      db.prepare("INSERT INTO factors VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  auto st_whatif = db.prepare("INSERT INTO whatif VALUES (?,?,?,?,?,?,?)");
  auto st_wait = db.prepare("INSERT INTO waits VALUES (?,?,?,?,?,?,?,?,?,?)");
  auto st_place = db.prepare("INSERT INTO places VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
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
      st_factor.bind(16, f.specificity).bind(17, f.score).bind(18, f.leaf ? 1 : 0);
      st_factor.bind(19, f.net_share).bind(20, f.vprofiler_score).run();
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
      st_place.bind(14, p.waker ? 1 : 0).bind(15, via).bind(16, place_kind_text(p.kind));
      if (p.holder)
        st_place.bind(17, p.holder);
      else
        st_place.bind_null(17);
      if (p.node >= 0)
        st_place.bind(18, p.node);
      else
        st_place.bind_null(18);
      st_place.bind(19, p.vprofiler_score).run();
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
  std::vector<ws::SiteCalls> calls;
  for (std::size_t site = 0; site < res.site_calls.size(); ++site)
    if (res.site_calls[site])
      calls.push_back({static_cast<ws::SiteId>(site), res.site_calls[site]});
  ws::store_site_calls(db, run, calls);
  tx.commit();
  return run;
}

} // namespace vprof::analyzer

namespace vprof::analyzer {

std::vector<IterationSummary> iteration_history(ws::Database &db) {
  std::vector<IterationSummary> out;
  // the latest run of each iteration, its plan's size and its top place by contribution
  auto st = db.prepare(
      "SELECT r.iteration, r.intervals, r.records, r.dropped, "
      "  (SELECT COUNT(DISTINCT function) FROM plans p WHERE p.iteration = r.iteration), "
      "  (SELECT COUNT(*) FROM plans p WHERE p.iteration = r.iteration "
      "     AND p.final = 1), "
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
  int runs = 0;
  {
    auto st = db.prepare("SELECT COUNT(*) FROM analysis_runs");
    if (st.step())
      runs = static_cast<int>(st.int64(0));
  }
  ws::Transaction tx(db);
  for (const char *table : {"site_calls", "whatif", "waits", "places", "factors", "tree_nodes",
                            "interval_stats", "analysis_runs"})
    db.exec(std::string("DELETE FROM ") + table);
  tx.commit();
  return runs;
}

} // namespace vprof::analyzer
