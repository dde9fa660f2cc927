/* A small SQLite workload with known answers, used to check that the instrumented
 * amalgamation still behaves: create, insert, index, select, aggregate, update, delete.
 * Exits non-zero (naming the failed check) on any wrong answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite3.h"

static sqlite3 *db;

static void check_rc(int rc, int want, const char *what) {
  if (rc != want) {
    fprintf(stderr, "workload: %s: rc=%d (%s)\n", what, rc, sqlite3_errmsg(db));
    exit(1);
  }
}

static void exec(const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "workload: %s: %s\n", sql, err ? err : "?");
    exit(1);
  }
}

/* Runs a one-row query and returns column 0 as int64 (and column 1 as double). */
static sqlite3_int64 query1(const char *sql, double *second) {
  sqlite3_stmt *st;
  check_rc(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, sql);
  check_rc(sqlite3_step(st), SQLITE_ROW, sql);
  sqlite3_int64 v = sqlite3_column_int64(st, 0);
  if (second)
    *second = sqlite3_column_double(st, 1);
  sqlite3_finalize(st);
  return v;
}

static void expect(const char *what, sqlite3_int64 got, sqlite3_int64 want) {
  if (got != want) {
    fprintf(stderr, "workload: %s: got %lld, want %lld\n", what, (long long)got, (long long)want);
    exit(1);
  }
  printf("%s = %lld\n", what, (long long)got);
}

int main(void) {
  const int n = 20000;
  check_rc(sqlite3_open(":memory:", &db), SQLITE_OK, "open");
  exec("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL)");
  exec("BEGIN");
  sqlite3_stmt *ins;
  check_rc(sqlite3_prepare_v2(db, "INSERT INTO t(a, b, c) VALUES(?, ?, ?)", -1, &ins, NULL),
           SQLITE_OK, "prepare");
  for (int i = 1; i <= n; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%03d", i % 100);
    sqlite3_bind_int(ins, 1, i);
    sqlite3_bind_text(ins, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(ins, 3, i * 0.5);
    check_rc(sqlite3_step(ins), SQLITE_DONE, "insert");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  exec("COMMIT");
  exec("CREATE INDEX t_b ON t(b)");

  double csum = 0;
  expect("count", query1("SELECT count(*), sum(c) FROM t", &csum), n);
  expect("sum(c)*2", (sqlite3_int64)(csum * 2), (sqlite3_int64)n * (n + 1) / 2);
  expect("sum(a)", query1("SELECT sum(a) FROM t", NULL), (sqlite3_int64)n * (n + 1) / 2);
  expect("distinct b", query1("SELECT count(DISTINCT b) FROM t", NULL), 100);
  expect("rows with k007", query1("SELECT count(*) FROM t WHERE b = 'k007'", NULL), n / 100);
  expect("max group size",
         query1("SELECT max(cnt) FROM (SELECT b, count(*) AS cnt FROM t GROUP BY b)", NULL),
         n / 100);
  expect("sum where a%7=0", query1("SELECT sum(a) FROM t WHERE a % 7 = 0", NULL),
         7 * (sqlite3_int64)(n / 7) * (n / 7 + 1) / 2);
  exec("UPDATE t SET c = c * 2 WHERE b = 'k001'");
  expect("sum(c) k001", query1("SELECT sum(c) FROM t WHERE b = 'k001'", NULL),
         /* a = 1, 101, ..., 19901: sum(a) = 200 * 1 + 100 * 199 * 200 / 2 */ 200 +
             100 * 199 * 200 / 2);
  exec("DELETE FROM t WHERE a > 10000");
  expect("count after delete", query1("SELECT count(*) FROM t", NULL), 10000);
  expect("join count",
         query1("SELECT count(*) FROM t x JOIN t y ON x.a = y.a + 1 WHERE x.b = 'k050'", NULL),
         100);
  sqlite3_close(db);
  printf("workload ok\n");
  return 0;
}
