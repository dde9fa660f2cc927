// The vprof workspace database (.vprof/vprof.db): opening it with the schema in place,
// and a thin RAII layer over SQLite's C API shared by the instrumenter, the analyzer
// and the driver. SQLite types stay behind this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace vprof::ws {

// Schema version stored in PRAGMA user_version.
inline constexpr int kSchemaVersion = 2;

// Any SQLite failure, with the database path and SQLite's message.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Statement;

// An open workspace database. Opening creates the file and the schema when missing,
// refuses a database whose schema version is newer than this build, and sets a busy
// timeout so that parallel compiler-wrapper processes wait for each other instead of
// failing.
class Database {
public:
  explicit Database(const std::filesystem::path &path);
  ~Database();
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;

  // Runs one or more statements without results.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  std::int64_t last_insert_rowid() const;
  // Extends the schema (the analyzer adds its result tables this way).
  void ensure_tables(std::string_view create_sql) { exec(create_sql); }

  std::optional<std::string> meta(std::string_view key);
  void set_meta(std::string_view key, std::string_view value);

  const std::filesystem::path &path() const { return path_; }
  sqlite3 *handle() const { return db_; }

private:
  std::filesystem::path path_;
  sqlite3 *db_ = nullptr;
};

// BEGIN IMMEDIATE … COMMIT, rolled back if not committed.
class Transaction {
public:
  explicit Transaction(Database &db);
  ~Transaction();
  void commit();

private:
  Database &db_;
  bool done_ = false;
};

// A prepared statement. bind() indices start at 1; step() returns true while a row
// is available; column getters index from 0.
class Statement {
public:
  Statement(Database &db, sqlite3_stmt *stmt) : db_(&db), stmt_(stmt) {}
  ~Statement();
  Statement(Statement &&other) noexcept;
  Statement &operator=(Statement &&) = delete;
  Statement(const Statement &) = delete;

  Statement &bind(int index, std::int64_t v);
  Statement &bind(int index, int v) { return bind(index, static_cast<std::int64_t>(v)); }
  Statement &bind(int index, double v);
  Statement &bind(int index, std::string_view v);
  Statement &bind_null(int index);
  bool step();
  void reset();
  // Runs a statement that returns no rows, then resets it for reuse.
  void run();

  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

private:
  Database *db_;
  sqlite3_stmt *stmt_;
};

// The default workspace location under a project root.
std::filesystem::path default_path(const std::filesystem::path &root);

} // namespace vprof::ws
