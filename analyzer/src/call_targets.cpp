// Call targets of a call site from the workspace call graph (see call_targets.hpp).
#include "call_targets.hpp"

#include <cctype>

namespace vprof::analyzer::detail {
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

} // namespace

std::vector<CallTarget> call_targets(ws::Database &db, std::int64_t site) {
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

} // namespace vprof::analyzer::detail
