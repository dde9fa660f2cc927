// Tests of the upward expansion (docs/planner.md, "Upward expansion") over a hand-made
// workspace shaped like an event loop: the intervals begin in process_command and end in
// write_reply (the annotated roots), and most of their time is outside both.
#include "vprof/planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <unistd.h>

namespace fs = std::filesystem;
namespace pl = vprof::planner;
namespace ws = vprof::ws;

namespace {

// main (1) -> run (2) -> loop_iteration (3) -> poll (4), process_batch (5) -> process_command
// (6, annotated), before_sleep (7) -> flush_log (8), expire (12); write_replies (9) ->
// write_reply (10, annotated). error_path (11) calls write_reply too, outside the loop.
enum : int {
  kMain = 1,
  kRun,
  kIteration,
  kPoll,
  kBatch,
  kProcess,
  kBeforeSleep,
  kFlush,
  kReplies,
  kReply,
  kErrorPath,
  kExpire
};

struct Workspace {
  fs::path dir;
  std::unique_ptr<ws::Database> db;

  explicit Workspace(const std::string &name) {
    dir = fs::temp_directory_path() / ("vprof-outer-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    db = std::make_unique<ws::Database>(dir / "vprof.db");
    db->exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
             "(1,'main','main',1,4,0),(2,'run','run',1,3,0),(3,'it','loop_iteration',1,2,0),"
             "(4,'poll','poll',1,0,0),(5,'batch','process_batch',1,1,0),"
             "(6,'proc','process_command',1,0,1),(7,'bs','before_sleep',1,1,0),"
             "(8,'flush','flush_log',1,0,0),(9,'replies','write_replies',1,1,0),"
             "(10,'reply','write_reply',1,0,1),(11,'err','error_path',1,1,0),"
             "(12,'expire','expire',1,0,0);"
             "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
             "(1,2,'direct','/s/l.c',1,1),(2,3,'direct','/s/l.c',2,1),"
             "(3,4,'direct','/s/l.c',3,1),(3,5,'direct','/s/l.c',4,1),"
             "(3,7,'direct','/s/l.c',5,1),(3,9,'direct','/s/l.c',6,1),"
             "(5,6,'direct','/s/l.c',7,1),(7,8,'direct','/s/l.c',8,1),"
             "(7,12,'direct','/s/l.c',9,1),(9,10,'direct','/s/l.c',10,1),"
             "(11,10,'direct','/s/l.c',11,1);"
             "INSERT INTO sites(id, kind, function, file, line, col) VALUES "
             "(1,'body',6,'/s/l.c',20,1),(2,'body',10,'/s/l.c',30,1);"
             "INSERT INTO plans(iteration, function, reason) VALUES (0,6,'root'),(0,10,'root');");
  }
  ~Workspace() { fs::remove_all(dir); }

  // One analysed run of plan 0: 100 intervals of `mean_ns`, process_command and write_reply
  // once each; the root's body ("outside probed functions") carries `outside` of Var(L).
  void run(double mean_ns, double outside) {
    db->prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
                "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
                "ticks_per_second, max_residual, max_stream_records) VALUES "
                "(0, '/t', 400, 1, 1, 0, 100, 0, 0, 0, 1e9, 0, 0)")
        .run();
    ws::RunId id = db->last_insert_rowid();
    db->prepare("INSERT INTO interval_stats(run, label, count, mean_ns) VALUES (?, '', 100, ?)")
        .bind(1, id)
        .bind(2, mean_ns)
        .run();
    ws::store_site_calls(*db, id, {{1, 100}, {2, 100}});
    db->prepare("INSERT INTO tree_nodes(run, label, node, parent, path, kind, site, function, "
                "name, mean_ns, expanded) VALUES (?1, '', 0, NULL, '/', 'root', NULL, NULL, "
                "'(interval)', ?2, 1), (?1, '', 1, 0, '/s1', 'site', 1, 6, 'process_command', "
                "?3, 0), (?1, '', 2, 0, '/s2', 'site', 2, 10, 'write_reply', ?3, 0)")
        .bind(1, id)
        .bind(2, mean_ns)
        .bind(3, mean_ns * 0.02)
        .run();
    db->prepare("INSERT INTO factors(run, label, rank, key, kind, parent, a, a_body, name, "
                "term_ns2, share, specificity, score, leaf) VALUES (?, '', 1, 'var:/#body', "
                "'var', 0, 0, 1, 'Var body((interval))', 1, ?, 0, 0, 0)")
        .bind(1, id)
        .bind(2, outside)
        .run();
    auto place = db->prepare("INSERT INTO places(run, label, rank, key, name, function, "
                             "contexts, mean_ns, var_ns2, share, contribution, specificity, "
                             "score, waker, via, place_kind, node) VALUES (?, '', ?, ?, ?, ?, 1, "
                             "0, 0, ?, ?, ?, 0, 0, '', ?, ?)");
    place.bind(1, id).bind(2, 1).bind(3, "o:outside").bind(4, "outside probed functions");
    place.bind_null(5).bind(6, outside).bind(7, outside).bind(8, 1.0).bind(9, "outside");
    place.bind(10, 0).run();
    const double rest = (1 - outside) / 2;
    place.bind(1, id).bind(2, 2).bind(3, "f:6").bind(4, "process_command").bind(5, 6);
    place.bind(6, rest).bind(7, rest).bind(8, 0.0).bind(9, "function").bind(10, 1).run();
    place.bind(1, id).bind(2, 3).bind(3, "f:10").bind(4, "write_reply").bind(5, 10);
    place.bind(6, rest).bind(7, rest).bind(8, 0.0).bind(9, "function").bind(10, 2).run();
  }
};

