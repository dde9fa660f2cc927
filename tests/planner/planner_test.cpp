// Tests of vprof::planner over a hand-made workspace: one analysed run whose call counts
// (site_calls) make one callee hot and one cheap, so that the budget decides.
#include "vprof/planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;
namespace pl = vprof::planner;
namespace ws = vprof::ws;

namespace {

// serve (1, annotated) -> work (2) -> hot (3), cheap (4). Plan 0 = serve, work. The run:
// 100 intervals of `mean_ns`; per interval serve and work run once, hot 1000 times, cheap
// once. `hot_share` and `cheap_share` are the places' contributions.
struct Workspace {
  fs::path dir;
  std::unique_ptr<ws::Database> db;

  explicit Workspace(const std::string &name) {
    dir = fs::temp_directory_path() / ("vprof-planner-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    db = std::make_unique<ws::Database>(dir / "vprof.db");
    db->exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
             "(1,'serve','serve',1,2,1),(2,'work','work',1,1,0),(3,'hot','hot',1,0,0),"
             "(4,'cheap','cheap',1,0,0);"
             "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
             "(1,2,'direct','/s/a.c',5,3),(2,3,'direct','/s/a.c',9,3),"
             "(2,4,'direct','/s/a.c',10,3);"
             "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
             "(1,'body',1,NULL,NULL,'/s/a.c',4,1),(2,'call',1,2,'work','/s/a.c',5,3),"
             "(3,'body',2,NULL,NULL,'/s/a.c',8,1),(4,'call',2,3,'hot','/s/a.c',9,3),"
             "(5,'call',2,4,'cheap','/s/a.c',10,3),(6,'body',3,NULL,NULL,'/s/a.c',20,1),"
             "(7,'body',4,NULL,NULL,'/s/a.c',30,1);"
             "INSERT INTO plans(iteration, function, reason) VALUES (0,1,'root'),(0,2,'depth');");
  }
  ~Workspace() { fs::remove_all(dir); }

  // One analysed run of `iteration`; `counts` are ENTERs per site over 100 intervals.
  ws::RunId run(int iteration, double mean_ns, const std::vector<std::pair<int, int>> &counts,
                std::uint64_t max_stream = 0, double hot_share = 0.5, double cheap_share = 0.2,
                std::uint64_t intervals = 100) {
    std::uint64_t records = 0;
    for (auto [site, n] : counts)
      records += 2 * static_cast<std::uint64_t>(n);
    db->prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
                "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
                "ticks_per_second, max_residual, max_stream_records) VALUES "
                "(?, '/t', ?, 1, 1, 0, ?, 0, 0, 2, 1e9, 0, ?)")
        .bind(1, iteration)
        .bind(2, static_cast<std::int64_t>(records))
        .bind(3, static_cast<std::int64_t>(intervals))
        .bind(4, static_cast<std::int64_t>(max_stream))
        .run();
    ws::RunId id = db->last_insert_rowid();
    auto stats = db->prepare("INSERT INTO interval_stats(run, label, count, mean_ns) VALUES "
                             "(?, '', 100, ?)");
    stats.bind(1, id).bind(2, mean_ns).run();
    std::vector<ws::SiteCalls> calls;
    for (auto [site, n] : counts)
      calls.push_back({site, static_cast<std::uint64_t>(n)});
    ws::store_site_calls(*db, id, calls);
    // the tree: serve > work (call) > work body > hot (call), cheap (call)
    auto node = db->prepare("INSERT INTO tree_nodes(run, label, node, parent, path, kind, site, "
                            "function, name, mean_ns, expanded) VALUES (?, '', ?, ?, ?, ?, ?, ?, "
                            "?, ?, 0)");
    struct N {
      int node, parent;
      const char *path, *kind;
      int site, function;
      const char *name;
      double mean;
    };
    for (const N &n : {N{0, -1, "/", "root", 0, 0, "(interval)", mean_ns},
                       N{1, 0, "/s1", "site", 1, 1, "serve", mean_ns},
                       N{2, 1, "/s1/s2", "site", 2, 2, "work", mean_ns * 0.9},
                       N{3, 2, "/s1/s2/s3", "site", 3, 2, "work", mean_ns * 0.9},
                       N{4, 3, "/s1/s2/s3/s4", "site", 4, 3, "hot", mean_ns * 0.5},
                       N{5, 3, "/s1/s2/s3/s5", "site", 5, 4, "cheap", mean_ns * 0.01}}) {
      node.bind(1, id).bind(2, n.node);
      if (n.parent < 0)
        node.bind_null(3);
      else
        node.bind(3, n.parent);
      node.bind(4, n.path).bind(5, n.kind);
      if (n.site)
        node.bind(6, n.site).bind(7, n.function);
      else
        node.bind_null(6).bind_null(7);
      node.bind(8, n.name).bind(9, n.mean).run();
    }
    db->prepare("INSERT INTO factors(run, label, rank, key, kind, parent, a, a_body, name, "
                "term_ns2, share, specificity, score, leaf) VALUES (?, '', 1, 'var:/s1/s2', "
                "'var', 1, 2, 0, 'Var work', 1, 0.9, 1, 0.9, 0)")
        .bind(1, id)
        .run();
    auto place = db->prepare("INSERT INTO places(run, label, rank, key, name, function, "
                             "contexts, mean_ns, var_ns2, share, contribution, specificity, "
                             "score, waker, via, place_kind, node) VALUES (?, '', ?, ?, ?, ?, 1, "
                             "0, 0, ?, ?, ?, 0, 0, '', 'function', ?)");
    // cheap ranks first (its contribution makes it the answer), hot second
    place.bind(1, id).bind(2, 1).bind(3, "f:4").bind(4, "cheap").bind(5, 4);
    place.bind(6, cheap_share).bind(7, cheap_share).bind(8, 4.0).bind(9, 5).run();
    place.bind(1, id).bind(2, 2).bind(3, "f:3").bind(4, "hot").bind(5, 3);
    place.bind(6, hot_share).bind(7, 0.05).bind(8, 4.0).bind(9, 4).run();
    return id;
  }
};

