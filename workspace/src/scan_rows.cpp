// The instrumenter's rows of the workspace (workspace_scan.hpp): the scan's call graph and
// the rewriter's site table.
#include "vprof/workspace_scan.hpp"

namespace vprof::ws {

// ---- the scan's call graph --------------------------------------------------------

FunctionWriter::FunctionWriter(Database &db)
    : st_(db.prepare(
          "INSERT INTO functions(usr, name, file, line, defined, annotated, body, "
          "rewritable) VALUES(?,?,?,?,?,?,?,?) "
          "ON CONFLICT(usr) DO UPDATE SET "
          "name = CASE WHEN excluded.defined > functions.defined THEN excluded.name ELSE "
          "functions.name END, "
          "file = CASE WHEN excluded.defined > functions.defined THEN excluded.file ELSE "
          "functions.file END, "
          "line = CASE WHEN excluded.defined > functions.defined THEN excluded.line ELSE "
          "functions.line END, "
          "defined = max(functions.defined, excluded.defined), "
          "annotated = max(functions.annotated, excluded.annotated), "
          "body = CASE WHEN excluded.defined > functions.defined THEN excluded.body ELSE "
          "min(functions.body, excluded.body) END, "
          "rewritable = max(functions.rewritable, excluded.rewritable) RETURNING id")) {}

std::optional<FunctionId> FunctionWriter::merge(const FunctionEntry &f) {
  st_.bind(1, f.usr).bind(2, f.name).bind(3, f.file).bind(4, static_cast<std::int64_t>(f.line));
  st_.bind(5, f.defined ? 1 : 0).bind(6, f.annotated ? 1 : 0);
  st_.bind(7, f.body ? 1 : 0).bind(8, f.rewritable ? 1 : 0);
  std::optional<FunctionId> id;
  if (st_.step())
    id = st_.int64(0);
  st_.reset();
  return id;
}

CallWriter::CallWriter(Database &db)
    : st_(db.prepare("INSERT OR IGNORE INTO calls(caller, callee, kind, file, line, col, in_loop) "
                     "VALUES(?,?,?,?,?,?,?)")) {}

void CallWriter::add(const CallEntry &c) {
  st_.bind(1, c.caller).bind(2, c.callee).bind(3, c.kind).bind(4, c.file);
  st_.bind(5, static_cast<std::int64_t>(c.line)).bind(6, static_cast<std::int64_t>(c.col));
  st_.bind(7, c.in_loop ? 1 : 0);
  st_.run();
}

std::unordered_map<std::string, FunctionId> function_ids(Database &db) {
  auto st = db.prepare("SELECT usr, id FROM functions");
  std::unordered_map<std::string, FunctionId> out;
  while (st.step())
    out[st.text(0)] = st.int64(1);
  return out;
}

std::vector<FunctionId> defined_function_ids(Database &db) {
  auto st = db.prepare("SELECT id FROM functions WHERE defined = 1");
  std::vector<FunctionId> out;
  while (st.step())
    out.push_back(st.int64(0));
  return out;
}

FunctionId max_function_id(Database &db) {
  auto st = db.prepare("SELECT coalesce(max(id), 0) FROM functions");
  return st.step() ? st.int64(0) : 0;
}

void delete_calls(Database &db) { db.exec("DELETE FROM calls"); }

void clear_annotated(Database &db) { db.exec("UPDATE functions SET annotated = 0"); }

void write_heights(Database &db, const std::vector<int> &height) {
  auto st = db.prepare("UPDATE functions SET height = ? WHERE id = ?");
  for (std::size_t id = 1; id < height.size(); ++id)
    st.bind(1, static_cast<std::int64_t>(height[id])).bind(2, static_cast<std::int64_t>(id)).run();
}

CallGraphSize call_graph_size(Database &db) {
  auto st = db.prepare("SELECT (SELECT count(*) FROM functions), (SELECT count(*) FROM calls)");
  CallGraphSize n;
  if (st.step()) {
    n.functions = st.int64(0);
    n.calls = st.int64(1);
  }
  return n;
}

// ---- the rewriter's site table ----------------------------------------------------

SiteTableWriter::SiteTableWriter(Database &db)
    : find_fn_(db.prepare("SELECT id FROM functions WHERE usr = ?")),
      add_fn_(db.prepare("INSERT OR IGNORE INTO functions(usr, name, file, line, defined) "
                         "VALUES(?,?,?,?,1)")),
      add_site_(db.prepare(
          "INSERT OR IGNORE INTO sites(kind, function, callee, callee_name, file, line, col) "
          "VALUES(?,?,?,?,?,?,?)")),
      sole_callee_(db.prepare("SELECT min(callee), count(DISTINCT callee) FROM calls WHERE "
                              "caller = ? AND file = ? AND line = ? AND col = ?")),
      find_site_(db.prepare("SELECT id FROM sites WHERE kind = ? AND function = ? AND file = ? "
                            "AND line = ? AND col = ?")) {}

FunctionId SiteTableWriter::function_id(std::string_view usr) {
  find_fn_.bind(1, usr);
  FunctionId id = find_fn_.step() ? find_fn_.int64(0) : 0;
  find_fn_.reset();
  return id;
}

void SiteTableWriter::add_defined_function(std::string_view usr, std::string_view name,
                                           std::string_view file, unsigned line) {
  add_fn_.bind(1, usr).bind(2, name).bind(3, file).bind(4, static_cast<std::int64_t>(line)).run();
}

FunctionId SiteTableWriter::sole_callee_at(FunctionId caller, std::string_view file, unsigned line,
                                           unsigned col) {
  sole_callee_.bind(1, caller).bind(2, file);
  sole_callee_.bind(3, static_cast<std::int64_t>(line)).bind(4, static_cast<std::int64_t>(col));
  FunctionId id = 0;
  if (sole_callee_.step() && sole_callee_.int64(1) == 1)
    id = sole_callee_.int64(0);
  sole_callee_.reset();
  return id;
}

std::optional<SiteId> SiteTableWriter::site_id(const SiteEntry &s) {
  const char *kind = s.body ? "body" : "call";
  add_site_.bind(1, kind).bind(2, s.function);
  if (s.callee)
    add_site_.bind(3, s.callee);
  else
    add_site_.bind_null(3);
  if (s.body)
    add_site_.bind_null(4);
  else
    add_site_.bind(4, s.callee_name);
  add_site_.bind(5, s.file)
      .bind(6, static_cast<std::int64_t>(s.line))
      .bind(7, static_cast<std::int64_t>(s.col));
  add_site_.run();
  find_site_.bind(1, kind).bind(2, s.function).bind(3, s.file);
  find_site_.bind(4, static_cast<std::int64_t>(s.line)).bind(5, static_cast<std::int64_t>(s.col));
  std::optional<SiteId> id;
  if (find_site_.step())
    id = find_site_.int64(0);
  find_site_.reset();
  return id;
}

} // namespace vprof::ws