pl::ExpandOptions options(double exploration = 0.10) {
  pl::ExpandOptions o;
  o.max_calibration = 1; // predictions as the rule gives them
  o.k = 3;
  o.budget.exploration = exploration;
  o.budget.record_ns = 25;
  return o;
}

using Ids = std::vector<std::int64_t>;

} // namespace

// The nearest common ancestor of where intervals begin and end is the loop's iteration, not
// run or main above it; the chains are the functions between it and the roots (never
// error_path, which reaches write_reply from outside the loop); the callees are the loop's
// own work, the nearest first, then the most code below.
TEST(OuterFrames, TheCommonAncestorAndTheChainsDownToTheRoots) {
  Workspace w("nca");
  auto of = pl::outer_frames(*w.db, {kProcess, kReply}, 1);
  EXPECT_EQ(of.ancestors, (Ids{kIteration}));
  EXPECT_EQ(of.chains, (Ids{kBatch, kReplies}));
  EXPECT_EQ(of.callees, (Ids{kBeforeSleep, kPoll})) << "before_sleep has more code below";
  auto deeper = pl::outer_frames(*w.db, {kProcess, kReply}, 2);
  EXPECT_EQ(deeper.callees, (Ids{kBeforeSleep, kPoll, kFlush, kExpire}));
}

// One start is its own nearest common ancestor: its callers hold the time outside it. The
// walk ends at main (nothing above it is the program's) and at a thread's entry (no callers).
TEST(OuterFrames, AStartThatIsTheAncestorGivesItsCallersAndMainEndsTheWalk) {
  Workspace w("callers");
  EXPECT_EQ(pl::outer_frames(*w.db, {kIteration}, 0).ancestors, (Ids{kRun}));
  EXPECT_EQ(pl::outer_frames(*w.db, {kBatch, kProcess}, 0).ancestors, (Ids{kIteration}))
      << "process_batch calls process_command: one level above it";
  auto top = pl::outer_frames(*w.db, {kMain}, 1);
  EXPECT_TRUE(top.ancestors.empty());
  EXPECT_TRUE(top.chains.empty());
  EXPECT_TRUE(pl::outer_frames(*w.db, {}, 1).ancestors.empty());
}

// Most of Var(L) outside every probed function: the next plan holds the outer frames, the
// ancestor first, with the reason `outer` and the place's key.
TEST(Expand, TimeOutsideTheRootsExpandsUpward) {
  Workspace w("up");
  w.run(1e6, 0.9);
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_EQ(e.added, (Ids{kIteration, kBatch, kReplies, kBeforeSleep, kPoll}));
  for (const auto &r : ws::read_plan(*w.db, 1)) {
    if (r.function == kProcess || r.function == kReply) {
      EXPECT_EQ(r.reason, ws::PlanReason::Root);
      continue;
    }
    EXPECT_EQ(r.reason, ws::PlanReason::Outer) << r.function;
    EXPECT_EQ(r.factor, "o:outside");
    EXPECT_STREQ(ws::reason_text(r.reason), "outer");
  }
}

// Below outer_share the place does not expand upward (nothing else is left to add here).
TEST(Expand, NoUpwardExpansionBelowTheThreshold) {
  Workspace w("below");
  w.run(1e6, 0.15);
  auto e = pl::expand(*w.db, 0, options());
  EXPECT_TRUE(e.stop);
  EXPECT_EQ(e.reason, "all top factors are leaves");
  EXPECT_TRUE(ws::read_plan(*w.db, 1).empty());
  auto o = options();
  o.outer_share = 0.1;
  EXPECT_FALSE(pl::expand(*w.db, 0, o).stop) << "a lower threshold lets it expand";
}