// The fixture's work loops over hot: its own calibration would scale every estimate by 20,
// so the tests of the other rules turn calibration off.
pl::ExpandOptions options(double exploration = 0.10, double max_calibration = 1) {
  pl::ExpandOptions o;
  o.max_calibration = max_calibration;
  o.k = 1;
  o.max_iterations = 8;
  o.budget.exploration = exploration;
  o.budget.record_ns = 25;
  return o;
}

std::vector<std::int64_t> plan_of(ws::Database &db, int iteration) {
  std::vector<std::int64_t> out;
  for (const auto &r : ws::read_plan(db, iteration))
    out.push_back(r.function);
  return out;
}

// serve once, work once, hot 1000 times, cheap once per interval (100 intervals)
const std::vector<std::pair<int, int>> kCounts = {
    {1, 100}, {2, 100}, {3, 100}, {4, 100000}, {5, 100}};

// work's own place, ranked first in `run` with 0.7 of Var(L) (node 2: its call in serve).
void rank_work_first(Workspace &w, ws::RunId run) {
  w.db->prepare("INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, "
                "var_ns2, share, contribution, specificity, score, waker, via, place_kind, "
                "node) VALUES (?, '', 0, 'f:2', 'work', 2, 1, 0, 0, 0.7, 0.7, 1, 0, 0, '', "
                "'function', 2)")
      .bind(1, run)
      .run();
}

} // namespace

TEST(CostModel, CountsPerIntervalFromTheRunsSiteCalls) {
  Workspace w("cost");
  w.run(0, 1e6, kCounts);
  auto run = ws::latest_run(*w.db, 0);
  ASSERT_TRUE(run);
  pl::CostModel m(*w.db, *run, ws::read_plan(*w.db, 0));
  EXPECT_DOUBLE_EQ(m.records_per_interval(), 2008.0);
  EXPECT_DOUBLE_EQ(m.calls(3), 1000.0); // hot: from work's call site
  EXPECT_DOUBLE_EQ(m.calls(4), 1.0);
  EXPECT_DOUBLE_EQ(m.calls(99), -1.0); // seen by no probe
  EXPECT_TRUE(m.measured(2));
  EXPECT_FALSE(m.measured(3));
  // work: its body (2 records) and its two call sites (2000 + 2)
  EXPECT_DOUBLE_EQ(m.function_records(2), 2004.0);
  // a final plan leaves calls of the program's own functions unprobed
  EXPECT_DOUBLE_EQ(m.final_records(2, {4, 5}), 2.0);
  EXPECT_DOUBLE_EQ(m.predict_records(3), 2000.0); // 2 per call, no call sites inside
  EXPECT_DOUBLE_EQ(m.predict_records(4), 2.0);
}

// A callee named by many call sites is scaled by them only where their callers run: hot
// (seen called) names cheap twice, idle (never planned, never seen) names it five times.
TEST(CostModel, OnlyCallSitesInRunningCallersMakeACalleeHot) {
  Workspace w("sites");
  w.db->exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
             "(5,'idle','idle',1,1,0);"
             "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
             "(3,4,'direct','/s/a.c',21,3),(3,4,'direct','/s/a.c',22,3),"
             "(5,4,'direct','/s/b.c',1,3),(5,4,'direct','/s/b.c',2,3),"
             "(5,4,'direct','/s/b.c',3,3),(5,4,'direct','/s/b.c',4,3),"
             "(5,4,'direct','/s/b.c',5,3);");
  w.run(0, 1e6, kCounts);
  auto run = ws::latest_run(*w.db, 0);
  ASSERT_TRUE(run);
  pl::CostModel m(*w.db, *run, ws::read_plan(*w.db, 0));
  // work's one probed site, and hot's two (hot runs): 3 sites over 1 probed
  EXPECT_DOUBLE_EQ(m.calls(4), 3.0);
  EXPECT_DOUBLE_EQ(m.calls(3), 1000.0); // named by work alone

  // A utility named in more than kUtilityCallers functions runs under most of them: every
  // call site counts, seen running or not (PostgreSQL's pfree).
  std::string sql;
  for (int i = 0; i < pl::CostModel::kUtilityCallers; ++i) {
    int id = 100 + i;
    sql += "INSERT INTO functions(id, usr, name, defined, height) VALUES (" + std::to_string(id) +
           ",'u" + std::to_string(id) + "','u" + std::to_string(id) + "',1,1);" +
           "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES (" +
           std::to_string(id) + ",4,'direct','/s/u.c'," + std::to_string(id) + ",3);";
  }
  w.db->exec(sql);
  pl::CostModel utility(*w.db, *run, ws::read_plan(*w.db, 0));
  // 1 (work) + 2 (hot) + 5 (idle) + 100 callers' sites, over 1 probed
  EXPECT_DOUBLE_EQ(utility.calls(4), 108.0);
}

// A dispatcher called once per command costs its calls per interval, however many intervals
// the run has: serve, the loop around the commands, runs once per run and calls work once
// per command from inside its loop; counted per call of serve, that loop ran as often as
// the run had intervals and every candidate with a loop of its own (cheap loops over the
// replies) was priced as hot.
TEST(CostModel, ALoopAroundTheIntervalsDoesNotMakeACandidateHot) {
  for (int n : {100, 10000}) {
    Workspace w("dispatch-" + std::to_string(n));
    w.db->exec("UPDATE calls SET in_loop = 1 WHERE caller = 1;"
               "INSERT INTO functions(id, usr, name, defined, height) VALUES "
               "(5,'reply','reply',1,0);"
               "INSERT INTO calls(caller, callee, kind, file, line, col, in_loop) VALUES "
               "(4,5,'direct','/s/a.c',31,3,1);");
    // serve once in the run; work, hot and cheap once per command
    w.run(0, 1e6, {{1, 1}, {2, n}, {3, n}, {4, n}, {5, n}}, 0, 0.5, 0.2,
          static_cast<std::uint64_t>(n));
    auto run = ws::latest_run(*w.db, 0);
    ASSERT_TRUE(run);
    pl::CostModel m(*w.db, *run, ws::read_plan(*w.db, 0));
    EXPECT_DOUBLE_EQ(m.loop_trips(), 1.0) << n << " intervals";
    EXPECT_DOUBLE_EQ(m.calls(4), 1.0);
    // its body's pair and one pair for the one trip of its loop
    EXPECT_DOUBLE_EQ(m.predict_records(4), 4.0) << n << " intervals";
    EXPECT_NEAR(m.self_calibration(), 1.0, 1e-9);
  }
}

