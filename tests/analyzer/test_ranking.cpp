// Ranking and expansion rules that the accuracy suite depends on, each on a hand-built
// trace with a workspace: external calls rank at their caller's level, a waker's frames
// outrank the wait they explain, H covers the interval's own path, expand reaches virtual
// overrides / template callees through the call graph and a waker without instrumented
// frames through the callers of the waking primitive.
#include "plan_helpers.hpp"
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"
#include "vprof/trace_reader.hpp"
#include "vprof/workspace.hpp"
#include "vprof/workspace_rows.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("vprof-rank-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::int64_t> plan(vprof::ws::Database &db, int iteration) {
  std::vector<std::int64_t> fs;
  auto st = db.prepare("SELECT function FROM plans WHERE iteration = ? ORDER BY function");
  st.bind(1, iteration);
  while (st.step())
    fs.push_back(st.int64(0));
  return fs;
}

// The condvar shape: the interval (thread 1) runs query -> await -> pthread_cond_wait;
// thread 2 runs helper -> compute (w ticks, varying) and signals. With `waker_frames`
// false, thread 2 has no probes (its functions are not instrumented yet).
fs::path condvar_trace(const fs::path &dir, bool waker_frames) {
  TraceBuilder b(1);
  for (std::uint64_t i = 0; i < 30; ++i) {
    std::uint64_t t = i * 10000, w = 100 + (i * 37) % 200;
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t)
        .enter(1, t, 1)
        .enter(2, t + 1, 1)
        .enter(3, t + 2, 2)
        .enter(4, t + 3, 2)
        .emit(VPROF_REC_COND_WAIT_BEGIN, 0xC0, t + 4)
        .emit(VPROF_REC_COND_WAIT_END, 0xC0, t + 20 + w)
        .exit(4, t + 21 + w, 2)
        .exit(3, t + 22 + w, 2)
        .exit(2, t + 23 + w, 1)
        .exit(1, t + 24 + w, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t + 24 + w);
    auto &h = b.thread(2);
    if (waker_frames)
      h.enter(10, t + 4, 1).enter(11, t + 5, 1).enter(12, t + 6, 2);
    else
      h.emit(VPROF_REC_LOCK_ACQUIRE, 0xD0, t + 4); // some record at the start
    if (waker_frames)
      h.exit(12, t + 6 + w, 2).exit(11, t + 7 + w, 1);
    h.emit(VPROF_REC_COND_SIGNAL, 0xC0, t + 10 + w);
    if (waker_frames)
      h.exit(10, t + 11 + w, 1);
    else
      h.emit(VPROF_REC_LOCK_RELEASE, 0xD0, t + 11 + w);
  }
  auto tdir = dir / "trace";
  b.write(tdir);
  return tdir;
}

void condvar_workspace(vprof::ws::Database &db) {
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'query','query',1,2,1),(2,'await','await',1,1,0),"
          "(3,'pthread_cond_wait','pthread_cond_wait',0,0,0),(10,'helper','helper',1,2,0),"
          "(11,'compute','compute',1,1,0),(12,'spin','spin',1,0,0),"
          "(20,'pthread_cond_signal','pthread_cond_signal',0,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'direct','/s/q.c',5,3),(2,3,'direct','/s/q.c',9,3),"
          "(10,11,'direct','/s/q.c',20,3),(10,20,'direct','/s/q.c',21,3),"
          "(11,12,'direct','/s/q.c',30,3);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'body',1,NULL,NULL,'/s/q.c',4,1),(2,'call',1,2,'await','/s/q.c',5,3),"
          "(3,'body',2,NULL,NULL,'/s/q.c',8,1),(4,'call',2,3,'pthread_cond_wait','/s/q.c',9,3),"
          "(10,'body',10,NULL,NULL,'/s/q.c',19,1),(11,'call',10,11,'compute','/s/q.c',20,3),"
          "(12,'body',11,NULL,NULL,'/s/q.c',29,1);"
          "INSERT INTO plans(iteration, function, reason) VALUES (0,1,'root'),(0,2,'depth');");
}

