// Storing an analysis run in the workspace's result tables (the schema is the workspace's,
// workspace/src/schema.sql), the iteration history and discarding a history.
// docs/analyzer.md.
#include "vprof/analyzer.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_analysis.hpp"

#include <algorithm>

namespace vprof::analyzer {
namespace {

ws::NodeKind node_kind(Node::Kind k) {
  switch (k) {
  case Node::Kind::Site:
    return ws::NodeKind::Site;
  case Node::Kind::Wait:
    return ws::NodeKind::Wait;
  case Node::Kind::Untracked:
    return ws::NodeKind::Untracked;
  case Node::Kind::Root:
    break;
  }
  return ws::NodeKind::Root;
}

ws::PlaceKind place_kind(Place::Kind k) {
  switch (k) {
  case Place::Kind::Call:
    return ws::PlaceKind::Call;
  case Place::Kind::Site:
    return ws::PlaceKind::Site;
  case Place::Kind::Wait:
    return ws::PlaceKind::Wait;
  case Place::Kind::Outside:
    return ws::PlaceKind::Outside;
  case Place::Kind::Function:
    break;
  }
  return ws::PlaceKind::Function;
}

ws::AnalysisRunEntry run_entry(const AnalysisResult &res, int iteration) {
  ws::AnalysisRunEntry r;
  r.iteration = iteration;
  r.trace_dir = res.trace_dir;
  r.records = res.records;
  r.streams = res.streams;
  r.processes = res.processes;
  r.dropped = res.dropped;
  r.intervals = res.intervals;
  r.intervals_unfinished = res.intervals_unfinished;
  r.wake_edges = res.wake_edges;
  r.root_height = res.H;
  r.ticks_per_second = res.ticks_per_second;
  for (const auto &g : res.groups)
    r.max_residual = std::max(r.max_residual, g.max_residual);
  r.max_stream_records = res.max_stream_records;
  r.critical_records = res.critical_records;
  r.ranking = res.ranking == Ranking::Net ? ws::Ranking::Net : ws::Ranking::VProfiler;
  r.cpu_ns = res.cpu_ns;
  r.cpu_processes = res.cpu_processes;
  r.span_ns = res.span_ns;
  r.cores = res.cores;
  return r;
}

ws::IntervalStatsEntry stats_entry(const GroupResult &g) {
  const auto &l = g.latency;
  return {.count = l.count,
          .mean_ns = l.mean_ns,
          .var_ns2 = l.var_ns2,
          .cv = l.cv,
          .min_ns = l.min_ns,
          .p50_ns = l.p50_ns,
          .p95_ns = l.p95_ns,
          .p99_ns = l.p99_ns,
          .max_ns = l.max_ns,
          .max_residual = g.max_residual};
}

ws::TreeNodeEntry node_entry(const Node &n, const NodeStats &ns) {
  ws::TreeNodeEntry e;
  e.node = n.id;
  e.parent = n.parent;
  e.path = n.path;
  e.name = n.name;
  e.kind = node_kind(n.kind);
  e.site = n.site;
  e.function = n.function;
  e.height = n.height;
  e.mean_ns = ns.mean_ns;
  e.var_ns2 = ns.var_ns2;
  e.share = ns.share;
  e.body_mean_ns = ns.body_mean_ns;
  e.body_var_ns2 = ns.body_var_ns2;
  e.expanded = ns.expanded;
  e.residual = ns.residual;
  return e;
}

ws::FactorEntry factor_entry(const Factor &f, int rank) {
  ws::FactorEntry e;
  e.rank = rank;
  e.key = f.key;
  e.name = f.name;
  e.covariance = f.kind == Factor::Kind::Covariance;
  e.parent = f.parent;
  e.a = f.a;
  e.b = f.b;
  e.a_body = f.a_body;
  e.b_body = f.b_body;
  e.term_ns2 = f.term_ns2;
  e.share = f.share;
  e.has_ci = f.has_ci;
  e.share_lo = f.share_lo;
  e.share_hi = f.share_hi;
  e.specificity = f.specificity;
  e.score = f.score;
  e.leaf = f.leaf;
  e.net_share = f.net_share;
  e.vprofiler_score = f.vprofiler_score;
  return e;
}

// Its contribution by way: "own path=0.02; [wait:cond] in f=0.26".
std::string via_text(const Place &p) {
  std::string via;
  for (const auto &[w, c] : p.via)
    via += (via.empty() ? "" : "; ") + (w.empty() ? std::string("own path") : w) + "=" +
           std::to_string(c);
  return via;
}

ws::PlaceEntry place_entry(const Place &p, int rank, std::string_view via) {
  ws::PlaceEntry e;
  e.rank = rank;
  e.key = p.key;
  e.name = p.name;
  e.kind = place_kind(p.kind);
  e.function = p.function;
  e.holder = p.holder;
  e.node = p.node;
  e.contexts = p.contexts;
  e.mean_ns = p.mean_ns;
  e.var_ns2 = p.var_ns2;
  e.share = p.share;
  e.contribution = p.contribution;
  e.specificity = p.specificity;
  e.score = p.score;
  e.vprofiler_score = p.vprofiler_score;
  e.waker = p.waker;
  e.via = via;
  e.outside_waker = p.outside_waker;
  return e;
}

ws::WaitEntry wait_entry(const Place &w, int rank) {
  return {.rank = rank,
          .key = w.key,
          .name = w.name,
          .contexts = w.contexts,
          .mean_ns = w.mean_ns,
          .var_ns2 = w.var_ns2,
          .share = w.share,
          .contribution = w.contribution};
}

} // namespace

std::int64_t store(ws::Database &db, const AnalysisResult &res, int iteration) {
  ws::Transaction tx(db);
  ws::RunId run = ws::insert_analysis_run(db, run_entry(res, iteration));
  ws::ResultWriter out(db, run);
  for (const auto &g : res.groups) {
    out.interval_stats(g.label, stats_entry(g));
    for (const auto &ns : g.nodes)
      out.tree_node(g.label, node_entry(res.nodes[ns.node], ns));
    int rank = 0;
    for (const auto &f : g.factors)
      out.factor(g.label, factor_entry(f, ++rank));
    int prank = 0;
    for (const auto &p : g.places) {
      std::string via = via_text(p);
      out.place(g.label, place_entry(p, ++prank, via));
    }
    int wrank = 0;
    for (const auto &w : g.waits)
      out.wait(g.label, wait_entry(w, ++wrank));
    for (const auto &w : g.whatifs)
      out.whatif(g.label, {.key = w.key,
                           .var_after_ns2 = w.var_after_ns2,
                           .var_drop = w.var_drop,
                           .p99_after_ns = w.p99_after_ns,
                           .p99_drop = w.p99_drop});
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
  for (auto &r : ws::iteration_rows(db)) {
    IterationSummary s;
    s.iteration = r.iteration;
    s.intervals = r.intervals;
    s.records = r.records;
    s.dropped = r.dropped;
    s.plan_functions = r.plan_functions;
    s.final_plan = r.final_functions > 0;
    if (r.top_place) {
      s.top_place = std::move(*r.top_place);
      s.top_contribution = r.top_contribution;
    }
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace vprof::analyzer

namespace vprof::analyzer {

int discard_results(ws::Database &db) {
  int runs = ws::count_analysis_runs(db);
  ws::Transaction tx(db);
  ws::delete_analysis_results(db);
  tx.commit();
  return runs;
}

} // namespace vprof::analyzer
