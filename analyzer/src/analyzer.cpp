// analyze_trace: the stages of stages.hpp in order, one file each (latency.cpp, db_facts.cpp,
// load.cpp, naming.cpp, places.cpp, trees.cpp, place_stats.cpp, ranking.cpp, bootstrap.cpp,
// noise_floor.cpp, what_if.cpp; formulas: docs/statistics.md).
#include "vprof/analyzer.hpp"

#include "stages.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_analysis.hpp"
#include "vprof/workspace_rows.hpp"

#include <Eigen/Dense>

#include <random>

namespace vprof::analyzer {
namespace detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

} // namespace detail

AnalysisResult analyze(const std::filesystem::path &trace_dir, ws::Database *db,
                       const AnalyzeOptions &opt) {
  auto t = trace::Trace::open(trace_dir);
  return analyze_trace(t, db, opt);
}

AnalysisResult analyze(const std::vector<std::filesystem::path> &trace_dirs, ws::Database *db,
                       const AnalyzeOptions &opt) {
  auto t = trace::Trace::open(trace_dirs);
  return analyze_trace(t, db, opt);
}

AnalysisResult analyze_trace(const trace::Trace &tr, ws::Database *db, const AnalyzeOptions &opt) {
  using namespace detail;
  // the walk hands the finished intervals over a block at a time: their node times go to
  // the store (a temporary file), their labels counted for the groups
  NodeTimeStore store;
  std::vector<std::uint64_t> label_counts;
  EngineOptions eopt = engine_options(db);
  eopt.sink = [&](const std::vector<IntervalRec> &ivs, const std::vector<NodeTime> &times) {
    store.append(ivs, times);
    for (const auto &r : ivs) {
      if (r.label >= label_counts.size())
        label_counts.resize(r.label + 1);
      ++label_counts[r.label];
    }
  };
  EngineOutput eo = run_engine(tr, eopt);
  AnalysisResult res = load_result(tr, eo);
  res.ranking = opt.ranking;
  const DbFacts facts = read_db(db, eo.nodes);
  name_nodes(eo, facts, res);
  const NodeFacts nf = heights_and_specificity(facts, res);
  const PlaceTable pt = assign_places(res, facts);
  std::mt19937_64 rng(opt.seed);
  for (auto &group : interval_groups(label_counts, eo.labels, opt.min_group_size)) {
    GroupResult gr;
    gr.label = group.label;
    const GroupTimes gt = group_times(store, eo.nodes, eo.ticks_per_second, group);
    // the latency's order statistics every stage wants (its percentiles, the tail's
    // threshold and its bootstrap candidates' cut), found together, with the histogram
    std::vector<std::uint64_t> ranks;
    for (double q : {0.50, 0.95, 0.99})
      for (auto r : percentile_rank_pair(gt, q))
        ranks.push_back(r);
    if (opt.tail_percentile > 0 && opt.tail_percentile < 100) {
      for (auto r : percentile_rank_pair(gt, opt.tail_percentile / 100))
        ranks.push_back(r);
      ranks.push_back(tail_cut_rank(group.count, opt.tail_percentile));
    }
    latency_ranks(gt, ranks, &gr.histogram);
    gr.latency = latency_stats(gt);
    Terms terms = variance_trees(res, facts, nf, pt, gt, opt, gr);
    place_stats(nf, pt, gt, opt, gr);
    wait_stats(res, nf, pt, gt, gr);
    std::vector<std::size_t> order =
        rank_factors(res, nf, terms.factors, opt.max_factors, &pt, &gr);
    for (auto r : order)
      gr.factors.push_back(terms.factors[r]);
    std::mt19937_64 tail_rng = rng; // the factors' resamples: the other results stay as they were
    bootstrap_intervals(gt, terms, order, opt, rng, gr, res.notes);
    tail_stats(pt, gt, opt, tail_rng, gr, res.notes);
    slow_group_stats(pt, gt, gr);
    apply_noise_floor(gr, order, opt.noise_share);
    gr.answer = answer_of(res, gr);
    what_if(gt, terms, order, opt.whatif_factors, gr);
    res.groups.push_back(std::move(gr));
  }
  return res;
}

} // namespace vprof::analyzer