// serve (h 2, annotated) calls sync_block (h 1), which calls the outside functions fsync
// and memset; with `noise`, serve also calls noise (h 0).
void sync_block_workspace(vprof::ws::Database &db, bool noise) {
  db.exec(std::string("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
                      "(1,'serve','serve',1,2,1),(2,'sync_block','sync_block',1,1,0),"
                      "(3,'fsync','fsync',0,0,0),(4,'memset','memset',0,0,0);"
                      "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
                      "(1,2,'direct','/s/a.c',5,3),"
                      "(2,3,'direct','/s/a.c',9,3),(2,4,'direct','/s/a.c',10,3);"
                      "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, "
                      "col) VALUES (1,'body',1,NULL,NULL,'/s/a.c',4,1),"
                      "(2,'call',1,2,'sync_block','/s/a.c',5,3),"
                      "(3,'body',2,NULL,NULL,'/s/a.c',8,1),(4,'call',2,3,'fsync','/s/a.c',9,3),"
                      "(5,'call',2,4,'memset','/s/a.c',10,3);") +
          (noise ? "INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
                   "(5,'noise','noise',1,0,0);"
                   "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
                   "(1,5,'direct','/s/a.c',6,3);"
                   "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) "
                   "VALUES (6,'call',1,5,'noise','/s/a.c',6,3);"
                 : ""));
}

} // namespace

// sync_block (h 1) spends its varying time in two external calls (fsync, memset: h 0 in
// the call graph only because their bodies are unknown). The external calls rank at their
// caller's height, so the function that explains the variance, sync_block, is on top.
TEST(Ranking, ExternalCallRanksAtItsCallersLevel) {
  auto dir = fresh_dir("external");
  TraceBuilder b(1);
  for (std::uint64_t i = 0; i < 40; ++i) {
    std::uint64_t t = i * 10000, x = 100 + (i * 37) % 200, y = 50 + (i * 53) % 150,
                  z = (i * 17) % 40;
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t)
        .enter(1, t, 1)
        .enter(2, t + 1, 1)
        .enter(3, t + 2, 2)
        .enter(4, t + 3, 2)
        .exit(4, t + 3 + x, 2)
        .enter(5, t + 3 + x, 2)
        .exit(5, t + 3 + x + y, 2)
        .exit(3, t + 4 + x + y, 2)
        .exit(2, t + 5 + x + y, 1)
        .enter(6, t + 5 + x + y, 1)
        .exit(6, t + 5 + x + y + z, 1)
        .exit(1, t + 6 + x + y + z, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t + 6 + x + y + z);
  }
  b.write(dir / "trace");
  vprof::ws::Database db(dir / "vprof.db");
  sync_block_workspace(db, true);
  for (auto ranking : {va::Ranking::Net, va::Ranking::VProfiler}) {
    va::AnalyzeOptions opt;
    opt.ranking = ranking;
    auto res = va::analyze(dir / "trace", &db, opt);
    const auto &g = res.groups[0];
    ASSERT_FALSE(g.factors.empty());
    const auto &top = g.factors[0];
    EXPECT_EQ(top.kind, va::Factor::Kind::Variance);
    EXPECT_FALSE(top.a_body);
    EXPECT_EQ(res.nodes[top.a].function, 2) << top.name;
    int seen = 0;
    for (const auto &f : g.factors)
      if (f.key == "var:/s1/s2/s3/s4") {
        ++seen;
        // static: (H 2 - h(sync_block) 1)^2, not (2 - 0)^2; observed: at sync_block's level
        // (2: serve's body, then sync_block's call and body as one level), not one below it
        EXPECT_DOUBLE_EQ(f.specificity, ranking == va::Ranking::Net ? 4.0 : 1.0);
        EXPECT_TRUE(f.leaf); // nothing of fsync can be instrumented
      }
    EXPECT_EQ(seen, 1);
    EXPECT_LE(g.max_residual, 1e-9);
  }
}

