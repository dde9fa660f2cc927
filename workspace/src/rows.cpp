// Typed rows of the workspace (workspace_rows.hpp): the SQL over the call graph, plans and
// analysis results that the planner and the driver read and write.
#include "vprof/workspace_rows.hpp"

#include <cctype>

namespace vprof::ws {
namespace {

// The last identifier of a spelled callee or a qualified name: "batch.process" ->
// "process", "acc::Batch::process" -> "process", "p->run" -> "run", "f<int>" -> "f".
std::string last_identifier(const std::string &s) {
  std::string t = s.substr(0, s.find('<'));
  std::size_t end = t.size();
  while (end > 0 && !(std::isalnum(static_cast<unsigned char>(t[end - 1])) || t[end - 1] == '_'))
    --end;
  std::size_t b = end;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(t[b - 1])) || t[b - 1] == '_'))
    --b;
  return t.substr(b, end - b);
}

std::vector<FunctionId> ids(Statement st) {
  std::vector<FunctionId> out;
  while (st.step())
    out.push_back(st.int64(0));
  return out;
}

std::int64_t or_zero(const Statement &st, int col) { return st.is_null(col) ? 0 : st.int64(col); }

} // namespace

// ---- the call graph ---------------------------------------------------------------

std::optional<FunctionRow> function_row(Database &db, FunctionId f) {
  auto st = db.prepare("SELECT name, height, defined, annotated, body, rewritable, file FROM "
                       "functions WHERE id = ?");
  st.bind(1, f);
  if (!st.step())
    return std::nullopt;
  FunctionRow r;
  r.id = f;
  r.name = st.text(0);
  r.height = st.is_null(1) ? -1 : static_cast<int>(st.int64(1));
  r.defined = st.int64(2) != 0;
  r.annotated = st.int64(3) != 0;
  r.body = st.int64(4) != 0 && st.int64(5) != 0;
  r.file = st.is_null(6) ? "" : st.text(6);
  return r;
}

std::vector<FunctionId> defined_callees(Database &db, FunctionId f) {
  auto st = db.prepare("SELECT DISTINCT c.callee FROM calls c JOIN functions d ON d.id = c.callee "
                       "WHERE c.caller = ? AND d.defined = 1 ORDER BY c.callee");
  st.bind(1, f);
  return ids(std::move(st));
}

CallSiteCount call_sites_in(Database &db, FunctionId f) {
  auto st = db.prepare("SELECT COALESCE(SUM(l = 0), 0), COALESCE(SUM(l), 0) FROM (SELECT "
                       "MAX(in_loop) AS l FROM calls WHERE caller = ? GROUP BY file, line, col)");
  st.bind(1, f);
  CallSiteCount c;
  if (st.step()) {
    c.straight = static_cast<int>(st.int64(0));
    c.looped = static_cast<int>(st.int64(1));
  }
  return c;
}

std::vector<std::pair<FunctionId, int>> call_sites_naming_by_caller(Database &db, FunctionId f) {
  auto st = db.prepare("SELECT caller, COUNT(*) FROM (SELECT DISTINCT caller, file, line, col "
                       "FROM calls WHERE callee = ?) GROUP BY caller ORDER BY caller");
  st.bind(1, f);
  std::vector<std::pair<FunctionId, int>> out;
  while (st.step())
    out.push_back({st.int64(0), static_cast<int>(st.int64(1))});
  return out;
}

std::vector<FunctionId> defined_callers_matching(Database &db, const std::string &pattern) {
  auto st = db.prepare("SELECT DISTINCT c.caller FROM calls c JOIN functions p ON p.id = "
                       "c.callee JOIN functions d ON d.id = c.caller WHERE p.name GLOB ? "
                       "AND d.defined = 1 ORDER BY c.caller");
  st.bind(1, pattern);
  return ids(std::move(st));
}

std::vector<FunctionId> defined_callers_of(Database &db, const std::string &name) {
  auto st = db.prepare("SELECT DISTINCT c.caller FROM calls c JOIN functions p ON p.id = "
                       "c.callee JOIN functions d ON d.id = c.caller WHERE p.name = ? "
                       "AND d.defined = 1 ORDER BY c.caller");
  st.bind(1, name);
  return ids(std::move(st));
}

