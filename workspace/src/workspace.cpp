// Implementation of the workspace database layer over SQLite's C API.
#include "vprof/workspace.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <vector>

namespace vprof::ws {
namespace {

// The schema text, embedded at build time from schema.sql.
constexpr const char *kSchema =
#include "schema.sql.inc"
    ;

[[noreturn]] void fail(sqlite3 *db, const std::filesystem::path &path, std::string_view what) {
  throw Error(path.string() + ": " + std::string(what) + ": " +
              (db ? sqlite3_errmsg(db) : "out of memory"));
}

// The columns of a table (empty when it does not exist).
std::vector<std::string> columns_of(Database &db, const std::string &table) {
  std::vector<std::string> out;
  Statement st = db.prepare("SELECT name FROM pragma_table_info(?)");
  st.bind(1, table);
  while (st.step())
    out.push_back(st.text(0));
  return out;
}

bool has_column(Database &db, const std::string &table, const std::string &column) {
  auto cols = columns_of(db, table);
  return std::find(cols.begin(), cols.end(), column) != cols.end();
}

// Version 1 -> 2: plans get typed `factor` and `final` columns (v1 wrote "expand:<factor>"
// and "final:<reason>" into `reason`), analysis runs their longest stream, places their
// kind, holder and node. Tables that do not exist yet are created by the schema after.
void migrate_from_1(Database &db) {
  if (!columns_of(db, "plans").empty() && !has_column(db, "plans", "factor")) {
    db.exec("ALTER TABLE plans ADD COLUMN factor TEXT;"
            "ALTER TABLE plans ADD COLUMN final INTEGER NOT NULL DEFAULT 0;"
            "UPDATE plans SET final = 1, reason = substr(reason, 7) WHERE reason LIKE 'final:%';"
            "UPDATE plans SET factor = substr(reason, 8), reason = 'expand' "
            "WHERE reason LIKE 'expand:%';");
  }
  if (!columns_of(db, "analysis_runs").empty() &&
      !has_column(db, "analysis_runs", "max_stream_records"))
    db.exec("ALTER TABLE analysis_runs ADD COLUMN max_stream_records INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "places").empty() && !has_column(db, "places", "place_kind"))
    db.exec("ALTER TABLE places ADD COLUMN place_kind TEXT NOT NULL DEFAULT 'function';"
            "ALTER TABLE places ADD COLUMN holder INTEGER;"
            "ALTER TABLE places ADD COLUMN node INTEGER;");
}

// Columns added within version 2 (before its first release): added to a workspace that was
// created without them.
void add_late_columns(Database &db) {
  if (!columns_of(db, "functions").empty() && !has_column(db, "functions", "body"))
    db.exec("ALTER TABLE functions ADD COLUMN body INTEGER NOT NULL DEFAULT 1");
  if (!columns_of(db, "functions").empty() && !has_column(db, "functions", "rewritable"))
    db.exec("ALTER TABLE functions ADD COLUMN rewritable INTEGER NOT NULL DEFAULT 1");
  if (!columns_of(db, "calls").empty() && !has_column(db, "calls", "in_loop"))
    db.exec("ALTER TABLE calls ADD COLUMN in_loop INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "analysis_runs").empty() && !has_column(db, "analysis_runs", "ranking"))
    db.exec("ALTER TABLE analysis_runs ADD COLUMN ranking TEXT NOT NULL DEFAULT 'net'");
  if (!columns_of(db, "factors").empty() && !has_column(db, "factors", "net_share"))
    db.exec("ALTER TABLE factors ADD COLUMN net_share REAL NOT NULL DEFAULT 0;"
            "ALTER TABLE factors ADD COLUMN vprofiler_score REAL NOT NULL DEFAULT 0");
  if (!columns_of(db, "analysis_runs").empty() && !has_column(db, "analysis_runs", "cpu_ns"))
    db.exec("ALTER TABLE analysis_runs ADD COLUMN cpu_ns REAL NOT NULL DEFAULT 0;"
            "ALTER TABLE analysis_runs ADD COLUMN cpu_processes INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "analysis_runs").empty() && !has_column(db, "analysis_runs", "span_ns"))
    db.exec("ALTER TABLE analysis_runs ADD COLUMN span_ns REAL NOT NULL DEFAULT 0;"
            "ALTER TABLE analysis_runs ADD COLUMN cores INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "places").empty() && !has_column(db, "places", "vprofiler_score"))
    db.exec("ALTER TABLE places ADD COLUMN vprofiler_score REAL NOT NULL DEFAULT 0");
  if (!columns_of(db, "analysis_runs").empty() &&
      !has_column(db, "analysis_runs", "critical_records"))
    db.exec("ALTER TABLE analysis_runs ADD COLUMN critical_records INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "places").empty() && !has_column(db, "places", "outside_waker"))
    db.exec("ALTER TABLE places ADD COLUMN outside_waker INTEGER NOT NULL DEFAULT 0");
  if (!columns_of(db, "plans").empty() && !has_column(db, "plans", "body_only"))
    db.exec("ALTER TABLE plans ADD COLUMN body_only INTEGER NOT NULL DEFAULT 0");
}

} // namespace

Database::Database(const std::filesystem::path &path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = path.string() + ": cannot open workspace database: " +
                      (db_ ? sqlite3_errmsg(db_) : "out of memory");
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(msg);
  }
  // Parallel builds run many compiler wrappers against one workspace.
  sqlite3_busy_timeout(db_, 60000);
  exec("PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL;");
  int version = 0;
  {
    Statement st = prepare("PRAGMA user_version");
    if (st.step())
      version = static_cast<int>(st.int64(0));
  }
  if (version > kSchemaVersion)
    throw Error(path.string() + ": workspace schema version " + std::to_string(version) +
                " is newer than this vprof (" + std::to_string(kSchemaVersion) + ")");
  Transaction tx(*this);
  if (version == 1)
    migrate_from_1(*this);
  add_late_columns(*this);
  exec(kSchema);
  exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  tx.commit();
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(std::string_view sql) {
  std::string s(sql);
  char *err = nullptr;
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(path_.string() + ": " + msg + " (in: " + s.substr(0, 80) + ")");
  }
}

Statement Database::prepare(std::string_view sql) {
  sqlite3_stmt *st = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st, nullptr) != SQLITE_OK)
    fail(db_, path_, "cannot prepare '" + std::string(sql.substr(0, 80)) + "'");
  return Statement(*this, st);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

std::optional<std::string> Database::meta(std::string_view key) {
  Statement st = prepare("SELECT value FROM meta WHERE key = ?");
  st.bind(1, key);
  if (st.step() && !st.is_null(0))
    return st.text(0);
  return std::nullopt;
}

void Database::set_meta(std::string_view key, std::string_view value) {
  prepare("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = "
          "excluded.value")
      .bind(1, key)
      .bind(2, value)
      .run();
}

Transaction::Transaction(Database &db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }
Statement::Statement(Statement &&o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }

Statement &Statement::bind(int i, std::int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK)
    fail(db_->handle(), db_->path(), "bind");
  return *this;
}
Statement &Statement::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK)
    fail(db_->handle(), db_->path(), "bind");
  return *this;
}
Statement &Statement::bind(int i, std::string_view v) {
  if (sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    fail(db_->handle(), db_->path(), "bind");
  return *this;
}
Statement &Statement::bind_null(int i) {
  if (sqlite3_bind_null(stmt_, i) != SQLITE_OK)
    fail(db_->handle(), db_->path(), "bind");
  return *this;
}
bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  fail(db_->handle(), db_->path(), "step");
}
void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
void Statement::run() {
  step();
  reset();
}
std::int64_t Statement::int64(int c) const { return sqlite3_column_int64(stmt_, c); }
double Statement::real(int c) const { return sqlite3_column_double(stmt_, c); }
std::string Statement::text(int c) const {
  const unsigned char *p = sqlite3_column_text(stmt_, c);
  return p ? std::string(reinterpret_cast<const char *>(p),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, c)))
           : std::string();
}
bool Statement::is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }

std::filesystem::path default_path(const std::filesystem::path &root) {
  return root / ".vprof" / "vprof.db";
}

} // namespace vprof::ws
