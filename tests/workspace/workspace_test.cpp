// Tests of vprof::ws: schema creation, version checks, transactions, meta, errors.
#include "vprof/workspace.hpp"

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