std::vector<FunctionId> annotated_functions(Database &db) {
  return ids(
      db.prepare("SELECT id FROM functions WHERE annotated = 1 AND defined = 1 ORDER BY id"));
}

std::vector<FunctionId> functions_named(Database &db, const std::string &name) {
  auto st = db.prepare(
      "SELECT id FROM functions WHERE defined = 1 AND (name = ?1 OR usr = ?1) ORDER BY id");
  st.bind(1, name);
  return ids(std::move(st));
}

std::vector<FunctionId> most_called_functions(Database &db, int n) {
  auto st = db.prepare("SELECT f.id FROM functions f JOIN calls c ON c.callee = f.id WHERE "
                       "f.defined = 1 GROUP BY f.id ORDER BY count(*) DESC, f.id LIMIT ?");
  st.bind(1, n);
  return ids(std::move(st));
}

std::vector<std::pair<FunctionId, FunctionId>> call_edges(Database &db) {
  auto st = db.prepare("SELECT DISTINCT caller, callee FROM calls");
  std::vector<std::pair<FunctionId, FunctionId>> out;
  while (st.step())
    out.emplace_back(st.int64(0), st.int64(1));
  return out;
}

namespace {

std::optional<int> height_of(Statement st) {
  if (st.step() && !st.is_null(0))
    return static_cast<int>(st.int64(0));
  return std::nullopt;
}

} // namespace

std::optional<int> max_annotated_height(Database &db) {
  return height_of(db.prepare("SELECT MAX(height) FROM functions WHERE annotated = 1"));
}

std::optional<int> max_height(Database &db) {
  return height_of(db.prepare("SELECT MAX(height) FROM functions"));
}

std::vector<std::string> marked_files(Database &db) {
  auto st = db.prepare("SELECT file FROM marked_files ORDER BY file");
  std::vector<std::string> out;
  while (st.step())
    out.push_back(st.text(0));
  return out;
}

void add_marked_file(Database &db, const std::string &file) {
  db.prepare("INSERT OR IGNORE INTO marked_files(file) VALUES (?)").bind(1, file).run();
}

void clear_marked_files(Database &db) { db.exec("DELETE FROM marked_files"); }

std::vector<SkippedUnitRow> skipped_units(Database &db) {
  auto st = db.prepare("SELECT file, reason FROM skipped_units ORDER BY file");
  std::vector<SkippedUnitRow> out;
  while (st.step())
    out.push_back({st.text(0), st.text(1)});
  return out;
}

void add_skipped_unit(Database &db, const std::string &file, const std::string &reason) {
  db.prepare("INSERT OR REPLACE INTO skipped_units(file, reason) VALUES (?, ?)")
      .bind(1, file)
      .bind(2, reason)
      .run();
}

void clear_skipped_units(Database &db) { db.exec("DELETE FROM skipped_units"); }

// ---- sites ------------------------------------------------------------------------

std::vector<SiteRow> sites_of(Database &db, FunctionId f) {
  auto st = db.prepare("SELECT s.id, s.kind, s.callee, COALESCE(d.defined, 0) FROM sites s "
                       "LEFT JOIN functions d ON d.id = s.callee WHERE s.function = ? "
                       "ORDER BY s.id");
  st.bind(1, f);
  std::vector<SiteRow> out;
  while (st.step()) {
    SiteRow r;
    r.id = st.int64(0);
    r.body = st.text(1) == "body";
    r.function = f;
    r.callee = or_zero(st, 2);
    r.callee_defined = st.int64(3) != 0;
    out.push_back(r);
  }
  return out;
}