// The wait's time is the helper's compute: compute (under the wait node) must outrank
// the wait node and the blocked call, although they carry a little more variance.
TEST(Ranking, WakerFramesOutrankTheirWait) {
  auto dir = fresh_dir("waker");
  auto tdir = condvar_trace(dir, true);
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  auto res = va::analyze(tdir, &db, {});
  EXPECT_EQ(res.wake_edges, 30u);
  const auto &g = res.groups[0];
  ASSERT_FALSE(g.factors.empty());
  const auto &top = g.factors[0];
  EXPECT_EQ(res.nodes[top.a].function, 11) << top.name;
  EXPECT_NE(res.nodes[top.a].path.find("/wait:cond/"), std::string::npos);
  double wait_spec = -1;
  for (const auto &f : g.factors)
    if (f.b < 0 && !f.a_body && res.nodes[f.a].kind == va::Node::Kind::Wait)
      wait_spec = f.specificity;
  EXPECT_GT(top.specificity, wait_spec);
  EXPECT_LE(g.max_residual, 1e-9);
}

// The workspace's H (meta) can be lower than a function on the interval's path (an RAII
// annotation marks the annotation class): H is raised to that height.
TEST(Ranking, RootHeightCoversTheIntervalPath) {
  auto dir = fresh_dir("height");
  auto tdir = condvar_trace(dir, true);
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  db.exec("UPDATE functions SET height = 4 WHERE id = 1;"
          "INSERT OR REPLACE INTO meta(key, value) VALUES ('H', '1');");
  va::AnalyzeOptions opt; // the static heights are VProfiler's ranking
  opt.ranking = va::Ranking::VProfiler;
  auto res = va::analyze(tdir, &db, opt);
  EXPECT_EQ(res.H, 4);
  int seen = 0;
  for (const auto &f : res.groups[0].factors)
    if (f.key == "var:/s1/s2") { // await's call site: h 1
      ++seen;
      EXPECT_DOUBLE_EQ(f.specificity, 9.0);
    }
  EXPECT_EQ(seen, 1);
}

// A wait whose waker has no instrumented frame: expand plans the functions that call the
// waking primitive (pthread_cond_signal) and their callees.
TEST(Ranking, ExpandWaitWithoutWakerFramesUsesTheWakingPrimitive) {
  auto dir = fresh_dir("static-waker");
  auto tdir = condvar_trace(dir, false);
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  auto res = va::analyze(tdir, &db, {});
  va::store(db, res, 0);
  auto e = vprof::testing::expand(db, 0, 3, 8);
  EXPECT_EQ(e.reason, "expanded");
  auto p = plan(db, 1);
  EXPECT_TRUE(std::count(p.begin(), p.end(), 10)) << "helper calls pthread_cond_signal";
  EXPECT_TRUE(std::count(p.begin(), p.end(), 11)) << "helper's callee compute";
}

