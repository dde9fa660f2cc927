// The variance trees' whole input as rows (docs/fleet.md): per interval its label and
// latency, per interval x node the node's time T and body time B on the critical path, and
// the calling-context tree with each node's place, so that the decomposition can run as SQL
// on an engine that holds a fleet's traces (python/vprof_fleet turns the rows into Parquet).
#include "vprof/analyzer.hpp"

#include "engine.hpp"
#include "node_kind.hpp"
#include "stages.hpp"
#include "vprof/trace_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace vprof::analyzer {
namespace {

// A text field of a TSV row: tabs and line breaks would split it, so they become spaces.
std::string field(const std::string &s) {
  std::string out = s;
  for (char &c : out)
    if (c == '\t' || c == '\n' || c == '\r')
      c = ' ';
  return out;
}

// A frame of the folded-stack form: ';' separates frames, so it becomes ':' (as in
// render_folded).
std::string frame(const std::string &name) {
  std::string out = field(name);
  std::replace(out.begin(), out.end(), ';', ':');
  return out;
}

// Appends `v` in the shortest form that reads back to the same double.
void put(std::string &line, double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  line.append(buf, r.ptr);
}

class TsvFile {
public:
  TsvFile(const std::filesystem::path &path, const char *header) : path_(path), out_(path) {
    if (!out_)
      throw AnalysisError(path.string() + ": cannot write");
    out_ << header << '\n';
  }
  void row(const std::string &line) {
    out_ << line << '\n';
    ++rows_;
  }
  std::uint64_t close() {
    out_.close();
    if (!out_)
      throw AnalysisError(path_.string() + ": write failed");
    return rows_;
  }

private:
  std::filesystem::path path_;
  std::ofstream out_;
  std::uint64_t rows_ = 0;
};

} // namespace

namespace detail {

RowsSummary write_rows(const EngineOutput &eo, const AnalysisResult &res, const PlaceTable &pt,
                       const std::filesystem::path &out,
                       const std::vector<std::string> &interval_hosts) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec)
    throw AnalysisError(out.string() + ": cannot create: " + ec.message());
  RowsSummary sum;
  const std::size_t N = res.nodes.size();
  {
    TsvFile f(out / "nodes.tsv",
              "node\tparent\tdepth\tkind\tpath\tframes\tname\tplace\tplace_name\tvia");
    std::vector<std::string> frames(N);
    for (std::size_t i = 0; i < N; ++i) {
      const Node &n = res.nodes[i];
      frames[i] = n.parent < 0 ? frame(n.name) : frames[n.parent] + ";" + frame(n.name);
      const int p = pt.place_of[i], v = pt.via_of.empty() ? -1 : pt.via_of[i];
      f.row(std::to_string(n.id) + '\t' + std::to_string(n.parent) + '\t' +
            std::to_string(n.depth) + '\t' + detail::kind_text(n.kind) + '\t' + field(n.path) +
            '\t' + frames[i] + '\t' + field(n.name) + '\t' + (p >= 0 ? field(pt.key[p]) : "") +
            '\t' + (p >= 0 ? field(pt.name[p]) : "") + '\t' + (v >= 0 ? field(pt.name[v]) : ""));
    }
    sum.nodes = f.close();
  }

  // Per interval, the self times summed per node and the inclusive times accumulated from
  // the children up, in the order and arithmetic of group_times: the same doubles.
  const double ns_per_tick = 1e9 / eo.ticks_per_second;
  TsvFile iv_file(out / "intervals.tsv", "interval\tlabel\tlatency_ns\thost");
  TsvFile nt_file(out / "node_times.tsv", "interval\tnode\tt_ns\tb_ns");
  std::vector<double> S(N, 0.0), T(N, 0.0);
  std::vector<char> seen(N, 0);
  std::vector<std::uint32_t> touched;
  std::string line;
  for (std::size_t i = 0; i < eo.intervals.size(); ++i) {
    const auto &r = eo.intervals[i];
    touched.clear();
    auto touch = [&](std::uint32_t nd) {
      if (!seen[nd]) {
        seen[nd] = 1;
        S[nd] = 0;
        touched.push_back(nd);
      }
    };
    touch(0);
    for (std::uint32_t k = 0; k < r.times_n; ++k) {
      const auto &nt = eo.times[r.times_off + k];
      touch(nt.node);
      S[nt.node] += static_cast<double>(nt.ticks) * ns_per_tick;
    }
    for (std::size_t k = 0, n = touched.size(); k < n; ++k)
      for (std::uint32_t up = eo.nodes[touched[k]].parent; up != kNoParent && !seen[up];
           up = eo.nodes[up].parent)
        touch(up);
    std::sort(touched.begin(), touched.end());
    for (auto nd : touched)
      T[nd] = S[nd];
    for (std::size_t k = touched.size(); k-- > 1;)
      T[eo.nodes[touched[k]].parent] += T[touched[k]];
    const std::string id = std::to_string(r.id);
    line = id + '\t' + field(eo.labels[r.label]) + '\t';
    put(line, T[0]);
    line += '\t';
    if (i < interval_hosts.size())
      line += field(interval_hosts[i]);
    iv_file.row(line);
    for (auto nd : touched) {
      line = id + '\t' + std::to_string(nd) + '\t';
      put(line, T[nd]);
      line += '\t';
      put(line, S[nd]);
      nt_file.row(line);
      seen[nd] = 0;
    }
  }
  sum.intervals = iv_file.close();
  sum.rows = nt_file.close();
  return sum;
}

} // namespace detail

namespace {
// The host name each interval began on: its process's host (pids are distinct across the
// hosts of one analysis, docs/multihost.md "Limits"); empty where the trace recorded none.
std::vector<std::string> interval_hosts(const trace::Trace &tr, const detail::EngineOutput &eo) {
  std::unordered_map<std::uint32_t, const std::string *> host_of_pid;
  for (const auto &p : tr.processes())
    host_of_pid.emplace(p.pid, &tr.hosts()[p.host].hostname);
  std::vector<std::string> out;
  out.reserve(eo.intervals.size());
  for (const auto &r : eo.intervals) {
    auto it = host_of_pid.find(r.pid);
    out.push_back(it != host_of_pid.end() ? *it->second : std::string());
  }
  return out;
}
} // namespace

RowsSummary export_rows(const std::vector<std::filesystem::path> &trace_dirs, ws::Database *db,
                        const std::filesystem::path &out) {
  using namespace detail;
  auto tr = trace::Trace::open(trace_dirs);
  EngineOutput eo = run_engine(tr, engine_options(db));
  // the nodes and places exactly as analyze_trace names them
  AnalysisResult res = load_result(tr, eo);
  const DbFacts facts = read_db(db, eo.nodes);
  name_nodes(eo, facts, res);
  RowsSummary sum = write_rows(eo, res, assign_places(res, facts), out, interval_hosts(tr, eo));
  sum.hostname = tr.hosts().front().hostname;
  return sum;
}

} // namespace vprof::analyzer
