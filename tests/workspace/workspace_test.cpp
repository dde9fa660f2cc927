// Tests of vprof::ws: schema creation, version checks, transactions, meta, errors, and the
// typed writers of the scan, the rewriter and the analyzer read back.
#include "vprof/workspace.hpp"
#include "vprof/workspace_analysis.hpp"
#include "vprof/workspace_scan.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using vprof::ws::Database;

namespace {
class WorkspaceTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vprof-ws-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

int count(Database &db, const std::string &sql) {
  auto st = db.prepare(sql);
  EXPECT_TRUE(st.step());
  return static_cast<int>(st.int64(0));
}
} // namespace

TEST_F(WorkspaceTest, CreatesSchemaAndVersion) {
  Database db(vprof::ws::default_path(dir_));
  EXPECT_TRUE(fs::exists(dir_ / ".vprof" / "vprof.db"));
  EXPECT_EQ(count(db, "PRAGMA user_version"), vprof::ws::kSchemaVersion);
  for (const char *t : {"meta", "functions", "calls", "sites", "plans"})
    EXPECT_EQ(count(db, std::string("SELECT COUNT(*) FROM sqlite_master WHERE name='") + t + "'"),
              1)
        << t;
}

TEST_F(WorkspaceTest, ReopenKeepsData) {
  auto path = vprof::ws::default_path(dir_);
  {
    Database db(path);
    db.prepare("INSERT INTO functions(usr, name, defined) VALUES(?, ?, 1)")
        .bind(1, "c:@F@f")
        .bind(2, "f")
        .run();
  }
  Database db(path);
  auto st = db.prepare("SELECT name FROM functions WHERE usr = 'c:@F@f'");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "f");
}

TEST_F(WorkspaceTest, RefusesNewerSchema) {
  auto path = vprof::ws::default_path(dir_);
  {
    Database db(path);
    db.exec("PRAGMA user_version = 99");
  }
  try {
    Database db(path);
    FAIL() << "a newer schema must be refused";
  } catch (const vprof::ws::Error &e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99 is newer"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos);
  }
}

TEST_F(WorkspaceTest, NotADatabaseIsAnErrorNamingTheFile) {
  fs::create_directories(dir_);
  auto path = dir_ / "garbage.db";
  {
    FILE *f = fopen(path.c_str(), "w");
    fputs("this is not a sqlite database, just some text that is long enough to be a header", f);
    fclose(f);
  }
  try {
    Database db(path);
    FAIL() << "expected an error";
  } catch (const vprof::ws::Error &e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST_F(WorkspaceTest, UncommittedTransactionRollsBack) {
  Database db(vprof::ws::default_path(dir_));
  {
    vprof::ws::Transaction tx(db);
    db.set_meta("k", "v");
  }
  EXPECT_FALSE(db.meta("k").has_value());
  {
    vprof::ws::Transaction tx(db);
    db.set_meta("k", "v1");
    db.set_meta("k", "v2");
    tx.commit();
  }
  EXPECT_EQ(db.meta("k").value_or(""), "v2");
}

TEST_F(WorkspaceTest, SiteIdentityIsUnique) {
  Database db(vprof::ws::default_path(dir_));
  db.exec("INSERT INTO functions(id, usr, name) VALUES(1, 'u', 'f')");
  db.exec("INSERT INTO sites(kind, function, file, line, col) VALUES('body', 1, 'a.c', 1, 1)");
  EXPECT_THROW(
      db.exec("INSERT INTO sites(kind, function, file, line, col) VALUES('body', 1, 'a.c', 1, 1)"),
      vprof::ws::Error);
  EXPECT_THROW(
      db.exec("INSERT INTO sites(kind, function, file, line, col) VALUES('loop', 1, 'a.c', 2, 1)"),
      vprof::ws::Error);
}

// A version-1 workspace (reasons "expand:<factor>", "final:<reason>") opens as version 2
// with the factor and the final mark in their own columns; nothing else changes.
TEST_F(WorkspaceTest, MigratesVersion1Plans) {
  auto path = vprof::ws::default_path(dir_);
  {
    Database db(path);
    db.exec("DROP TABLE plans; CREATE TABLE plans(iteration INTEGER NOT NULL, function INTEGER "
            "NOT NULL, reason TEXT NOT NULL, PRIMARY KEY(iteration, function));"
            "INSERT INTO plans VALUES (0, 1, 'root'), (1, 2, 'expand:var:/s1'), "
            "(2, 2, 'final:expand:var:/s1'), (2, 1, 'final:root');"
            "PRAGMA user_version = 1;");
  }
  Database db(path);
  EXPECT_EQ(count(db, "PRAGMA user_version"), vprof::ws::kSchemaVersion);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM plans WHERE final = 1"), 2);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM plans WHERE reason = 'expand' AND factor = "
                      "'var:/s1'"),
            2);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM plans WHERE reason = 'root'"), 2);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM plans WHERE reason LIKE '%:%'"), 0);
}

// A declaration does not take a definition's place; a definition replaces a declaration's.
TEST_F(WorkspaceTest, FunctionWriterMergesDeclarationsAndDefinitions) {
  Database db(vprof::ws::default_path(dir_));
  vprof::ws::FunctionWriter fns(db);
  auto a = fns.merge({.usr = "c:@F@f", .name = "f", .file = "f.h", .line = 1});
  auto b = fns.merge({.usr = "c:@F@f", .name = "ns::f", .file = "f.c", .line = 9, .defined = true});
  auto c = fns.merge({.usr = "c:@F@f", .name = "g", .file = "g.h", .line = 2});
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*b, *c);
  auto row = vprof::ws::function_row(db, *a);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->name, "ns::f");
  EXPECT_TRUE(row->defined);
  EXPECT_EQ(vprof::ws::function_ids(db).at("c:@F@f"), *a);
  EXPECT_EQ(vprof::ws::max_function_id(db), *a);
}