// A virtual call site (the base declaration has no body) and a call in a template
// pattern (callee unresolved in the site table, the call edge at another column of the
// line): expand plans every override and the template member through the call graph.
TEST(Ranking, ExpandFollowsCallEdgesOfTheCallSitePosition) {
  auto dir = fresh_dir("targets");
  TraceBuilder b(1);
  for (std::uint64_t i = 0; i < 30; ++i) {
    std::uint64_t t = i * 10000, x = 100 + (i * 37) % 200, y = 80 + (i * 71) % 150;
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t)
        .enter(1, t, 1)
        .enter(2, t + 1, 1)
        .exit(2, t + 1 + x, 1)
        .enter(3, t + 1 + x, 1)
        .exit(3, t + 1 + x + y, 1)
        .exit(1, t + 2 + x + y, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t + 2 + x + y);
  }
  b.write(dir / "trace");
  vprof::ws::Database db(dir / "vprof.db");
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'draw','acc::draw',1,2,1),(2,'base','acc::Shape::render',0,0,0),"
          "(3,'sprite','acc::Sprite::render',1,1,0),(4,'circle','acc::Circle::render',1,0,0),"
          "(5,'blit','acc::blit',1,0,0),(6,'proc','acc::Batch::process',1,0,0),"
          "(7,'item','acc::Batch::item',1,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'virtual','/s/v.cpp',44,12),"
          "(1,3,'virtual','/s/v.cpp',44,12),(1,4,'virtual','/s/v.cpp',44,12),"
          "(3,5,'direct','/s/v.cpp',20,3),(1,6,'member','/s/v.cpp',45,14),"
          "(1,7,'member','/s/v.cpp',45,30);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'body',1,NULL,NULL,'/s/v.cpp',40,1),"
          "(2,'call',1,2,'acc::Shape::render','/s/v.cpp',44,12),"
          "(3,'call',1,NULL,'batch.process','/s/v.cpp',45,23);"
          "INSERT INTO plans(iteration, function, reason) VALUES (0,1,'root');");
  va::AnalyzeOptions opt; // the static heights of dispatching sites are VProfiler's ranking
  opt.ranking = va::Ranking::VProfiler;
  auto res = va::analyze(dir / "trace", &db, opt);
  int seen = 0;
  for (const auto &f : res.groups[0].factors) {
    seen += f.key == "var:/s1/s2" || f.key == "var:/s1/s3";
    if (f.key == "var:/s1/s2") // h = the highest override (Sprite::render, 1) + 1
      EXPECT_DOUBLE_EQ(f.specificity, 0.0);
    if (f.key == "var:/s1/s3") // h = Batch::process (0), found by name on line 45
      EXPECT_DOUBLE_EQ(f.specificity, 4.0);
    if (f.key == "var:/s1/s2" || f.key == "var:/s1/s3")
      EXPECT_FALSE(f.leaf) << f.key;
  }
  EXPECT_EQ(seen, 2);
  va::store(db, res, 0);
  auto e = vprof::testing::expand(db, 0, 3, 8);
  EXPECT_EQ(e.reason, "expanded");
  // What each call-site factor planned (other factors ranked below may plan more, e.g.
  // the root body's callees; expand takes k factors that add something).
  auto planned_by = [&](const std::string &key) {
    std::vector<std::int64_t> out;
    auto st = db.prepare("SELECT function FROM plans WHERE iteration = 1 AND reason = 'expand' "
                         "AND factor = ? ORDER BY function");
    st.bind(1, key);
    while (st.step())
      out.push_back(st.int64(0));
    return out;
  };
  EXPECT_EQ(planned_by("var:/s1/s2"), (std::vector<std::int64_t>{3, 4, 5}));
  EXPECT_EQ(planned_by("var:/s1/s3"), (std::vector<std::int64_t>{6}));
  for (std::int64_t f : {1, 3, 4, 5, 6}) {
    auto p = plan(db, 1);
    EXPECT_NE(std::find(p.begin(), p.end(), f), p.end()) << f;
  }
}

