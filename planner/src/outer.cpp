// The outer frames: the callers above the frames where intervals begin and end, up to their
// nearest common ancestor in the static call graph, for the upward expansion
// (docs/planner.md, "Upward expansion").
#include "vprof/planner.hpp"

#include <algorithm>
#include <climits>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>

namespace vprof::planner {
namespace {

using Graph = std::unordered_map<FunctionId, std::vector<FunctionId>>;

// The call graph both ways (callee -> callers, caller -> callees), each edge once,
// recursion's self-edges left out.
struct CallGraph {
  Graph callers, callees;
  explicit CallGraph(ws::Database &db) {
    for (const auto &[caller, callee] : ws::call_edges(db))
      if (caller != callee) {
        callers[callee].push_back(caller);
        callees[caller].push_back(callee);
      }
    for (auto *g : {&callers, &callees})
      for (auto &[f, fs] : *g) {
        std::sort(fs.begin(), fs.end());
        fs.erase(std::unique(fs.begin(), fs.end()), fs.end());
      }
  }
  static const std::vector<FunctionId> &of(const Graph &g, FunctionId f) {
    static const std::vector<FunctionId> none;
    auto it = g.find(f);
    return it == g.end() ? none : it->second;
  }
};

// The function rows the walk asks for, read once each.
class Rows {
public:
  explicit Rows(ws::Database &db) : db_(db) {}
  const std::optional<ws::FunctionRow> &row(FunctionId f) {
    auto it = rows_.find(f);
    if (it == rows_.end())
      it = rows_.emplace(f, ws::function_row(db_, f)).first;
    return it->second;
  }
  bool defined(FunctionId f) { return row(f) && row(f)->defined; }
  bool probeable(FunctionId f) { return defined(f) && row(f)->body; }
  // The walk upward ends at main: what calls it is the C runtime.
  bool is_main(FunctionId f) { return row(f) && row(f)->name == "main"; }
  int height(FunctionId f) { return row(f) ? row(f)->height : -1; }

private:
  ws::Database &db_;
  std::unordered_map<FunctionId, std::optional<ws::FunctionRow>> rows_;
};

using Distances = std::unordered_map<FunctionId, int>;

// Call edges from each defined caller down to `start`, by the fewest edges, at most
// kMaxOuterLevels, never above main.
Distances up_distances(const CallGraph &g, Rows &rows, FunctionId start) {
  Distances d{{start, 0}};
  std::deque<FunctionId> todo{start};
  while (!todo.empty()) {
    FunctionId f = todo.front();
    todo.pop_front();
    const int df = d[f];
    if (df >= kMaxOuterLevels || rows.is_main(f))
      continue;
    for (FunctionId c : CallGraph::of(g.callers, f))
      if (rows.defined(c) && d.emplace(c, df + 1).second)
        todo.push_back(c);
  }
  return d;
}

// Call edges from `from` down to the defined functions it reaches within `limit` edges.
Distances down_distances(const CallGraph &g, Rows &rows, FunctionId from, int limit) {
  Distances d{{from, 0}};
  std::deque<FunctionId> todo{from};
  while (!todo.empty()) {
    FunctionId f = todo.front();
    todo.pop_front();
    const int df = d[f];
    if (df >= limit)
      continue;
    for (FunctionId c : CallGraph::of(g.callees, f))
      if (rows.defined(c) && d.emplace(c, df + 1).second)
        todo.push_back(c);
  }
  return d;
}

// The defined callers of the starts that are not starts themselves.
std::vector<FunctionId> callers_of(const CallGraph &g, Rows &rows,
                                   const std::set<FunctionId> &starts) {
  std::set<FunctionId> out;
  for (FunctionId s : starts) {
    if (rows.is_main(s))
      continue;
    for (FunctionId c : CallGraph::of(g.callers, s))
      if (!starts.count(c) && rows.defined(c))
        out.insert(c);
  }
  return {out.begin(), out.end()};
}

} // namespace

OuterFrames outer_frames(ws::Database &db, const std::vector<FunctionId> &start_list, int depth) {
  OuterFrames of;
  const std::set<FunctionId> starts(start_list.begin(), start_list.end());
  if (starts.empty())
    return of;
  const CallGraph g(db);
  Rows rows(db);
  std::vector<Distances> up;
  for (FunctionId s : starts)
    up.push_back(up_distances(g, rows, s));

  // The nearest common ancestors: the fewest call edges down to all starts in all.
  int best = INT_MAX;
  std::vector<FunctionId> nearest;
  for (const auto &[f, d0] : up.front()) {
    int sum = 0;
    bool common = true;
    for (const auto &d : up) {
      auto it = d.find(f);
      if (it == d.end()) {
        common = false;
        break;
      }
      sum += it->second;
    }
    if (!common || sum > best)
      continue;
    if (sum < best)
      nearest.clear();
    best = sum;
    nearest.push_back(f);
  }
  std::sort(nearest.begin(), nearest.end());

  std::set<FunctionId> chosen; // ancestors and chains: not callees again
  bool start_is_ancestor = nearest.empty();
  for (FunctionId f : nearest)
    start_is_ancestor = start_is_ancestor || starts.count(f);
  if (start_is_ancestor) {
    // One start, one calling the others, or no common ancestor: the time outside the starts
    // is in their callers.
    std::set<FunctionId> from = starts;
    if (!nearest.empty())
      from = std::set<FunctionId>(nearest.begin(), nearest.end());
    of.ancestors = callers_of(g, rows, from);
  } else {
    of.ancestors = nearest;
    // On a shortest path from an ancestor A down to a start s: down(A, y) + up_s(y) = up_s(A).
    std::vector<std::pair<int, FunctionId>> on_chain; // (edges below the ancestor, function)
    for (FunctionId a : nearest) {
      int reach = 0;
      for (const auto &d : up)
        reach = std::max(reach, d.at(a));
      const Distances down = down_distances(g, rows, a, reach);
      for (const auto &[y, dy] : down) {
        if (y == a || starts.count(y))
          continue;
        for (const auto &d : up)
          if (auto it = d.find(y); it != d.end() && dy + it->second == d.at(a)) {
            on_chain.push_back({dy, y});
            break;
          }
      }
    }
    std::sort(on_chain.begin(), on_chain.end());
    for (const auto &[dy, y] : on_chain)
      if (!chosen.count(y) && std::find(nearest.begin(), nearest.end(), y) == nearest.end()) {
        chosen.insert(y);
        of.chains.push_back(y);
      }
  }
  chosen.insert(of.ancestors.begin(), of.ancestors.end());

  // Their callees within `depth` edges (the loop's own work between two polls): the nearest
  // first, then the most code below.
  std::unordered_map<FunctionId, int> near;
  for (FunctionId f : chosen)
    for (const auto &[c, dc] : down_distances(g, rows, f, std::max(0, depth)))
      if (dc > 0 && !chosen.count(c) && !starts.count(c) && (!near.count(c) || near[c] > dc))
        near[c] = dc;
  std::vector<std::pair<FunctionId, int>> callees(near.begin(), near.end());
  std::sort(callees.begin(), callees.end(), [&](const auto &x, const auto &y) {
    if (x.second != y.second)
      return x.second < y.second;
    int hx = rows.height(x.first), hy = rows.height(y.first);
    return hx != hy ? hx > hy : x.first < y.first;
  });
  for (const auto &[c, dc] : callees)
    of.callees.push_back(c);

  auto probeable_only = [&](std::vector<FunctionId> &fs) {
    fs.erase(std::remove_if(fs.begin(), fs.end(), [&](FunctionId f) { return !rows.probeable(f); }),
             fs.end());
  };
  probeable_only(of.ancestors);
  probeable_only(of.chains);
  probeable_only(of.callees);
  return of;
}

} // namespace vprof::planner