// Within the budget (10 % of 1 ms = 4000 records at 25 ns) the cheap callee joins the plan;
// the hot one would pass it and stays timed at its call site.
TEST(Expand, AHotCalleeStaysAtItsCallSite) {
  Workspace w("hot");
  w.run(0, 1e6, kCounts);
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_EQ(e.added, (std::vector<std::int64_t>{4}));
  ASSERT_EQ(e.refused.size(), 1u);
  EXPECT_EQ(e.refused[0].function, 3);
  EXPECT_NE(e.refused[0].why.find("call site"), std::string::npos);
  EXPECT_DOUBLE_EQ(e.budget_records, 4000.0);
  EXPECT_DOUBLE_EQ(e.predicted_records, 2010.0);
  EXPECT_EQ(plan_of(*w.db, 1), (std::vector<std::int64_t>{1, 2, 4}));
  // ten times the latency: both fit
  Workspace roomy("roomy");
  roomy.run(0, 1e7, kCounts);
  auto r = pl::expand(*roomy.db, 0, options());
  auto added = r.added;
  std::sort(added.begin(), added.end());
  EXPECT_EQ(added, (std::vector<std::int64_t>{3, 4}));
}

// An event loop's interval holds the probes of every command of its batch: the run's
// critical paths hold twice the records it wrote per interval (two commands a batch). A plan
// is priced by those: at twice the latency (budget 8000 records) the hot callee (2000
// records a command) would fit by records per interval (2008 + 2000 + 2), but on the
// critical path it costs 4000 more on top of the 4016 measured, and stays out.
TEST(Expand, APlanIsPricedByTheRecordsOnAnIntervalsCriticalPath) {
  Workspace w("batch");
  w.run(0, 2e6, kCounts);
  {
    auto run = ws::latest_run(*w.db, 0);
    ASSERT_TRUE(run);
    EXPECT_DOUBLE_EQ(pl::CostModel(*w.db, *run, ws::read_plan(*w.db, 0)).path_factor(), 1.0);
  }
  w.db->exec("UPDATE analysis_runs SET critical_records = 2 * records");
  auto run = ws::latest_run(*w.db, 0);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->critical_records, 2 * run->records);
  EXPECT_DOUBLE_EQ(pl::CostModel(*w.db, *run, ws::read_plan(*w.db, 0)).path_factor(), 2.0);
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_DOUBLE_EQ(e.path_factor, 2.0);
  EXPECT_DOUBLE_EQ(e.budget_records, 8000.0);
  EXPECT_DOUBLE_EQ(e.measured_records, 4016.0);
  EXPECT_EQ(e.added, (std::vector<std::int64_t>{4}));
  ASSERT_EQ(e.refused.size(), 1u);
  EXPECT_EQ(e.refused[0].function, 3);
  EXPECT_DOUBLE_EQ(e.predicted_records, 4020.0);
  // fewer records on the paths than written (threads off every path): records per interval
  Workspace off("offpath");
  off.run(0, 2e6, kCounts);
  off.db->exec("UPDATE analysis_runs SET critical_records = records / 2");
  auto o = pl::expand(*off.db, 0, options());
  EXPECT_DOUBLE_EQ(o.path_factor, 1.0);
  auto added = o.added;
  std::sort(added.begin(), added.end());
  EXPECT_EQ(added, (std::vector<std::int64_t>{3, 4}));
}

// Exploration holds its plans against the latency (what a run's probes perturb); the final
// plan against the machine's capacity per interval when that is less (the throughput it
// costs): 100 intervals of 100 ms overlapping within 50 ms on 2 cores = 1 ms each.
TEST(FinalPlan, TheFinalBudgetFollowsTheMachinesCapacityPerInterval) {
  auto counts = kCounts;
  counts.push_back({6, 100000});
  counts.push_back({7, 100});
  auto with_capacity = [&](const std::string &name, int cores) {
    auto w = std::make_unique<Workspace>(name);
    w->db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),"
                "(1,2,'depth'),(1,3,'expand'),(1,4,'expand')");
    w->run(1, 1e8, counts);
    w->db->exec("UPDATE analysis_runs SET span_ns = 5e7, cores = " + std::to_string(cores));
    return w;
  };
  pl::FinalOptions o;
  o.threshold = 0.01;
  auto unknown = with_capacity("capacity-unknown", 0); // an older run: the latency
  auto all = pl::final_plan(*unknown->db, 1, o);
  EXPECT_DOUBLE_EQ(all.budget_records, 50000.0); // 2 % of 100 ms at 40 ns
  EXPECT_FALSE(all.written) << "everything fits";
  auto two = with_capacity("capacity", 2);
  Workspace explore("capacity-explore");
  explore.run(0, 1e7, kCounts);
  explore.db->exec("UPDATE analysis_runs SET span_ns = 5e6, cores = 2"); // 100 µs each
  EXPECT_DOUBLE_EQ(pl::expand(*explore.db, 0, options()).budget_records, 40000.0)
      << "exploration: 10 % of the latency at 25 ns";
  auto fr = pl::final_plan(*two->db, 1, o);
  EXPECT_DOUBLE_EQ(fr.budget_records, 500.0); // 2 % of 1 ms
  ASSERT_TRUE(fr.written);
  ASSERT_EQ(fr.dropped_for_cost.size(), 1u);
  EXPECT_EQ(fr.dropped_for_cost[0].function, 3) << "hot's 2000 records pass it";
}