// Places merge a function's call sites and body into one row, name an external call by
// its caller, and partition the critical path: their contributions (Cov(X, L) / Var(L))
// and those of untracked time and the root's body sum to 1; here there is neither.
TEST(Places, CallSiteAndBodyMergeAndExternalCallsNameTheirCaller) {
  auto dir = fresh_dir("places-external");
  TraceBuilder b(1);
  for (std::uint64_t i = 0; i < 40; ++i) {
    std::uint64_t t = i * 10000, x = 100 + (i * 37) % 200, y = 50 + (i * 53) % 150;
    b.thread(1)
        .emit(VPROF_REC_INTERVAL_BEGIN, i + 1, t)
        .enter(1, t, 1)
        .enter(2, t, 1)
        .enter(3, t, 2)
        .enter(4, t, 2)
        .exit(4, t + x, 2)
        .enter(5, t + x, 2)
        .exit(5, t + x + y, 2)
        .exit(3, t + x + y, 2)
        .exit(2, t + x + y, 1)
        .exit(1, t + x + y, 1)
        .emit(VPROF_REC_INTERVAL_END, i + 1, t + x + y);
  }
  b.write(dir / "trace");
  vprof::ws::Database db(dir / "vprof.db");
  sync_block_workspace(db, false);
  auto res = va::analyze(dir / "trace", &db, {});
  const auto &g = res.groups[0];
  auto place = [&](const std::string &name) -> const va::Place * {
    for (const auto &p : g.places)
      if (p.name == name)
        return &p;
    return nullptr;
  };
  const va::Place *sync = place("sync_block"), *fsync = place("fsync() in sync_block"),
                  *memset = place("memset() in sync_block");
  ASSERT_NE(fsync, nullptr);
  ASSERT_NE(memset, nullptr);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->contexts, 2); // the call site in serve and the body
  EXPECT_EQ(sync->function, 2);
  EXPECT_EQ(fsync->key, "x:fsync@2");
  EXPECT_FALSE(fsync->waker);
  // X_fsync = x exactly: its share is Var(x) / Var(x + y)
  std::vector<double> xs, ls;
  for (std::uint64_t i = 0; i < 40; ++i) {
    xs.push_back(double(100 + (i * 37) % 200));
    ls.push_back(xs.back() + double(50 + (i * 53) % 150));
  }
  auto var = [](const std::vector<double> &v) {
    double m = 0, s = 0;
    for (double a : v)
      m += a;
    m /= double(v.size());
    for (double a : v)
      s += (a - m) * (a - m);
    return s / double(v.size());
  };
  const double ns_per_tick = 1e9 / res.ticks_per_second;
  EXPECT_NEAR(fsync->share, var(xs) / var(ls), 1e-9);
  double mean_x = 0;
  for (double a : xs)
    mean_x += a / double(xs.size());
  EXPECT_NEAR(fsync->mean_ns / ns_per_tick, mean_x, 1e-6);
  double total = 0;
  for (const auto &p : g.places)
    total += p.contribution;
  EXPECT_NEAR(total, 1.0, 1e-9);
  // ranked by score
  for (std::size_t i = 1; i < g.places.size(); ++i)
    EXPECT_GE(g.places[i - 1].score, g.places[i].score);
}

// The waker's work is merged into the waker's places and told apart by `via`; the waits
// table holds the wait with the waker's work it stands for.
TEST(Places, WakerWorkIsAttributedThroughTheWait) {
  auto dir = fresh_dir("places-waker");
  auto tdir = condvar_trace(dir, true);
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  auto res = va::analyze(tdir, &db, {});
  const auto &g = res.groups[0];
  ASSERT_FALSE(g.places.empty());
  const auto &top = g.places[0];
  EXPECT_EQ(top.function, 11) << top.name; // compute, the helper's varying work
  EXPECT_TRUE(top.waker);
  ASSERT_FALSE(top.via.empty());
  EXPECT_EQ(top.via[0].first, "[wait:cond] in await");
  EXPECT_GT(top.contribution, 0.9);
  ASSERT_FALSE(g.waits.empty());
  EXPECT_EQ(g.waits[0].name, "[wait:cond] in await");
  EXPECT_EQ(g.waits[0].contexts, 1);
  EXPECT_GT(g.waits[0].contribution, 0.95);
  // the places and the few untracked ticks between frames partition L
  double total = 0;
  for (const auto &p : g.places)
    total += p.contribution;
  EXPECT_NEAR(total, 1.0, 0.02);
  // stored with the run
  va::store(db, res, 0);
  auto st = db.prepare("SELECT name, via FROM places WHERE label = '' AND rank = 1");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), top.name);
  EXPECT_NE(st.text(1).find("[wait:cond] in await="), std::string::npos);
}