std::vector<OutsideCall> outside_call_sites(Database &db, FunctionId f) {
  auto calls = db.prepare("SELECT c.callee, d.name, c.file, c.line, c.col, MAX(c.in_loop) FROM "
                          "calls c JOIN functions d ON d.id = c.callee WHERE c.caller = ? AND "
                          "d.defined = 0 AND c.kind IN ('direct', 'member') GROUP BY c.file, "
                          "c.line, c.col, c.callee ORDER BY c.file, c.line, c.col");
  auto add = db.prepare("INSERT OR IGNORE INTO sites(kind, function, callee, callee_name, file, "
                        "line, col) VALUES ('call', ?, ?, ?, ?, ?, ?)");
  auto find = db.prepare("SELECT id FROM sites WHERE kind = 'call' AND function = ? AND file = ? "
                         "AND line = ? AND col = ?");
  std::vector<OutsideCall> out;
  calls.bind(1, f);
  while (calls.step()) {
    const std::string file = calls.text(2);
    const std::int64_t line = calls.int64(3), col = calls.int64(4);
    add.bind(1, f).bind(2, calls.int64(0)).bind(3, calls.text(1)).bind(4, file);
    add.bind(5, line).bind(6, col).run();
    find.bind(1, f).bind(2, file).bind(3, line).bind(4, col);
    if (find.step())
      out.push_back({find.int64(0), calls.text(1), calls.int64(5) != 0});
    find.reset();
  }
  return out;
}

std::vector<CallTarget> call_targets(Database &db, SiteId site) {
  std::vector<CallTarget> out;
  auto st = db.prepare("SELECT kind, function, callee, callee_name, file, line, col FROM sites "
                       "WHERE id = ?");
  st.bind(1, site);
  if (!st.step() || st.text(0) != "call")
    return out;
  std::int64_t caller = st.int64(1);
  bool resolved = !st.is_null(2);
  std::string spelled = st.is_null(3) ? "" : st.text(3);
  std::string file = st.text(4);
  std::int64_t line = st.int64(5), col = st.int64(6);
  auto exact = db.prepare(
      "SELECT d.id, d.height, MAX(c.kind IN ('virtual', 'indirect')) FROM calls c "
      "JOIN functions d ON d.id = c.callee WHERE c.caller = ? AND c.file = ? AND c.line = ? "
      "AND c.col = ? AND d.defined = 1 GROUP BY d.id ORDER BY d.id");
  exact.bind(1, caller).bind(2, file).bind(3, line).bind(4, col);
  while (exact.step())
    out.push_back({exact.int64(0), exact.is_null(1) ? -1 : static_cast<int>(exact.int64(1)),
                   exact.int64(2) != 0});
  if (!out.empty() || resolved || spelled.empty())
    return out;
  std::string want = last_identifier(spelled);
  auto same_line = db.prepare(
      "SELECT DISTINCT d.id, d.height, d.name FROM calls c JOIN functions d ON d.id = c.callee "
      "WHERE c.caller = ? AND c.file = ? AND c.line = ? AND d.defined = 1 ORDER BY d.id");
  same_line.bind(1, caller).bind(2, file).bind(3, line);
  while (same_line.step())
    if (!want.empty() && last_identifier(same_line.text(2)) == want)
      out.push_back(
          {same_line.int64(0), same_line.is_null(1) ? -1 : static_cast<int>(same_line.int64(1))});
  return out;
}

// ---- plans ------------------------------------------------------------------------

const char *reason_text(PlanReason r) {
  switch (r) {
  case PlanReason::Root:
    return "root";
  case PlanReason::Depth:
    return "depth";
  case PlanReason::Expand:
    return "expand";
  case PlanReason::Answer:
    return "answer";
  case PlanReason::Outer:
    return "outer";
  case PlanReason::User:
    break;
  }
  return "user";
}

std::optional<PlanReason> reason_from_text(const std::string &s) {
  for (auto r : {PlanReason::Root, PlanReason::Depth, PlanReason::Expand, PlanReason::Answer,
                 PlanReason::Outer, PlanReason::User})
    if (s == reason_text(r))
      return r;
  return std::nullopt;
}

std::optional<int> newest_plan_iteration(Database &db) {
  auto st = db.prepare("SELECT MAX(iteration) FROM plans");
  if (st.step() && !st.is_null(0))
    return static_cast<int>(st.int64(0));
  return std::nullopt;
}

