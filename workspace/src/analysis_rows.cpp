// The analyzer's rows of the workspace (workspace_analysis.hpp): site facts, stored
// results, the iteration history.
#include "vprof/workspace_analysis.hpp"

namespace vprof::ws {
namespace {

// A height column: -1 for NULL (not computed).
int height_at(const Statement &st, int col) {
  return st.is_null(col) ? -1 : static_cast<int>(st.int64(col));
}

// A function id, or NULL for 0.
void bind_id(Statement &st, int index, FunctionId id) {
  if (id)
    st.bind(index, id);
  else
    st.bind_null(index);
}

} // namespace

// ---- what the analysis reads ------------------------------------------------------

SiteFactsReader::SiteFactsReader(Database &db)
    : st_(db.prepare("SELECT s.kind, s.function, s.callee, s.callee_name, s.file, s.line, fn.name, "
                     "fn.height, ce.height, ce.name, "
                     "(SELECT COUNT(*) FROM calls c JOIN functions d ON d.id = c.callee "
                     "  WHERE c.caller = COALESCE(s.callee, s.function) AND d.defined = 1), "
                     "ce.defined "
                     "FROM sites s JOIN functions fn ON fn.id = s.function "
                     "LEFT JOIN functions ce ON ce.id = s.callee WHERE s.id = ?")) {}

std::optional<SiteFacts> SiteFactsReader::read(SiteId site) {
  st_.reset();
  st_.bind(1, site);
  if (!st_.step())
    return std::nullopt;
  SiteFacts f;
  f.body = st_.text(0) == "body";
  f.function = st_.int64(1);
  f.callee = st_.is_null(2) ? 0 : st_.int64(2);
  f.callee_name = st_.is_null(9) ? st_.text(3) : st_.text(9);
  f.file = st_.text(4);
  f.line = static_cast<int>(st_.int64(5));
  f.function_name = st_.text(6);
  f.function_height = height_at(st_, 7);
  f.callee_height = height_at(st_, 8);
  f.has_defined_callees = st_.int64(10) > 0;
  f.callee_defined = !st_.is_null(11) && st_.int64(11) != 0;
  return f;
}

std::vector<FunctionId> site_function_table(Database &db, SiteId limit) {
  auto st = db.prepare("SELECT id, function FROM sites WHERE id >= 0 AND id < ?");
  st.bind(1, limit);
  std::vector<FunctionId> out;
  while (st.step()) {
    auto id = static_cast<std::size_t>(st.int64(0));
    if (id >= out.size())
      out.resize(id + 1, 0);
    out[id] = st.int64(1);
  }
  return out;
}

// ---- storing an analysed run ------------------------------------------------------

RunId insert_analysis_run(Database &db, const AnalysisRunEntry &r) {
  db.prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
             "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
             "ticks_per_second, max_residual, max_stream_records, ranking, cpu_ns, "
             "cpu_processes, span_ns, cores, critical_records) VALUES "
             "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
      .bind(1, r.iteration)
      .bind(2, r.trace_dir)
      .bind(3, static_cast<std::int64_t>(r.records))
      .bind(4, static_cast<std::int64_t>(r.streams))
      .bind(5, static_cast<std::int64_t>(r.processes))
      .bind(6, static_cast<std::int64_t>(r.dropped))
      .bind(7, static_cast<std::int64_t>(r.intervals))
      .bind(8, static_cast<std::int64_t>(r.intervals_unfinished))
      .bind(9, static_cast<std::int64_t>(r.wake_edges))
      .bind(10, r.root_height)
      .bind(11, r.ticks_per_second)
      .bind(12, r.max_residual)
      .bind(13, static_cast<std::int64_t>(r.max_stream_records))
      .bind(14, r.ranking == Ranking::Net ? "net" : "vprofiler")
      .bind(15, r.cpu_ns)
      .bind(16, static_cast<std::int64_t>(r.cpu_processes))
      .bind(17, r.span_ns)
      .bind(18, static_cast<std::int64_t>(r.cores))
      .bind(19, static_cast<std::int64_t>(r.critical_records))
      .run();
  return db.last_insert_rowid();
}

ResultWriter::ResultWriter(Database &db, RunId run)
    : run_(run), stats_(db.prepare("INSERT INTO interval_stats VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")),
      node_(db.prepare("INSERT INTO tree_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
      factor_(db.prepare("INSERT INTO factors VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
      whatif_(db.prepare("INSERT INTO whatif VALUES (?,?,?,?,?,?,?)")),
      wait_(db.prepare("INSERT INTO waits VALUES (?,?,?,?,?,?,?,?,?,?)")),
      place_(db.prepare("INSERT INTO places VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")) {}

void ResultWriter::interval_stats(std::string_view label, const IntervalStatsEntry &e) {
  stats_.bind(1, run_).bind(2, label).bind(3, static_cast<std::int64_t>(e.count));
  stats_.bind(4, e.mean_ns).bind(5, e.var_ns2).bind(6, e.cv).bind(7, e.min_ns);
  stats_.bind(8, e.p50_ns).bind(9, e.p95_ns).bind(10, e.p99_ns).bind(11, e.max_ns);
  stats_.bind(12, e.max_residual).run();
}

void ResultWriter::tree_node(std::string_view label, const TreeNodeEntry &e) {
  node_.bind(1, run_).bind(2, label).bind(3, e.node);
  if (e.parent < 0)
    node_.bind_null(4);
  else
    node_.bind(4, e.parent);
  node_.bind(5, e.path).bind(6, node_kind_text(e.kind));
  if (e.kind == NodeKind::Site)
    node_.bind(7, e.site);
  else
    node_.bind_null(7);
  bind_id(node_, 8, e.function);
  node_.bind(9, e.name);
  if (e.height >= 0)
    node_.bind(10, e.height);
  else
    node_.bind_null(10);
  node_.bind(11, e.mean_ns).bind(12, e.var_ns2).bind(13, e.share);
  node_.bind(14, e.body_mean_ns).bind(15, e.body_var_ns2);
  node_.bind(16, e.expanded ? 1 : 0).bind(17, e.residual).run();
}

void ResultWriter::factor(std::string_view label, const FactorEntry &e) {
  factor_.bind(1, run_).bind(2, label).bind(3, e.rank).bind(4, e.key);
  factor_.bind(5, e.covariance ? "cov" : "var");
  factor_.bind(6, e.parent).bind(7, e.a).bind(8, e.a_body ? 1 : 0);
  if (e.b >= 0)
    factor_.bind(9, e.b).bind(10, e.b_body ? 1 : 0);
  else
    factor_.bind_null(9).bind_null(10);
  factor_.bind(11, e.name).bind(12, e.term_ns2).bind(13, e.share);
  if (e.has_ci)
    factor_.bind(14, e.share_lo).bind(15, e.share_hi);
  else
    factor_.bind_null(14).bind_null(15);
  factor_.bind(16, e.specificity).bind(17, e.score).bind(18, e.leaf ? 1 : 0);
  factor_.bind(19, e.net_share).bind(20, e.vprofiler_score).run();
}

void ResultWriter::place(std::string_view label, const PlaceEntry &e) {
  place_.bind(1, run_).bind(2, label).bind(3, e.rank).bind(4, e.key).bind(5, e.name);
  bind_id(place_, 6, e.function);
  place_.bind(7, e.contexts).bind(8, e.mean_ns).bind(9, e.var_ns2).bind(10, e.share);
  place_.bind(11, e.contribution).bind(12, e.specificity).bind(13, e.score);
  place_.bind(14, e.waker ? 1 : 0).bind(15, e.via).bind(16, place_kind_text(e.kind));
  bind_id(place_, 17, e.holder);
  if (e.node >= 0)
    place_.bind(18, e.node);
  else
    place_.bind_null(18);
  place_.bind(19, e.vprofiler_score).bind(20, e.outside_waker ? 1 : 0).run();
}

void ResultWriter::wait(std::string_view label, const WaitEntry &e) {
  wait_.bind(1, run_).bind(2, label).bind(3, e.rank).bind(4, e.key).bind(5, e.name);
  wait_.bind(6, e.contexts).bind(7, e.mean_ns).bind(8, e.var_ns2).bind(9, e.share);
  wait_.bind(10, e.contribution).run();
}

void ResultWriter::whatif(std::string_view label, const WhatIfEntry &e) {
  whatif_.bind(1, run_).bind(2, label).bind(3, e.key).bind(4, e.var_after_ns2);
  whatif_.bind(5, e.var_drop).bind(6, e.p99_after_ns).bind(7, e.p99_drop).run();
}

// ---- the history ------------------------------------------------------------------

std::vector<IterationRow> iteration_rows(Database &db) {
  // the latest run of each iteration, its plan's size and its answer (the first ranked place)
  auto st = db.prepare(
      "SELECT r.iteration, r.intervals, r.records, r.dropped, "
      "  (SELECT COUNT(DISTINCT function) FROM plans p WHERE p.iteration = r.iteration), "
      "  (SELECT COUNT(*) FROM plans p WHERE p.iteration = r.iteration "
      "     AND p.final = 1), "
      "  (SELECT name FROM places pl WHERE pl.run = r.id AND pl.label = '' "
      "     ORDER BY rank LIMIT 1), "
      "  (SELECT contribution FROM places pl WHERE pl.run = r.id AND pl.label = '' "
      "     ORDER BY rank LIMIT 1) "
      "FROM analysis_runs r "
      "WHERE r.id = (SELECT MAX(id) FROM analysis_runs q WHERE q.iteration = r.iteration) "
      "ORDER BY r.iteration");
  std::vector<IterationRow> out;
  while (st.step()) {
    IterationRow r;
    r.iteration = static_cast<int>(st.int64(0));
    r.intervals = static_cast<std::uint64_t>(st.int64(1));
    r.records = static_cast<std::uint64_t>(st.int64(2));
    r.dropped = static_cast<std::uint64_t>(st.int64(3));
    r.plan_functions = static_cast<int>(st.int64(4));
    r.final_functions = static_cast<int>(st.int64(5));
    if (!st.is_null(6)) {
      r.top_place = st.text(6);
      r.top_contribution = st.real(7);
    }
    out.push_back(std::move(r));
  }
  return out;
}

int count_analysis_runs(Database &db) {
  auto st = db.prepare("SELECT COUNT(*) FROM analysis_runs");
  return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

void delete_analysis_results(Database &db) {
  for (const char *table : {"site_calls", "whatif", "waits", "places", "factors", "tree_nodes",
                            "interval_stats", "analysis_runs"})
    db.exec(std::string("DELETE FROM ") + table);
}

} // namespace vprof::ws