// No plan may overflow the stream cap: with the longest stream at 20 % of the cap, the
// budget is what keeps it under a quarter (the first prediction) or half (once a prediction
// was checked), whatever the latency allows.
TEST(Expand, TheStreamCapBoundsThePlan) {
  Workspace w("cap");
  pl::ExpandOptions o = options();
  o.budget.stream_cap_records = 2'000'000;
  w.run(0, 1e8, kCounts, 400'000); // 10 % of 100 ms: 400,000 records
  auto e = pl::expand(*w.db, 0, o);
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_NEAR(e.budget_records, 2008.0 * 0.25 / 0.2, 1e-6);
  EXPECT_EQ(e.added, (std::vector<std::int64_t>{4})) << "hot would pass a quarter of the cap";
  ws::write_plan_cost(*w.db, {0, 2008, 0, 4000});
  e = pl::expand(*w.db, 0, o);
  EXPECT_NEAR(e.budget_records, 2008.0 * 0.5 / 0.2, 1e-6);
}

// A run whose longest stream passed the stream cap (it dropped records) leaves no room
// however long the intervals: the stop names the stream cap, the limit the user can raise,
// not the probe budget the latency would still allow; no cap (0) bounds nothing.
TEST(Expand, AStopForTheStreamCapSaysStreamCap) {
  Workspace w("capped");
  pl::ExpandOptions o = options();
  o.budget.stream_cap_records = 1'000'000;
  w.run(0, 1e8, kCounts, 2'000'000); // latency budget 400,000 records; the cap's 251
  auto e = pl::expand(*w.db, 0, o);
  EXPECT_TRUE(e.stop);
  EXPECT_TRUE(e.stream_capped);
  EXPECT_EQ(e.reason.rfind("stream cap:", 0), 0u) << e.reason;
  EXPECT_NE(e.reason.find("stream_cap_mb = 15"), std::string::npos) << e.reason;
  EXPECT_EQ(e.reason.find("probe budget"), std::string::npos) << e.reason;
  ASSERT_FALSE(e.refused.empty());
  // the cheap ones are refused for the cap (the hot ones as hot), whatever their order
  EXPECT_TRUE(std::any_of(e.refused.begin(), e.refused.end(), [](const pl::Refusal &r) {
    return r.why.find("stream cap") != std::string::npos;
  }));
  o.budget.stream_cap_records = 0;
  auto free = pl::expand(*w.db, 0, o);
  EXPECT_FALSE(free.stream_capped);
  EXPECT_DOUBLE_EQ(free.budget_records, 400000.0);
}

// A run that cost more than the budget allows stops the expansion with the reason, and
// nothing is written.
TEST(Expand, NothingFitsStopsWithTheReason) {
  Workspace w("spent");
  w.run(0, 4e5, kCounts); // budget 1600 records < the 2008 measured
  auto e = pl::expand(*w.db, 0, options());
  EXPECT_TRUE(e.stop);
  EXPECT_NE(e.reason.find("probe budget spent"), std::string::npos) << e.reason;
  EXPECT_FALSE(e.stream_capped) << "the latency's budget, not the cap, was spent";
  EXPECT_TRUE(ws::read_plan(*w.db, 1).empty());
  EXPECT_THROW(pl::expand(*w.db, 3, options()), pl::PlanError);
}

// The final plan keeps the answer's chain whatever it costs, then what carried variance
// within the final budget: hot (share 0.5) costs 2000 records, past 2 % of 1 ms (800).
TEST(FinalPlan, KeepsTheAnswersChainAndDropsWhatTheBudgetCannotPay) {
  Workspace w("final");
  w.db->exec("INSERT INTO plans(iteration, function, reason, factor) VALUES "
             "(1,1,'root',NULL),(1,2,'depth',NULL),(1,3,'expand','var:/s1/s2'),"
             "(1,4,'expand','var:/s1/s2')");
  w.run(0, 1e6, kCounts);
  auto counts = kCounts;
  counts.push_back({6, 100000});
  counts.push_back({7, 100});
  w.run(1, 1e6, counts);
  pl::FinalOptions o;
  o.threshold = 0.01;
  auto fr = pl::final_plan(*w.db, 1, o);
  ASSERT_TRUE(fr.written);
  EXPECT_EQ(fr.answer.key, "f:4");
  EXPECT_EQ(fr.answer.chain, (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(plan_of(*w.db, 2), (std::vector<std::int64_t>{1, 2, 4}));
  ASSERT_EQ(fr.dropped_for_cost.size(), 1u);
  EXPECT_EQ(fr.dropped_for_cost[0].function, 3);
  EXPECT_TRUE(ws::is_final_plan(*w.db, 2));
  // with room for it, hot stays too
  Workspace roomy("final-roomy");
  roomy.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),"
                 "(1,2,'depth'),(1,3,'expand'),(1,4,'expand')");
  roomy.run(1, 1e8, counts);
  auto all = pl::final_plan(*roomy.db, 1, o);
  EXPECT_FALSE(all.written) << "nothing to drop";
  EXPECT_TRUE(all.dropped_for_cost.empty());
}

// An event loop's final plan: the answer (cheap) stays whatever it costs, but the functions
// above it are paid by every command. work runs 30 times an interval (60 records against a
// final budget of 50, 2 % of 100 µs): left out, and serve above it with it (the chain kept
// is contiguous), although serve is annotated — the interval marks need no probe.
TEST(FinalPlan, TheFunctionsAboveTheAnswerStayWithinTheFinalBudget) {
  Workspace w("final-above");
  w.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth'),"
             "(1,3,'expand'),(1,4,'expand')");
  w.run(1, 1e5, {{1, 100}, {2, 100}, {3, 3000}, {4, 100000}, {5, 100}, {6, 100000}, {7, 100}});
  pl::FinalOptions o;
  o.threshold = 0.01;
  auto fr = pl::final_plan(*w.db, 1, o);
  ASSERT_TRUE(fr.written);
  EXPECT_DOUBLE_EQ(fr.budget_records, 50.0);
  EXPECT_EQ(fr.answer.key, "f:4");
  EXPECT_EQ(fr.answer.function, 4);
  EXPECT_EQ(fr.answer.above, (std::vector<std::int64_t>{2, 1})) << "the nearest first";
  EXPECT_EQ(plan_of(*w.db, 2), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(fr.chain_kept, 1u);
  ASSERT_EQ(fr.left_out.size(), 2u);
  EXPECT_EQ(fr.left_out[0].name, "work");
  EXPECT_DOUBLE_EQ(fr.left_out[0].records, 60.0);
  EXPECT_EQ(fr.left_out[1].name, "serve") << "above work: not kept past the gap";
  ASSERT_EQ(fr.dropped_for_cost.size(), 1u);
  EXPECT_EQ(fr.dropped_for_cost[0].function, 3);
  EXPECT_DOUBLE_EQ(fr.predicted_records, 2.0);
}

// The final run of that plan saw cheap straight below the interval (its callers unprobed)
// and work no more: cheap stays the answer, below work (0.7 in iteration 1), because what the
// earlier runs observed above it still counts; its path comes from them.
TEST(FinalPlan, AFinalRunWithoutTheCallersKeepsTheAnswerBelowThem) {
  Workspace w("final-flat");
  w.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth'),"
             "(2,4,'expand')");
  ws::RunId first = w.run(1, 1e6, kCounts, 0, 0.05, 0.05);
  rank_work_first(w, first);
  ws::RunId flat = w.run(2, 1e6, kCounts, 0, 0.05, 0.3);
  w.db->prepare("DELETE FROM tree_nodes WHERE run = ? AND node IN (1, 2, 3, 4)")
      .bind(1, flat)
      .run();
  w.db->prepare("UPDATE tree_nodes SET parent = 0 WHERE run = ? AND node = 5").bind(1, flat).run();
  w.db->prepare("DELETE FROM places WHERE run = ? AND key = 'f:3'").bind(1, flat).run();
  auto a = pl::deepest_answer(*w.db, 2, 0.10);
  EXPECT_EQ(a.iteration, 2);
  EXPECT_EQ(a.key, "f:4") << "cheap lies below work although work contributed more";
  EXPECT_EQ(a.chain, (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(a.above, (std::vector<std::int64_t>{2, 1}));
}

// work (function 2, on the answer's chain) calls fsync at two sites and memcpy at one, each
// `calls` times over the 100 intervals; the fsync place carried 30 % of Var(L), memcpy's 0.1 %.
// The final plan's result and the lines of the call sites it times.
struct FinalWithCalls {
  pl::FinalResult fr;
  std::vector<int> lines;
};
FinalWithCalls final_with_outside_calls(const std::string &name, int calls) {
  Workspace w(name);
  w.db->exec("INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) "
             "VALUES (8,'call',2,NULL,'fsync','/s/a.c',11,3),(9,'call',2,NULL,'fsync','/s/a.c',"
             "12,3),(10,'call',2,NULL,'memcpy','/s/a.c',13,3);"
             "INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth'),"
             "(1,3,'expand'),(1,4,'expand')");
  auto counts = kCounts;
  counts.push_back({6, 100000}); // hot's body: past the final budget, dropped
  counts.push_back({7, 100});
  for (int site : {8, 9, 10})
    counts.push_back({site, calls});
  ws::RunId run = w.run(1, 1e6, counts);
  w.db->prepare("INSERT INTO tree_nodes(run, label, node, parent, path, kind, site, function, "
                "name, mean_ns, expanded) VALUES (?, '', 6, 3, '/s1/s2/s3/s8', 'site', 8, NULL, "
                "'fsync', 1, 0), (?, '', 7, 3, '/s1/s2/s3/s10', 'site', 10, NULL, 'memcpy', 1, 0)")
      .bind(1, run)
      .bind(2, run)
      .run();
  w.db->prepare("INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, "
                "var_ns2, share, contribution, specificity, score, waker, via, place_kind, "
                "holder, node) VALUES (?, '', 3, 'x:fsync@2', 'fsync() in work', NULL, 2, 0, 0, "
                "0.3, 0.3, 4, 0, 0, '', 'call', 2, 6), (?, '', 4, 'x:memcpy@2', 'memcpy() in "
                "work', NULL, 1, 0, 0, 0.001, 0.001, 4, 0, 0, '', 'call', 2, 7)")
      .bind(1, run)
      .bind(2, run)
      .run();
  pl::FinalOptions o;
  o.threshold = 0.01;
  auto fr = pl::final_plan(*w.db, 1, o);
  EXPECT_EQ(plan_of(*w.db, 2), (std::vector<std::int64_t>{1, 2, 4})) << name;
  FinalWithCalls out{fr, {}};
  for (const auto &p : ws::final_site_positions(*w.db, 2))
    out.lines.push_back(p.line);
  return out;
}

// A final plan times the outside calls whose places carried variance (every call of that
// callee in the function) and no other: work's two fsync calls (30 %), not its memcpy (0.1 %).
TEST(FinalPlan, TimesOnlyTheOutsideCallsWhosePlacesCarried) {
  auto [fr, lines] = final_with_outside_calls("final-sites", 100);
  ASSERT_TRUE(fr.written);
  EXPECT_EQ(fr.timed_sites, 2u);
  EXPECT_EQ(lines, (std::vector<int>{11, 12}));
  EXPECT_TRUE(fr.untimed_calls.empty());
}

// The same fsync calls in a hot loop: 1,000 calls an interval at each site, 4,000 records
// against a final budget of 500 (2 % of 1 ms). The chain keeps work, but not the probes of
// its fsync calls: they would lengthen what they measure; work's own time holds them.
TEST(FinalPlan, TheChainsCallsTooHotForTheFinalBudgetStayUntimed) {
  auto [fr, lines] = final_with_outside_calls("final-hot-calls", 100000);
  ASSERT_TRUE(fr.written);
  EXPECT_EQ(fr.timed_sites, 0u);
  EXPECT_TRUE(lines.empty());
  ASSERT_EQ(fr.untimed_calls.size(), 1u) << "one refusal for the callee's two sites";
  EXPECT_EQ(fr.untimed_calls[0].function, 2);
  EXPECT_EQ(fr.untimed_calls[0].name, "fsync() in work");
  EXPECT_DOUBLE_EQ(fr.untimed_calls[0].records, 4000.0);
  EXPECT_DOUBLE_EQ(fr.budget_records, 500.0);
}

// A wait place of `run` ranked first (rank 0): its share and contribution `share`, held by
// `holder`, carried most by tree node `node`; `outside_waker`: a kernel wait's pseudo-waker.
void add_wait_place(ws::Database &db, ws::RunId run, const std::string &key,
                    const std::string &name, double share, std::int64_t holder, int node,
                    bool outside_waker) {
  db.prepare(
        "INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, var_ns2, "
        "share, contribution, specificity, score, waker, via, place_kind, holder, node, "
        "outside_waker) VALUES (?, '', 0, ?, ?, NULL, 1, 0, 0, ?, ?, 4, 0, 0, '', 'wait', ?, "
        "?, ?)")
      .bind(1, run)
      .bind(2, key)
      .bind(3, name)
      .bind(4, share)
      .bind(5, share)
      .bind(6, holder)
      .bind(7, node)
      .bind(8, outside_waker ? 1 : 0)
      .run();
}

// cheap (4, called once an interval) calls fdatasync (5, outside the program) at line 31 and
// strlen in a loop at line 32; no plan timed them. A run saw a wait carry `wait_share` of
// Var(L): `[io] block device in cheap` (the disk's time in a wait of cheap's, which answers
// for it) when `holder` is 4, else `[wait:cond] in work` (an ordinary wait of work's).
// `timed_before`: the run's plan timed cheap's calls too (their sites ran). The final plan's
// result and the lines of the call sites it times.
FinalWithCalls final_with_a_wait_in(const std::string &name, std::int64_t holder, double wait_share,
                                    bool timed_before = false) {
  Workspace w(name);
  w.db->exec("INSERT INTO functions(id, usr, name, defined, height) VALUES "
             "(5,'c:@F@fdatasync','fdatasync',0,0),(6,'c:@F@strlen','strlen',0,0);"
             "INSERT INTO calls(caller, callee, kind, file, line, col, in_loop) VALUES "
             "(4,5,'direct','/s/a.c',31,10,0),(4,6,'direct','/s/a.c',32,5,1);"
             "INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth')");
  auto counts = kCounts;
  if (timed_before) {
    w.db->exec("INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) "
               "VALUES (8,'call',4,5,'fdatasync','/s/a.c',31,10)");
    counts.push_back({8, 100});
  }
  ws::RunId run = w.run(1, 1e6, counts, 0, 0.05, 0.3);
  add_wait_place(*w.db, run, holder == 4 ? "w:io-device@f:4" : "w:cond@f:2",
                 holder == 4 ? "[io] block device in cheap" : "[wait:cond] in work", wait_share,
                 holder, 5, holder == 4);
  pl::FinalOptions o;
  o.threshold = 0.01;
  auto fr = pl::final_plan(*w.db, 1, o);
  FinalWithCalls out{fr, {}};
  for (const auto &p : ws::final_site_positions(*w.db, 2))
    out.lines.push_back(p.line);
  return out;
}

// The answer's function waited in its own code (the wait's place is held by it): the final
// plan times its calls of outside functions, made into sites at the scan's positions, so that
// the call that made the wait holds it — fdatasync once a call (2 records an interval), strlen
// in its loop (loop_trips, 4, times that).
TEST(FinalPlan, AWaitInTheAnswersOwnCodeTimesItsOutsideCalls) {
  auto [fr, lines] = final_with_a_wait_in("final-wait", 4, 0.4);
  ASSERT_TRUE(fr.written);
  EXPECT_EQ(fr.answer.key, "w:io-device@f:4") << "the disk's time, answered by cheap";
  EXPECT_EQ(fr.answer.function, 4);
  EXPECT_EQ(fr.wait_calls, 2u);
  EXPECT_EQ(lines, (std::vector<int>{31, 32}));
  // priced from cheap's calls (once an interval) against the same plan without them
  auto without = final_with_a_wait_in("final-wait-base", 4, 0.001).fr;
  EXPECT_EQ(fr.kept, without.kept);
  EXPECT_DOUBLE_EQ(fr.predicted_records - without.predicted_records, 2 + 2 * 4.0)
      << "fdatasync once a call, strlen loop_trips times";
  EXPECT_TRUE(fr.untimed_calls.empty());
}

// A wait held by another function, one below the threshold, or one the answer's outside calls
// were timed around already (its run's plan timed them, and the wait stayed in the function's
// code): nothing more is timed.
TEST(FinalPlan, OnlyAWaitTheAnswersUntimedCallsCouldHoldTimesThem) {
  for (const auto &[name, holder, share, timed] : {std::tuple{"final-wait-other", 2, 0.4, false},
                                                   std::tuple{"final-wait-small", 4, 0.001, false},
                                                   std::tuple{"final-wait-timed", 4, 0.4, true}}) {
    auto [fr, lines] = final_with_a_wait_in(name, holder, share, timed);
    EXPECT_EQ(fr.wait_calls, 0u) << name;
    EXPECT_TRUE(lines.empty()) << name;
  }
}

// A run whose largest place is the disk's time in hot's wait (a kernel wait's pseudo-waker,
// held by hot: 0.6 of Var(L)) while hot's and cheap's own places carry 5 % each: the disk's time
// names no code but hot, which answers for it. An ordinary wait (its waker's work is the
// answer, not the waiter) never answers.
TEST(FinalPlan, TheDisksTimeInAWaitIsAnsweredByTheFunctionThatWaited) {
  for (bool outside : {true, false}) {
    Workspace w(outside ? "answer-disk" : "answer-cond");
    w.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth')");
    ws::RunId run = w.run(1, 1e6, kCounts, 0, 0.05, 0.05);
    add_wait_place(*w.db, run, outside ? "w:io-device@f:3" : "w:cond@f:3",
                   outside ? "[io] block device in hot" : "[wait:cond] in hot", 0.6, 3, 4, outside);
    auto a = pl::deepest_answer(*w.db, 1, 0.10);
    if (!outside) {
      EXPECT_EQ(a.iteration, -1) << "a condition wait is answered by its waker's work";
      continue;
    }
    EXPECT_EQ(a.iteration, 1);
    EXPECT_EQ(a.key, "w:io-device@f:3");
    EXPECT_EQ(a.function, 3);
    EXPECT_DOUBLE_EQ(a.contribution, 0.6);
    EXPECT_EQ(a.chain, (std::vector<std::int64_t>{1, 2, 3}));
  }
}

// Two iterations' answers on separate branches: the larger contribution wins, whatever the
// static heights (no static height decides: a caller of much is not deeper for it), and a
// place below answer_share is no answer.
TEST(FinalPlan, AnswersOnSeparateBranchesCompareByContribution) {
  Workspace w("deepest");
  w.run(0, 1e6, kCounts, 0, 0.5, 0.6);
  w.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth')");
  ws::RunId later = w.run(1, 1e6, kCounts, 0, 0.5, 0.05); // cheap no longer an answer
  w.db->prepare("UPDATE places SET contribution = 0.7, specificity = 1 WHERE run = ? AND "
                "key = 'f:3'")
      .bind(1, later)
      .run();
  // run 0's answer is cheap (0.6), run 1's hot (0.7): both at height 0, the larger wins
  auto a = pl::deepest_answer(*w.db, 1, 0.10);
  EXPECT_EQ(a.iteration, 1);
  EXPECT_EQ(a.key, "f:3");
  EXPECT_EQ(a.chain, (std::vector<std::int64_t>{1, 2, 3}));
  // hot higher in the static call graph: still the answer (cheap is no callee of it)
  w.db->exec("UPDATE functions SET height = 1 WHERE id = 3");
  a = pl::deepest_answer(*w.db, 1, 0.10);
  EXPECT_EQ(a.iteration, 1);
  EXPECT_EQ(a.key, "f:3");
  // cheap larger: the answer of iteration 0 wins
  w.db->prepare("UPDATE places SET contribution = 0.5 WHERE run = ? AND key = 'f:3'")
      .bind(1, later)
      .run();
  a = pl::deepest_answer(*w.db, 1, 0.10);
  EXPECT_EQ(a.iteration, 0);
  EXPECT_EQ(a.key, "f:4");
  EXPECT_EQ(a.chain, (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(pl::deepest_answer(*w.db, 1, 0.8).iteration, -1) << "nothing carries 80 %";
}

// The place whose observed chain runs through the other's function is the deeper answer,
// whatever the contributions and the heights (PostgreSQL's recursive component gives
// CommitTransaction and XLogWrite one height) — work (0.7) in iteration 0, cheap below it
// (0.3) in 1.
TEST(FinalPlan, TheAnswerBelowTheOtherIsDeeper) {
  Workspace w("deepest-tie");
  ws::RunId first = w.run(0, 1e6, kCounts, 0, 0.05, 0.05);
  rank_work_first(w, first);
  w.db->exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth')");
  w.run(1, 1e6, kCounts, 0, 0.05, 0.3);
  for (const char *heights :
       {"UPDATE functions SET height = 20", "UPDATE functions SET height = 30 WHERE id = 4"}) {
    w.db->exec(heights);
    auto a = pl::deepest_answer(*w.db, 1, 0.10);
    EXPECT_EQ(a.iteration, 1) << heights;
    EXPECT_EQ(a.key, "f:4") << "cheap is called by work";
    EXPECT_EQ(a.chain, (std::vector<std::int64_t>{1, 2, 4}));
  }
}

// A planned function that carries nothing but costs 3000 records per interval is dropped to
// make room; the functions on the chains of what carries variance stay.
TEST(Expand, APlannedFunctionThatCarriesNothingMakesRoom) {
  Workspace w("room");
  w.db->exec("INSERT INTO functions(id, usr, name, defined, height) VALUES (5,'idle','idle',1,0);"
             "INSERT INTO sites(id, kind, function, file, line, col) VALUES "
             "(8,'body',5,'/s/a.c',40,1);"
             "INSERT INTO plans(iteration, function, reason, factor) VALUES "
             "(0,5,'expand','var:/old')");
  auto counts = kCounts;
  counts.push_back({8, 150000});
  w.run(0, 1e6, counts); // 5008 records per interval against a budget of 4000
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_EQ(e.trimmed, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(e.added, (std::vector<std::int64_t>{4}));
  EXPECT_DOUBLE_EQ(e.predicted_records, 2010.0);
  EXPECT_EQ(plan_of(*w.db, 1), (std::vector<std::int64_t>{1, 2, 4}));
}

// The last prediction fell short (the plan was predicted at 1000 kept + 500 added records per
// interval, the run measured 2008): new candidates are priced at twice their estimate.
TEST(Expand, APredictionThatFellShortScalesTheNext) {
  Workspace w("calibrate");
  w.run(0, 1e6, kCounts);
  ws::write_plan_cost(*w.db, {0, 1000, 500, 4000});
  auto e = pl::expand(*w.db, 0, options(0.10, 1.5));
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_NEAR(e.calibration, 1.5, 1e-9) << "(2008 - 1000) / 500 = 2.016, clamped";
  EXPECT_NEAR(e.predicted_records, 2008 + 2 * e.calibration, 1e-9);
  auto cost = ws::plan_cost(*w.db, 1);
  ASSERT_TRUE(cost);
  EXPECT_DOUBLE_EQ(cost->kept_records, 2008.0);
  EXPECT_NEAR(cost->added_records, 2 * e.calibration, 1e-9);
}

// Without a prediction to compare with (the first plan), the run's own functions calibrate:
// work was predicted at 6 records (its body and two call sites once) and measured 2004 (its
// loop calls hot 1000 times), so estimates are scaled by the clamp, 20.
TEST(Expand, TheFirstPlansOwnFunctionsCalibrate) {
  Workspace w("self");
  w.run(0, 1e6, kCounts);
  auto run = ws::latest_run(*w.db, 0);
  pl::CostModel m(*w.db, *run, ws::read_plan(*w.db, 0));
  EXPECT_NEAR(m.self_calibration(), (4.0 + 2004) / (4 + 6), 1e-9);
  auto e = pl::expand(*w.db, 0, options(0.10, 20));
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_DOUBLE_EQ(e.calibration, 20.0);
  EXPECT_EQ(e.added, (std::vector<std::int64_t>{4}));
  EXPECT_DOUBLE_EQ(e.predicted_records, 2008 + 2 * 20.0);
}

// Loop trips: work's call of hot sits in a loop (1000 calls per call of work), its call of
// cheap does not; a function not yet planned with one looped call site is predicted at
// 1000 calls of it per call, and the measured functions need no further calibration.
TEST(CostModel, CallSitesInLoopsRunLoopTripsTimes) {
  Workspace w("loops");
  w.db->exec("UPDATE calls SET in_loop = 1 WHERE caller = 2 AND callee = 3;"
             "INSERT INTO functions(id, usr, name, defined, height) VALUES (6,'scan','scan',1,1),"
             "(7,'row','row',1,0);"
             "INSERT INTO calls(caller, callee, kind, file, line, col, in_loop) VALUES "
             "(2,6,'direct','/s/a.c',11,3,0),(6,7,'direct','/s/b.c',3,5,1);"
             "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
             "(9,'call',2,6,'scan','/s/a.c',11,3);");
  auto counts = kCounts;
  counts.push_back({9, 100});
  w.run(0, 1e6, counts);
  auto run = ws::latest_run(*w.db, 0);
  pl::CostModel m(*w.db, *run, ws::read_plan(*w.db, 0));
  // work: 1 call, 1002 call-site ENTERs, 2 straight sites (cheap, scan), 1 looped (hot)
  EXPECT_DOUBLE_EQ(m.loop_trips(), 1000.0);
  EXPECT_DOUBLE_EQ(m.predict_records(6), 2 * 1 * (1 + 1000.0));
  EXPECT_NEAR(m.self_calibration(), 1.0, 1e-9);
}

// `label` and `exclude_labels` (vprof.toml): the groups the loop expands on. The run has
// two labelled types: "get" (the fixture's tree, factor and places copied) and "admin"
// (its tree only: no factor, no place carries anything).
TEST(Expand, TheLoopExpandsOnTheGroupsOfTheLabelsChosen) {
  Workspace w("labels");
  w.run(0, 1e6, kCounts);
  w.db->exec(
      "INSERT INTO interval_stats(run, label, count, mean_ns) SELECT run, 'get', 60, mean_ns "
      "FROM interval_stats WHERE label = '';"
      "INSERT INTO interval_stats(run, label, count, mean_ns) SELECT run, 'admin', 40, mean_ns "
      "FROM interval_stats WHERE label = '';"
      "INSERT INTO tree_nodes(run, label, node, parent, path, kind, site, function, name, "
      "mean_ns, expanded) SELECT run, l.label, node, parent, path, kind, site, function, name, "
      "mean_ns, expanded FROM tree_nodes, (SELECT 'get' AS label UNION SELECT 'admin') l "
      "WHERE tree_nodes.label = '';"
      "INSERT INTO factors(run, label, rank, key, kind, parent, a, a_body, name, term_ns2, "
      "share, specificity, score, leaf) SELECT run, 'get', rank, key, kind, parent, a, a_body, "
      "name, term_ns2, share, specificity, score, leaf FROM factors WHERE label = '';"
      "INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, var_ns2, "
      "share, contribution, specificity, score, waker, via, place_kind, node) SELECT run, "
      "'get', rank, key, name, function, contexts, mean_ns, var_ns2, share, contribution, "
      "specificity, score, waker, via, place_kind, node FROM places WHERE label = '';");
  auto run = ws::latest_run(*w.db, 0);
  ASSERT_TRUE(run);
  using V = std::vector<std::string>;
  EXPECT_EQ(pl::loop_groups(*w.db, *run, "", {}), V{""});
  EXPECT_EQ(pl::loop_groups(*w.db, *run, "get", {}), V{"get"});
  EXPECT_EQ(pl::loop_groups(*w.db, *run, "", {"admin"}), V{"get"});
  for (const auto &[label, exclude] :
       std::vector<std::pair<std::string, V>>{{"nope", {}}, {"", {"nope"}}}) {
    try {
      pl::loop_groups(*w.db, *run, label, exclude);
      ADD_FAILURE() << "no error for a label no interval carries";
    } catch (const pl::PlanError &e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("\"nope\": no interval"), std::string::npos) << what;
      EXPECT_NE(what.find("\"admin\", \"get\""), std::string::npos) << what;
    }
  }
  EXPECT_THROW(pl::loop_groups(*w.db, *run, "", {"admin", "get"}), pl::PlanError);

  // driven by "admin", nothing of its group carries variance: nothing to add
  auto o = options();
  o.label = "admin";
  auto admin = pl::expand(*w.db, 0, o);
  EXPECT_TRUE(admin.stop);
  EXPECT_EQ(admin.reason, "all top factors are leaves");
  // all but "admin": the "get" group's sources, keys named by their label
  o.label.clear();
  o.exclude_labels = {"admin"};
  auto get = pl::expand(*w.db, 0, o);
  ASSERT_FALSE(get.stop) << get.reason;
  EXPECT_EQ(get.added, (std::vector<std::int64_t>{4}));
  ASSERT_FALSE(get.top_keys.empty());
  for (const auto &key : get.top_keys)
    EXPECT_EQ(key.rfind("get|", 0), 0u) << key;
}