// The final plan keeps the annotated root, the function that waited (its wait stands for
// the waker's work), the waker's varying compute — the answer — and the chain above it (the
// waker's frame helper); it drops a planned function the run never reached. A plan with
// nothing to drop is not written.
TEST(Prune, FinalPlanKeepsWhatCarriesVariance) {
  auto dir = fresh_dir("prune");
  auto tdir = condvar_trace(dir, true);
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  db.exec("INSERT INTO plans(iteration, function, reason) VALUES "
          "(0,10,'expand'),(0,11,'expand'),(0,12,'expand');");
  auto res = va::analyze(tdir, &db, {});
  va::store(db, res, 0);
  EXPECT_THROW(vprof::testing::final_plan(db, 1, 0.01),
               vprof::planner::PlanError); // nothing stored for 1
  auto pr = vprof::testing::final_plan(db, 0, 0.01);
  ASSERT_TRUE(pr.written);
  EXPECT_EQ(pr.next_iteration, 1);
  EXPECT_EQ(pr.dropped, 1u);
  EXPECT_EQ(pr.answer.key, "f:11");
  EXPECT_EQ(pr.answer.chain, (std::vector<std::int64_t>{1, 2, 10, 11}));
  EXPECT_EQ(plan(db, 1), (std::vector<std::int64_t>{1, 2, 10, 11}));
  // the final plan's answer is the analyzer's (its first ranked place, docs/analyzer.md,
  // "The answer"), and its chain the program's functions on the analyzer's answer chain
  // (the call of pthread_cond_wait, an outside function, is on it too: no plan times it)
  const va::Answer &answer = res.groups.front().answer;
  EXPECT_EQ(answer.key, pr.answer.key);
  std::vector<std::int64_t> on_chain;
  for (auto f : answer.chain_functions)
    if (auto row = vprof::ws::function_row(db, f); row && row->defined)
      on_chain.push_back(f);
  std::sort(on_chain.begin(), on_chain.end());
  EXPECT_EQ(on_chain, pr.answer.chain);
  EXPECT_EQ(answer.chain_functions.size(), on_chain.size() + 1);
  EXPECT_TRUE(vprof::ws::is_final_plan(db, 1));
  EXPECT_FALSE(vprof::ws::is_final_plan(db, 0));
  auto st = db.prepare("SELECT reason, final FROM plans WHERE iteration = 1 AND function = 11");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "expand");
  EXPECT_EQ(st.int64(1), 1);
  // measured again with the final plan: nothing left to drop
  va::store(db, res, 1);
  auto again = vprof::testing::final_plan(db, 1, 0.01);
  EXPECT_FALSE(again.written);
  EXPECT_EQ(again.kept, 4u);
  EXPECT_EQ(again.dropped, 0u);
  // Expanding a final plan by hand gives a plan that is not final. (A later run of a final
  // plan without helper where the waker's frames are missing: the wait expands into the
  // callers of pthread_cond_signal, helper.)
  db.exec("DELETE FROM plans WHERE iteration = 1 AND function = 10");
  va::store(db, va::analyze(condvar_trace(dir / "b", false), &db, {}), 1);
  auto e = vprof::testing::expand(db, 1, 3, 8);
  ASSERT_FALSE(e.stop) << e.reason;
  EXPECT_FALSE(vprof::ws::is_final_plan(db, 2));
  auto r = db.prepare("SELECT reason, final FROM plans WHERE iteration = 2 AND function = 11");
  ASSERT_TRUE(r.step());
  EXPECT_EQ(r.text(0), "expand");
  EXPECT_EQ(r.int64(1), 0);
}