TEST_F(WorkspaceTest, CallGraphHeightsAndSites) {
  Database db(vprof::ws::default_path(dir_));
  vprof::ws::FunctionWriter fns(db);
  auto f = *fns.merge({.usr = "f", .name = "f", .file = "a.c", .line = 1, .defined = true});
  auto g = *fns.merge({.usr = "g", .name = "g", .file = "a.c", .line = 5, .defined = true});
  vprof::ws::CallWriter calls(db);
  for (int i = 0; i < 2; ++i) // the same edge twice is kept once
    calls.add({.caller = f, .callee = g, .kind = "direct", .file = "a.c", .line = 2, .col = 3});
  EXPECT_EQ(vprof::ws::call_graph_size(db).calls, 1);
  EXPECT_EQ(vprof::ws::call_edges(db),
            (std::vector<std::pair<vprof::ws::FunctionId, vprof::ws::FunctionId>>{{f, g}}));
  std::vector<int> height(static_cast<std::size_t>(g + 1), 0);
  height[static_cast<std::size_t>(f)] = 1;
  vprof::ws::write_heights(db, height);
  EXPECT_EQ(vprof::ws::max_height(db), 1);
  EXPECT_FALSE(vprof::ws::max_annotated_height(db));

  vprof::ws::SiteTableWriter table(db);
  EXPECT_EQ(table.function_id("g"), g);
  EXPECT_EQ(table.function_id("h"), 0);
  EXPECT_EQ(table.sole_callee_at(f, "a.c", 2, 3), g);
  vprof::ws::SiteEntry call{
      .function = f, .callee = g, .callee_name = "g", .file = "a.c", .line = 2, .col = 3};
  auto s1 = table.site_id(call);
  auto s2 = table.site_id(call); // a site keeps its id
  ASSERT_TRUE(s1 && s2);
  EXPECT_EQ(*s1, *s2);
  auto facts = vprof::ws::SiteFactsReader(db).read(*s1);
  ASSERT_TRUE(facts);
  EXPECT_FALSE(facts->body);
  EXPECT_EQ(facts->function_name, "f");
  EXPECT_EQ(facts->function_height, 1);
  EXPECT_EQ(facts->callee, g);
  EXPECT_EQ(facts->callee_name, "g");
  EXPECT_TRUE(facts->callee_defined);
  EXPECT_EQ(facts->line, 2);
  auto table_of_sites = vprof::ws::site_function_table(db, 1 << 24);
  ASSERT_GT(table_of_sites.size(), static_cast<std::size_t>(*s1));
  EXPECT_EQ(table_of_sites[static_cast<std::size_t>(*s1)], f);
}

TEST_F(WorkspaceTest, ResultWriterRowsReadBack) {
  Database db(vprof::ws::default_path(dir_));
  vprof::ws::RunId run = 0;
  {
    vprof::ws::Transaction tx(db);
    run = vprof::ws::insert_analysis_run(db, {.iteration = 3, .trace_dir = "t", .intervals = 7});
    vprof::ws::ResultWriter out(db, run);
    out.interval_stats("", {.count = 7, .mean_ns = 100});
    out.tree_node("", {.node = 0, .path = "", .name = "(interval)"});
    out.tree_node("", {.node = 1,
                       .parent = 0,
                       .path = "/s1",
                       .name = "f",
                       .kind = vprof::ws::NodeKind::Site,
                       .site = 1,
                       .mean_ns = 60});
    out.factor("", {.rank = 1, .key = "var:/s1", .name = "f", .a = 1, .share = 0.5});
    out.place("", {.rank = 1, .key = "f:1", .name = "f", .contribution = 0.4});
    out.wait("", {.rank = 1, .key = "w:mutex@f:1", .name = "mutex", .contribution = 0.1});
    out.whatif("", {.key = "var:/s1", .var_drop = 0.5});
    tx.commit();
  }
  auto latest = vprof::ws::latest_run(db, 3);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, run);
  EXPECT_EQ(latest->intervals, 7u);
  EXPECT_DOUBLE_EQ(latest->mean_ns, 100);
  auto tree = vprof::ws::tree_of(db, run);
  ASSERT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree[0].kind, vprof::ws::NodeKind::Root);
  EXPECT_EQ(tree[0].parent, -1);
  EXPECT_EQ(tree[1].kind, vprof::ws::NodeKind::Site);
  EXPECT_EQ(tree[1].site, 1);
  auto factors = vprof::ws::top_factors(db, run, 10);
  ASSERT_EQ(factors.size(), 1u);
  EXPECT_EQ(factors[0].b, -1);
  auto places = vprof::ws::places_of(db, run);
  ASSERT_EQ(places.size(), 2u);
  EXPECT_EQ(places[1].kind, vprof::ws::PlaceKind::Wait);
  auto history = vprof::ws::iteration_rows(db);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].top_place.value_or(""), "f");
  EXPECT_EQ(vprof::ws::count_analysis_runs(db), 1);
  {
    vprof::ws::Transaction tx(db);
    vprof::ws::delete_analysis_results(db);
    tx.commit();
  }
  EXPECT_EQ(vprof::ws::count_analysis_runs(db), 0);
  EXPECT_EQ(count(db, "SELECT COUNT(*) FROM tree_nodes"), 0);
}