// The outer frames join within the exploration budget, in order: 10 % of 5 µs at 25 ns is 20
// records; the plan measured 4, loop_iteration costs 10 (its body and four call sites),
// process_batch 4, write_replies 4 — past the budget with its call site, so for its body
// alone (2) — before_sleep 6 and poll 2 refused (the budget is spent).
TEST(Expand, TheOuterFramesRespectTheBudget) {
  Workspace w("budget");
  w.run(5e3, 0.9);
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_DOUBLE_EQ(e.budget_records, 20.0);
  EXPECT_EQ(e.added, (Ids{kIteration, kBatch, kReplies}));
  EXPECT_EQ(e.body_only, (Ids{kReplies}));
  Ids refused;
  for (const auto &r : e.refused)
    refused.push_back(r.function);
  EXPECT_EQ(refused, (Ids{kBeforeSleep, kPoll}));
  EXPECT_LE(e.predicted_records, e.budget_records);
}

// An ancestor whose calls do not fit is planned for its body probe alone (memcached's
// drive_machine: a switch over a connection's states with dozens of calls): 10 % of 3 µs at
// 25 ns is 12 records; the plan measured 4; loop_iteration with its four call sites (10)
// would pass it, its body (2) fits. The plan row says so, and the rewriter gives it no
// call-site probes (tests/instrumenter: body_only).
TEST(Expand, AnAncestorWhoseCallsDoNotFitIsProbedForItsBodyAlone) {
  Workspace w("bodyonly");
  w.run(3e3, 0.9);
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  ASSERT_FALSE(e.added.empty());
  EXPECT_EQ(e.added.front(), kIteration);
  EXPECT_NE(std::find(e.body_only.begin(), e.body_only.end(), kIteration), e.body_only.end());
  EXPECT_LE(e.predicted_records, e.budget_records);
  bool found = false;
  for (const auto &r : ws::read_plan(*w.db, 1))
    if (r.function == kIteration) {
      found = true;
      EXPECT_TRUE(r.body_only);
      EXPECT_EQ(r.reason, ws::PlanReason::Outer);
    } else {
      EXPECT_EQ(r.body_only, r.function == kReplies) << r.function;
    }
  EXPECT_TRUE(found);
  // planned functions: process_command, write_reply, loop_iteration (body), batch (4), ...
  EXPECT_EQ(ws::planned_functions(*w.db, 1).size(), ws::read_plan(*w.db, 1).size());
}