// The answer keeps its depth: iteration 0 found compute (a frontier function then: spin,
// its callee, was not planned) as the waker's work; iteration 1 planned spin, but its run
// lost the waker's frames. The final plan still keeps compute's chain from iteration 0 and
// drops spin, which carried nothing in either run; with nothing to drop, no plan is written.
TEST(Prune, TheAnswerOfAnEarlierIterationKeepsItsChain) {
  auto dir = fresh_dir("prune-frontier");
  vprof::ws::Database db(dir / "vprof.db");
  condvar_workspace(db);
  db.exec("INSERT INTO plans(iteration, function, reason) VALUES (0,10,'expand'),"
          "(0,11,'expand');"); // spin (12) not
  va::store(db, va::analyze(condvar_trace(dir / "a", true), &db, {}), 0);
  auto first = vprof::testing::final_plan(db, 0, 0.01);
  EXPECT_FALSE(first.written) << "everything planned is on the answer's chain";
  EXPECT_EQ(first.answer.key, "f:11");
  EXPECT_EQ(first.answer.iteration, 0);
  db.exec("INSERT INTO plans(iteration, function, reason) VALUES (1,1,'root'),(1,2,'depth'),"
          "(1,10,'expand'),(1,11,'expand'),(1,12,'expand');");
  va::store(db, va::analyze(condvar_trace(dir / "b", false), &db, {}), 1);
  auto pr = vprof::testing::final_plan(db, 1, 0.01);
  ASSERT_TRUE(pr.written);
  EXPECT_EQ(pr.answer.key, "f:11");
  EXPECT_EQ(pr.answer.iteration, 0);
  EXPECT_EQ(plan(db, 2), (std::vector<std::int64_t>{1, 2, 10, 11}));
  EXPECT_EQ(pr.dropped, 1u);
}

// Noise cannot outrank a cause: c (height 0, specificity 100) varies by a few ticks, b
// (height H, specificity 0) carries almost all of Var(L). Ranked by score alone c would come
// first; below the noise floor (1 % of Var(L)) it ranks after b, as factor and as place.
TEST(Ranking, ANegligibleShareCannotOutrankALargeOneBySpecificity) {
  auto dir = fresh_dir("noise");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  for (std::uint64_t i = 0; i < 60; ++i) {
    std::uint64_t x = 100 + (i * 37) % 900, y = 10 + 10 * (i % 2);
    t.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, now);
    t.enter(1, now + 1, 1).exit(1, now + 1 + x, 1);
    t.enter(2, now + 1 + x, 1).exit(2, now + 1 + x + y, 1);
    now += 1 + x + y;
    t.emit(VPROF_REC_INTERVAL_END, i + 1, now);
    now += 5;
  }
  b.write(dir / "trace");
  vprof::ws::Database db(dir / "vprof.db");
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'a','a',1,10,1),(2,'b','b',1,10,0),(3,'c','c',1,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'direct','/s/n.c',5,3),(1,3,'direct','/s/n.c',6,3);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'call',1,2,'b','/s/n.c',5,3),(2,'call',1,3,'c','/s/n.c',6,3);");
  auto top_name = [](const va::GroupResult &g) { return g.places.front().name; };
  va::AnalyzeOptions scored;
  scored.noise_share = 0; // the plain VProfiler score
  scored.ranking = va::Ranking::VProfiler;
  scored.bootstrap_samples = 0;
  auto plain = va::analyze(dir / "trace", &db, scored);
  ASSERT_FALSE(plain.groups[0].factors.empty());
  EXPECT_EQ(plain.groups[0].factors[0].key, "var:/s2") << "specificity alone puts c first";
  EXPECT_EQ(top_name(plain.groups[0]), "c");
  auto res = va::analyze(dir / "trace", &db, {});
  const auto &g = res.groups[0];
  EXPECT_EQ(g.factors[0].key, "var:/s1");
  EXPECT_FALSE(g.factors[0].noise);
  EXPECT_GE(g.noise_floor, 0.01);
  bool c_is_noise = false;
  for (const auto &f : g.factors)
    if (f.key == "var:/s2")
      c_is_noise = f.noise;
  EXPECT_TRUE(c_is_noise);
  EXPECT_EQ(top_name(g), "b");
  EXPECT_TRUE(g.places.back().noise);
}