std::vector<PlanRow> read_plan(Database &db, int iteration) {
  auto st = db.prepare("SELECT function, reason, factor, final, body_only FROM plans "
                       "WHERE iteration = ? ORDER BY function");
  st.bind(1, iteration);
  std::vector<PlanRow> out;
  while (st.step()) {
    PlanRow r;
    r.function = st.int64(0);
    r.reason = reason_from_text(st.text(1)).value_or(PlanReason::User);
    r.factor = st.text(2);
    r.final = st.int64(3) != 0;
    r.body_only = st.int64(4) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

int plan_size(Database &db, int iteration) {
  auto st = db.prepare("SELECT COUNT(*) FROM plans WHERE iteration = ?");
  st.bind(1, iteration);
  return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

bool is_final_plan(Database &db, int iteration) {
  auto st = db.prepare("SELECT 1 FROM plans WHERE iteration = ? AND final = 1 LIMIT 1");
  st.bind(1, iteration);
  return st.step();
}

void write_plan(Database &db, int iteration, const std::vector<PlanRow> &rows) {
  Transaction tx(db);
  db.prepare("DELETE FROM plans WHERE iteration = ?").bind(1, iteration).run();
  auto ins = db.prepare(
      "INSERT OR IGNORE INTO plans(iteration, function, reason, factor, final, body_only) "
      "VALUES (?,?,?,?,?,?)");
  for (const auto &r : rows) {
    ins.bind(1, iteration).bind(2, r.function).bind(3, reason_text(r.reason));
    if (r.factor.empty())
      ins.bind_null(4);
    else
      ins.bind(4, r.factor);
    ins.bind(5, r.final ? 1 : 0).bind(6, r.body_only ? 1 : 0).run();
  }
  tx.commit();
}

void write_final_sites(Database &db, int iteration, const std::vector<SiteId> &sites) {
  Transaction tx(db);
  db.prepare("DELETE FROM final_sites WHERE iteration = ?").bind(1, iteration).run();
  auto ins = db.prepare("INSERT OR IGNORE INTO final_sites(iteration, site) VALUES (?,?)");
  for (SiteId s : sites)
    ins.bind(1, iteration).bind(2, s).run();
  tx.commit();
}

std::vector<SitePosition> final_site_positions(Database &db, int iteration) {
  auto st = db.prepare("SELECT s.file, s.line, s.col FROM final_sites f JOIN sites s ON s.id = "
                       "f.site WHERE f.iteration = ? ORDER BY s.file, s.line, s.col");
  st.bind(1, iteration);
  std::vector<SitePosition> out;
  while (st.step())
    out.push_back({st.text(0), static_cast<int>(st.int64(1)), static_cast<int>(st.int64(2))});
  return out;
}

std::vector<SiteId> sites_calling_alike(Database &db, SiteId site) {
  auto st = db.prepare("SELECT b.id FROM sites a JOIN sites b ON b.function = a.function AND "
                       "b.kind = 'call' AND b.callee_name IS a.callee_name WHERE a.id = ? "
                       "ORDER BY b.id");
  st.bind(1, site);
  std::vector<SiteId> out;
  while (st.step())
    out.push_back(st.int64(0));
  return out;
}

void delete_plans_after(Database &db, int iteration) {
  db.prepare("DELETE FROM final_sites WHERE iteration > ?").bind(1, iteration).run();
  db.prepare("DELETE FROM plans WHERE iteration > ?").bind(1, iteration).run();
  db.prepare("DELETE FROM plan_costs WHERE iteration > ?").bind(1, iteration).run();
}

void write_plan_cost(Database &db, const PlanCost &cost) {
  db.prepare("INSERT OR REPLACE INTO plan_costs(iteration, kept_records, added_records, "
             "budget_records) VALUES (?,?,?,?)")
      .bind(1, cost.iteration)
      .bind(2, cost.kept_records)
      .bind(3, cost.added_records)
      .bind(4, cost.budget_records)
      .run();
}

std::optional<PlanCost> plan_cost(Database &db, int iteration) {
  auto st = db.prepare("SELECT kept_records, added_records, budget_records FROM plan_costs "
                       "WHERE iteration = ?");
  st.bind(1, iteration);
  if (!st.step())
    return std::nullopt;
  return PlanCost{iteration, st.real(0), st.real(1), st.real(2)};
}

std::vector<PlannedFunction> planned_functions(Database &db, int iteration) {
  auto st = db.prepare("SELECT f.id, f.usr, COALESCE(f.file, ''), p.body_only FROM plans p "
                       "JOIN functions f ON f.id = p.function WHERE p.iteration = ? "
                       "ORDER BY f.file, f.id");
  st.bind(1, iteration);
  std::vector<PlannedFunction> out;
  while (st.step())
    out.push_back({st.int64(0), st.text(1), st.text(2), st.int64(3) != 0});
  return out;
}

std::vector<std::string> unplanned_usrs(Database &db, int iteration) {
  auto st = db.prepare("SELECT usr FROM functions WHERE defined = 1 AND id NOT IN "
                       "(SELECT function FROM plans WHERE iteration = ?)");
  st.bind(1, iteration);
  std::vector<std::string> out;
  while (st.step())
    out.push_back(st.text(0));
  return out;
}

bool file_has_plan(Database &db, const std::string &file, int iteration) {
  auto st = db.prepare("SELECT 1 FROM plans p JOIN functions f ON f.id = p.function "
                       "WHERE p.iteration = ? AND f.file = ? LIMIT 1");
  st.bind(1, iteration).bind(2, file);
  return st.step();
}

// ---- analysed runs ----------------------------------------------------------------

namespace {

constexpr const char *kRunColumns =
    "SELECT r.id, r.iteration, r.intervals, r.records, r.dropped, r.max_stream_records, "
    "COALESCE((SELECT mean_ns FROM interval_stats s WHERE s.run = r.id AND s.label = ''), 0), "
    "r.trace_dir, CASE WHEN r.intervals > 0 THEN r.cores * r.span_ns / r.intervals ELSE 0 END, "
    "r.critical_records FROM analysis_runs r ";

RunRow run_row(const Statement &st) {
  RunRow r;
  r.id = st.int64(0);
  r.iteration = static_cast<int>(st.int64(1));
  r.intervals = static_cast<std::uint64_t>(st.int64(2));
  r.records = static_cast<std::uint64_t>(st.int64(3));
  r.dropped = static_cast<std::uint64_t>(st.int64(4));
  r.max_stream_records = static_cast<std::uint64_t>(st.int64(5));
  r.mean_ns = st.real(6);
  r.trace_dir = st.text(7);
  r.capacity_ns = st.real(8);
  r.critical_records = static_cast<std::uint64_t>(st.int64(9));
  return r;
}

} // namespace

std::optional<RunRow> latest_run(Database &db, int iteration) {
  auto st =
      db.prepare(std::string(kRunColumns) + "WHERE r.iteration = ? ORDER BY r.id DESC LIMIT 1");
  st.bind(1, iteration);
  if (!st.step())
    return std::nullopt;
  return run_row(st);
}

std::vector<RunRow> latest_runs_upto(Database &db, int iteration) {
  auto st = db.prepare(std::string(kRunColumns) +
                       "WHERE r.id IN (SELECT MAX(id) FROM analysis_runs WHERE iteration <= ? "
                       "GROUP BY iteration) ORDER BY r.iteration");
  st.bind(1, iteration);
  std::vector<RunRow> out;
  while (st.step())
    out.push_back(run_row(st));
  return out;
}

const char *node_kind_text(NodeKind k) {
  switch (k) {
  case NodeKind::Root:
    return "root";
  case NodeKind::Site:
    return "site";
  case NodeKind::Wait:
    return "wait";
  case NodeKind::Untracked:
    return "untracked";
  }
  return "root";
}

const char *place_kind_text(PlaceKind k) {
  switch (k) {
  case PlaceKind::Call:
    return "call";
  case PlaceKind::Site:
    return "site";
  case PlaceKind::Wait:
    return "wait";
  case PlaceKind::Outside:
    return "outside";
  case PlaceKind::Function:
    break;
  }
  return "function";
}

std::vector<NodeRow> tree_of(Database &db, RunId run, const std::string &label) {
  auto st =
      db.prepare("SELECT node, parent, kind, site, function, path, name, mean_ns FROM tree_nodes "
                 "WHERE run = ? AND label = ? ORDER BY node");
  st.bind(1, run).bind(2, label);
  std::vector<NodeRow> out;
  while (st.step()) {
    NodeRow n;
    n.node = static_cast<int>(st.int64(0));
    n.parent = st.is_null(1) ? -1 : static_cast<int>(st.int64(1));
    std::string kind = st.text(2);
    n.kind = kind == "root"   ? NodeKind::Root
             : kind == "wait" ? NodeKind::Wait
             : kind == "site" ? NodeKind::Site
                              : NodeKind::Untracked;
    n.site = or_zero(st, 3);
    n.function = or_zero(st, 4);
    n.path = st.text(5);
    n.name = st.text(6);
    n.mean_ns = st.real(7);
    if (n.node >= static_cast<int>(out.size()))
      out.resize(static_cast<std::size_t>(n.node) + 1);
    out[static_cast<std::size_t>(n.node)] = std::move(n);
  }
  return out;
}

std::vector<std::string> labels_of(Database &db, RunId run) {
  auto st = db.prepare("SELECT label FROM interval_stats WHERE run = ? AND label != '' "
                       "ORDER BY label");
  st.bind(1, run);
  std::vector<std::string> out;
  while (st.step())
    out.push_back(st.text(0));
  return out;
}

std::vector<FactorRow> top_factors(Database &db, RunId run, int limit, const std::string &label) {
  auto st = db.prepare("SELECT rank, key, name, a, a_body, b, b_body, share, specificity FROM "
                       "factors WHERE run = ? AND label = ? ORDER BY rank LIMIT ?");
  st.bind(1, run).bind(2, label).bind(3, limit);
  std::vector<FactorRow> out;
  while (st.step()) {
    FactorRow f;
    f.rank = static_cast<int>(st.int64(0));
    f.key = st.text(1);
    f.name = st.text(2);
    f.a = static_cast<int>(st.int64(3));
    f.a_body = st.int64(4) != 0;
    f.b = st.is_null(5) ? -1 : static_cast<int>(st.int64(5));
    f.b_body = !st.is_null(6) && st.int64(6) != 0;
    f.share = st.real(7);
    f.specificity = st.real(8);
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<PlaceRow> places_of(Database &db, RunId run, const std::string &label) {
  std::vector<PlaceRow> out;
  auto read = [&](Statement st) {
    st.bind(1, run).bind(2, label);
    while (st.step()) {
      PlaceRow p;
      p.rank = static_cast<int>(st.int64(0));
      p.key = st.text(1);
      p.name = st.text(2);
      std::string kind = st.text(3);
      p.kind = kind == "call"      ? PlaceKind::Call
               : kind == "site"    ? PlaceKind::Site
               : kind == "wait"    ? PlaceKind::Wait
               : kind == "outside" ? PlaceKind::Outside
                                   : PlaceKind::Function;
      p.function = or_zero(st, 4);
      p.holder = or_zero(st, 5);
      p.node = st.is_null(6) ? -1 : static_cast<int>(st.int64(6));
      p.share = st.real(7);
      p.contribution = st.real(8);
      p.specificity = st.real(9);
      p.waker = st.int64(10) != 0;
      p.outside_waker = st.int64(11) != 0;
      out.push_back(std::move(p));
    }
  };
  read(db.prepare("SELECT rank, key, name, place_kind, function, holder, node, share, "
                  "contribution, specificity, waker, outside_waker FROM places WHERE run = ? AND "
                  "label = ? ORDER BY rank"));
  read(db.prepare("SELECT rank, key, name, 'wait', NULL, NULL, NULL, share, contribution, 0, 0, "
                  "0 FROM waits WHERE run = ? AND label = ? ORDER BY rank"));
  return out;
}

std::vector<SiteCalls> site_calls_of(Database &db, RunId run) {
  auto st = db.prepare("SELECT site, calls FROM site_calls WHERE run = ? ORDER BY site");
  st.bind(1, run);
  std::vector<SiteCalls> out;
  while (st.step())
    out.push_back({st.int64(0), static_cast<std::uint64_t>(st.int64(1))});
  return out;
}

void store_site_calls(Database &db, RunId run, const std::vector<SiteCalls> &calls) {
  auto ins = db.prepare("INSERT OR REPLACE INTO site_calls(run, site, calls) VALUES (?,?,?)");
  for (const auto &c : calls)
    ins.bind(1, run).bind(2, c.site).bind(3, static_cast<std::int64_t>(c.calls)).run();
}

} // namespace vprof::ws