// A function planned for its body alone whose place is expanded later gets its call sites:
// the next plan's row is no longer body-only (an upgrade, priced for its call sites).
TEST(Expand, ABodyOnlyFrameGetsItsCallsWhenItsPlaceIsExpanded) {
  Workspace w("upgrade");
  w.run(3e3, 0.9);
  ASSERT_FALSE(pl::expand(*w.db, 0, options()).stop);
  // iteration 1's run: loop_iteration's own place carries most of Var(L)
  w.db->exec("INSERT INTO sites(id, kind, function, file, line, col) VALUES "
             "(3,'body',3,'/s/l.c',3,1)");
  w.db->prepare("INSERT INTO analysis_runs(iteration, trace_dir, records, streams, processes, "
                "dropped, intervals, intervals_unfinished, wake_edges, root_height, "
                "ticks_per_second, max_residual, max_stream_records) VALUES "
                "(1, '/t', 300, 1, 1, 0, 100, 0, 0, 0, 1e9, 0, 0)")
      .run();
  ws::RunId id = w.db->last_insert_rowid();
  w.db->prepare("INSERT INTO interval_stats(run, label, count, mean_ns) VALUES (?, '', 100, 1e6)")
      .bind(1, id)
      .run();
  ws::store_site_calls(*w.db, id, {{1, 100}, {2, 100}, {3, 100}});
  w.db->prepare("INSERT INTO tree_nodes(run, label, node, parent, path, kind, site, function, "
                "name, mean_ns, expanded) VALUES (?1, '', 0, NULL, '/', 'root', NULL, NULL, "
                "'(interval)', 1e6, 1), (?1, '', 1, 0, '/s3', 'site', 3, 3, 'loop_iteration', "
                "9e5, 0)")
      .bind(1, id)
      .run();
  w.db->prepare("INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, "
                "var_ns2, share, contribution, specificity, score, waker, via, place_kind, node) "
                "VALUES (?, '', 1, 'f:3', 'loop_iteration', 3, 1, 0, 0, 0.8, 0.8, 1, 0, 0, '', "
                "'function', 1)")
      .bind(1, id)
      .run();
  auto e = pl::expand(*w.db, 1, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_NE(std::find(e.added.begin(), e.added.end(), kIteration), e.added.end());
  for (const auto &r : ws::read_plan(*w.db, 2))
    EXPECT_TRUE(r.function != kIteration || !r.body_only) << "its call sites join";
}

// When the place outside probed functions carries outer_share and the plan leaves no room
// for even the ancestor's body, the planned functions whose places carry less than it are
// dropped (never the roots): expire, planned with a place of 5 % and 30 records an interval,
// gives its room to loop_iteration.
TEST(Expand, TheOuterFramesTakeTheRoomOfFunctionsCarryingLess) {
  Workspace w("room");
  w.db->exec("INSERT INTO sites(id, kind, function, file, line, col) VALUES "
             "(4,'body',12,'/s/l.c',40,1);"
             "INSERT INTO plans(iteration, function, reason) VALUES (0,12,'depth')");
  w.run(5e3, 0.9);
  auto run = ws::latest_run(*w.db, 0);
  ASSERT_TRUE(run);
  ws::store_site_calls(*w.db, run->id, {{1, 100}, {2, 100}, {4, 1500}});
  w.db->prepare("UPDATE analysis_runs SET records = 3400 WHERE id = ?").bind(1, run->id).run();
  w.db->prepare("INSERT INTO places(run, label, rank, key, name, function, contexts, mean_ns, "
                "var_ns2, share, contribution, specificity, score, waker, via, place_kind, node) "
                "VALUES (?, '', 4, 'f:12', 'expire', 12, 1, 0, 0, 0.05, 0.05, 1, 0, 0, '', "
                "'function', -1)")
      .bind(1, run->id)
      .run();
  auto e = pl::expand(*w.db, 0, options());
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_EQ(e.trimmed_for_lead, (Ids{kExpire}));
  EXPECT_EQ(e.lead, "outside probed functions");
  ASSERT_FALSE(e.added.empty());
  EXPECT_EQ(e.added.front(), kIteration);
  for (const auto &r : ws::read_plan(*w.db, 1))
    EXPECT_NE(r.function, kExpire);
}

// The expansion of a run of 100 intervals, 5 us each (a budget of 20 records), whose roots'
// two body sites ran `calls1` and `calls2` times: each call two records.
static pl::ExpandResult expand_with_site_calls(const char *name, std::uint64_t calls1,
                                               std::uint64_t calls2) {
  Workspace w(name);
  w.run(5e3, 0.9);
  auto run = ws::latest_run(*w.db, 0);
  if (!run) {
    ADD_FAILURE() << name << ": no run stored";
    return {};
  }
  ws::store_site_calls(*w.db, run->id, {{1, calls1}, {2, calls2}});
  w.db->prepare("UPDATE analysis_runs SET records = ? WHERE id = ?")
      .bind(1, static_cast<std::int64_t>(2 * (calls1 + calls2)))
      .bind(2, run->id)
      .run();
  return pl::expand(*w.db, 0, options());
}

// A plan that costs more than the budget before any candidate (its roots run many times an
// interval) stops with the figures: what it costs, the budget, and what to change.
TEST(Expand, AStopOnAPlanOverItsBudgetSaysWhatThePlanCosts) {
  auto e = expand_with_site_calls("over", 2000, 2000); // 80 records an interval
  ASSERT_TRUE(e.stop);
  EXPECT_EQ(e.reason.rfind("probe budget spent: plan 0 costs 80 records per interval", 0), 0u)
      << e.reason;
  EXPECT_NE(e.reason.find("more than the budget of 20 (budget = 0.1 of the mean latency 5.0 us"),
            std::string::npos)
      << e.reason;
  EXPECT_NE(e.reason.find("raise `budget` in vprof.toml"), std::string::npos) << e.reason;
}

// A plan just over its budget says so in figures that differ (20.3 over 20.0, not 20 over 20).
TEST(Expand, AStopJustOverTheBudgetPrintsTheDecimal) {
  auto e = expand_with_site_calls("just-over", 508, 507); // 20.3 records an interval
  ASSERT_TRUE(e.stop);
  EXPECT_EQ(e.reason.rfind("probe budget spent: plan 0 costs 20.3 records per interval", 0), 0u)
      << e.reason;
  EXPECT_NE(e.reason.find("more than the budget of 20.0 "), std::string::npos) << e.reason;
}