// Compensating siblings (issue 12): `split` hands r ticks to stage_a and 400 - r to stage_b,
// so each varies a lot but their sum is constant; `cause` varies for real. All three sit at
// the same height. VProfiler's score (specificity x share) ranks the two stages first; the net
// ranking (a variance term less what the rest of its node cancels, places by contribution)
// ranks the cause first, as factor and as place.
TEST(Ranking, CompensatingSiblingsCannotOutrankTheCause) {
  auto dir = fresh_dir("compensate");
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0;
  for (std::uint64_t i = 0; i < 80; ++i) {
    std::uint64_t r = 20 + (i * 53) % 360, c = 50 + (i * 7) % 120;
    t.emit(VPROF_REC_INTERVAL_BEGIN, i + 1, now);
    t.enter(1, now + 1, 1).exit(1, now + 1 + r, 1);
    now += 1 + r;
    t.enter(2, now, 1).exit(2, now + 400 - r, 1);
    now += 400 - r;
    t.enter(3, now, 1).exit(3, now + c, 1);
    now += c;
    t.emit(VPROF_REC_INTERVAL_END, i + 1, now);
    now += 5;
  }
  b.write(dir / "trace");
  vprof::ws::Database db(dir / "vprof.db");
  db.exec("INSERT INTO functions(id, usr, name, defined, height, annotated) VALUES "
          "(1,'txn','txn',1,1,1),(2,'stage_a','stage_a',1,0,0),(3,'stage_b','stage_b',1,0,0),"
          "(4,'cause','cause',1,0,0);"
          "INSERT INTO calls(caller, callee, kind, file, line, col) VALUES "
          "(1,2,'direct','/s/c.c',5,3),(1,3,'direct','/s/c.c',6,3),(1,4,'direct','/s/c.c',7,3);"
          "INSERT INTO sites(id, kind, function, callee, callee_name, file, line, col) VALUES "
          "(1,'call',1,2,'stage_a','/s/c.c',5,3),(2,'call',1,3,'stage_b','/s/c.c',6,3),"
          "(3,'call',1,4,'cause','/s/c.c',7,3);");
  va::AnalyzeOptions vp;
  vp.ranking = va::Ranking::VProfiler;
  vp.bootstrap_samples = 0;
  auto old = va::analyze(dir / "trace", &db, vp);
  const auto &og = old.groups[0];
  ASSERT_FALSE(og.factors.empty());
  EXPECT_NE(og.factors[0].key, "var:/s3") << "VProfiler's score is fooled by the pair";
  EXPECT_NE(og.places.front().name, "cause");

  va::AnalyzeOptions net;
  net.bootstrap_samples = 0;
  auto res = va::analyze(dir / "trace", &db, net);
  EXPECT_EQ(res.ranking, va::Ranking::Net);
  const auto &g = res.groups[0];
  ASSERT_FALSE(g.factors.empty());
  EXPECT_EQ(g.factors[0].key, "var:/s3");
  EXPECT_NEAR(g.factors[0].net_share, g.factors[0].share, 1e-9) << "the cause cancels nothing";
  EXPECT_EQ(g.places.front().name, "cause");
  // net share = min(Var(X), Cov(X, T_root)): for stage_a, Var(a) + Cov(a, b) + Cov(a, c)
  // with Cov(a, b) = -Var(a) (covariance factors are 2 Cov)
  std::map<std::string, va::Factor> by_key;
  for (const auto &f : g.factors) {
    EXPECT_NEAR(f.vprofiler_score, f.specificity * f.share, 1e-12);
    by_key[f.key] = f;
  }
  ASSERT_TRUE(by_key.count("var:/s1") && by_key.count("cov:/s1|/s2") &&
              by_key.count("cov:/s1|/s3"));
  const double var_a = by_key["var:/s1"].share;
  EXPECT_GT(var_a, 1.0) << "stage_a alone varies more than the interval";
  EXPECT_NEAR(by_key["cov:/s1|/s2"].share, -2 * var_a, 1e-9);
  EXPECT_NEAR(by_key["var:/s1"].net_share, by_key["cov:/s1|/s3"].share / 2, 1e-9)
      << "stage_b cancels all of stage_a's variance";
  EXPECT_LT(std::abs(by_key["var:/s1"].net_share), 0.05);
}
