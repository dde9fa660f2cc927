// Reports of an analysis: a readable text report (latency, variance tree, ranked factor
// table, what-if table per group) and the same content as JSON.
#include "host_json.hpp"
#include "human_time.hpp"
#include "node_kind.hpp"
#include "vprof/analyzer.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace vprof::analyzer {
namespace {

std::string fmt(const char *f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::string pct(double x) { return fmt("%.1f%%", 100 * x); }

using detail::human_ns;
using detail::kind_text;

const char *place_kind_text(Place::Kind k) {
  switch (k) {
  case Place::Kind::Function:
    return "function";
  case Place::Kind::Call:
    return "call";
  case Place::Kind::Site:
    return "site";
  case Place::Kind::Wait:
    return "wait";
  case Place::Kind::Outside:
    return "outside";
  }
  return "function";
}

// "waker of W1 12.0%, own path 2.0%": how a place reaches the critical path, the
// ways carrying at least 1% of Var(L) (at most 3); empty when it is all on the own path.
std::string via_text(const Place &p) {
  bool waker = false;
  for (const auto &[w, c] : p.via)
    waker = waker || !w.empty();
  if (!waker)
    return "";
  std::string out;
  int n = 0;
  for (const auto &[w, c] : p.via) {
    if (n == 3 || (n > 0 && std::abs(c) < 0.01))
      break;
    out +=
        std::string(n++ ? ", " : "") + (w.empty() ? "own path " : "waker of " + w + " ") + pct(c);
  }
  return out;
}

// A place's rank in the places table (by variance), "-" when it is not there.
std::string variance_rank(const GroupResult &g, const std::string &key) {
  for (std::size_t r = 0; r < g.places.size(); ++r)
    if (g.places[r].key == key)
      return std::to_string(r + 1);
  return "-";
}

// The tail view: the places the slowest intervals spend longer in (at most 5, and those
// with at least 1 % of the latency's excess), each with its rank by variance.
void render_tail(std::string &out, const GroupResult &g) {
  const TailStats &t = g.tail;
  if (t.places.empty() || t.intervals == 0)
    return;
  const bool one = t.intervals == 1;
  out +=
      "\ntail: the " +
      (one ? std::string("slowest interval") : std::to_string(t.intervals) + " slowest intervals") +
      " (L >= p" + fmt("%g", t.percentile) + " = " + human_ns(t.threshold_ns) +
      (one ? ") takes " : ") take ") + human_ns(t.excess_ns) +
      " longer than the mean; by place, E[T | L >= p" + fmt("%g", t.percentile) +
      "] - E[T] (adds up to it):\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%10s %-23s %7s %8s  %s\n", "excess", "95% CI", "of tail",
                "var rank", "place");
  out += buf;
  for (std::size_t i = 0; i < t.places.size() && i < 5; ++i) {
    const TailPlace &p = t.places[i];
    if (i > 0 && p.fraction < 0.01)
      break;
    std::string ci =
        p.has_ci ? "[" + human_ns(p.excess_lo_ns) + ", " + human_ns(p.excess_hi_ns) + "]" : "-";
    const std::string rank = variance_rank(g, p.key);
    std::snprintf(buf, sizeof buf, "%10s %-23s %7s %8s  %s\n", human_ns(p.excess_ns).c_str(),
                  ci.c_str(), pct(p.fraction).c_str(), rank.c_str(), p.name.c_str());
    out += buf;
  }
}

// The slow group, when there is one: how many, how much slower, what removing them would
// remove, and their extra time by place (at most 5, those with 1 % of it or more).
void render_slow_group(std::string &out, const GroupResult &g) {
  const SlowGroup &sg = g.slow;
  if (!sg.found)
    return;
  out += "\nslow group: " + std::to_string(sg.intervals) + " intervals (" +
         detail::share_of_intervals(static_cast<double>(sg.intervals) /
                                    static_cast<double>(g.latency.count)) +
         ") with L >= " + human_ns(sg.threshold_ns) + ", mean " + human_ns(sg.mean_ns) +
         " against " + human_ns(sg.rest_mean_ns) + " for the others; removing them would remove " +
         pct(sg.removed) + " of Var(L) (the split alone explains " + pct(sg.between) +
         "); their extra time by place, E[T | slow] - E[T]:\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%10s %8s %8s  %s\n", "excess", "of it", "var rank", "place");
  out += buf;
  for (std::size_t i = 0; i < sg.places.size() && i < 5; ++i) {
    const TailPlace &p = sg.places[i];
    if (i > 0 && p.fraction < 0.01)
      break;
    const std::string rank = variance_rank(g, p.key);
    std::snprintf(buf, sizeof buf, "%10s %8s %8s  %s\n", human_ns(p.excess_ns).c_str(),
                  pct(p.fraction).c_str(), rank.c_str(), p.name.c_str());
    out += buf;
  }
}

void render_group(std::string &out, const AnalysisResult &res, const GroupResult &g,
                  const RenderOptions &opt) {
  const auto &l = g.latency;
  out += "== intervals: " + (g.label.empty() ? std::string("all") : g.label) +
         " (n=" + std::to_string(l.count) + ") ==\n";
  out += "latency: mean " + human_ns(l.mean_ns) + "  sd " + human_ns(std::sqrt(l.var_ns2)) +
         "  cv " + fmt("%.3f", l.cv) + "  p50 " + human_ns(l.p50_ns) + "  p95 " +
         human_ns(l.p95_ns) + "  p99 " + human_ns(l.p99_ns) + "  max " + human_ns(l.max_ns) + "\n";
  out += "max tree residual: " + fmt("%.2e", g.max_residual) + "\n";
  // the answer first: computed once by the analyzer (GroupResult::answer)
  out += "answer: " + answer_sentence(g) + "\n";
  if (!g.answer.chain.empty()) {
    out += "  chain:";
    for (std::size_t i = 0; i < g.answer.chain.size(); ++i)
      out += (i ? " > " : " ") + g.answer.chain[i];
    out += "\n";
  }
  out += "\n";

  // The tree is long: it is rendered here and printed after the tables.
  const std::size_t tree_begin = out.size();
  out += "variance tree (share of Var(L), mean time on the critical path):\n";
  std::map<int, const NodeStats *> stats;
  std::map<int, std::vector<int>> kids;
  for (const auto &ns : g.nodes) {
    stats[ns.node] = &ns;
    if (res.nodes[ns.node].parent >= 0)
      kids[res.nodes[ns.node].parent].push_back(ns.node);
  }
  auto line = [&](const std::string &indent, const std::string &name, double share, double mean) {
    std::string left = indent + name;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%-60s %7s  %10s\n", left.c_str(), pct(share).c_str(),
                  human_ns(mean).c_str());
    out += buf;
  };
  double varL = l.var_ns2;
  // Nodes below opt.min_tree_share (and bodies as small) are folded into one line; below
  // opt.max_depth a subtree is summarised by its node count, so convoy chains (a wait whose
  // waker waited in turn) stay readable.
  std::function<int(int)> subtree_size = [&](int node) {
    int n = 0;
    for (int c : kids[node])
      n += 1 + subtree_size(c);
    return n;
  };
  std::function<void(int, const std::string &, const std::string &, bool, int)> rec =
      [&](int node, const std::string &prefix, const std::string &branch, bool last, int depth) {
        const NodeStats &ns = *stats[node];
        line(prefix + branch, res.nodes[node].name, ns.share, ns.mean_ns);
        std::string child_prefix = prefix + (branch.empty() ? "" : (last ? "   " : "|  "));
        if (depth >= opt.max_depth && !kids[node].empty()) {
          line(child_prefix + "`- ",
               "(" + std::to_string(subtree_size(node)) + " deeper nodes; see the JSON report)", 0,
               0);
          return;
        }
        std::vector<int> show;
        int folded = 0;
        for (int c : kids[node]) {
          const NodeStats &cs = *stats[c];
          if (std::abs(cs.share) >= opt.min_tree_share || (varL == 0 && cs.mean_ns > 0))
            show.push_back(c);
          else
            ++folded;
        }
        double body_share = varL > 0 ? ns.body_var_ns2 / varL : 0;
        bool body = ns.expanded && (std::abs(body_share) >= opt.min_tree_share ||
                                    (varL == 0 && ns.body_mean_ns > 0));
        if (ns.expanded && !body)
          ++folded;
        for (std::size_t i = 0; i < show.size(); ++i)
          rec(show[i], child_prefix, (i + 1 == show.size() && !body && !folded) ? "`- " : "+- ",
              i + 1 == show.size() && !body && !folded, depth + 1);
        if (folded)
          line(child_prefix + (body ? "+- " : "`- "),
               "(" + std::to_string(folded) + " below " + pct(opt.min_tree_share) + ")", 0, 0);
        if (body)
          line(child_prefix + "`- ", "(body)", body_share, ns.body_mean_ns);
      };
  if (stats.count(0))
    rec(0, "", "", true, 0);
  const std::string tree = out.substr(tree_begin);
  out.resize(tree_begin);
  char buf[1024];
  const bool net = res.ranking == Ranking::Net;
  out += "where the variance comes from, by place (a function, a call of an outside function or a\n"
         "wait, all calling contexts merged; its self time on the critical path; share = its\n"
         "variance / Var(L), contrib = its covariance with L / Var(L); ";
  out += net ? "score = contrib, or that of a\nplace below it that explains half of it or more; "
               "spec = observed depth^2;\n"
               "VProfiler's = static (H - h)^2 x share):\n"
             : "score = spec x share,\nVProfiler's ranking):\n";
  std::snprintf(buf, sizeof buf, "%4s %9s %11s %8s %8s %10s %6s  %s\n", "rank", "score",
                "VProfiler's", "share", "contrib", "mean", "spec", "place");
  out += buf;
  int prank = 0;
  bool share_over_100 = false; // a printed share above 100 %: said once, below the tables
  std::size_t folded = 0;      // places below the noise floor, after the first few: one line
  for (const auto &p : g.places) {
    if (prank >= opt.max_factors)
      break;
    if (p.noise && prank >= 3) {
      ++folded;
      continue;
    }
    ++prank;
    share_over_100 = share_over_100 || p.share > 1.0005; // printed as 100.1 % or more
    std::snprintf(buf, sizeof buf, "%4d %9.3f %11.3f %8s %8s %10s %6.0f  %s\n", prank, p.score,
                  p.vprofiler_score, pct(p.share).c_str(), pct(p.contribution).c_str(),
                  human_ns(p.mean_ns).c_str(), p.specificity, p.name.c_str());
    out += buf;
    if (std::string via = via_text(p); !via.empty())
      out += std::string(63, ' ') + via + "\n";
  }
  if (folded)
    out += "   ... " + std::to_string(folded) + " more below the noise floor (" +
           pct(g.noise_floor) + " of Var(L)): the JSON and HTML reports list them\n";
  if (!g.waits.empty()) {
    out += "\nwaits on the intervals' own path, each with the waker's work it stands for:\n";
    std::snprintf(buf, sizeof buf, "%8s %8s %10s %8s  %s\n", "share", "contrib", "mean", "contexts",
                  "wait");
    out += buf;
    int wrank = 0;
    for (const auto &w : g.waits) {
      if (++wrank > opt.max_factors || (wrank > 5 && std::abs(w.contribution) < 0.01))
        break;
      std::snprintf(buf, sizeof buf, "%8s %8s %10s %8d  %s\n", pct(w.share).c_str(),
                    pct(w.contribution).c_str(), human_ns(w.mean_ns).c_str(), w.contexts,
                    w.name.c_str());
      out += buf;
      share_over_100 = share_over_100 || w.share > 1.0005;
    }
  }
  render_tail(out, g);
  render_slow_group(out, g);
  if (share_over_100)
    out += "\n(a share above 100 %: that part varies more than the whole latency, because other\n"
           "parts move against it and cancel some of it — a wait that is long when the work\n"
           "before it was short; contrib, which adds up to 100 %, is what it explains)\n";
  out +=
      net ? "\nfactors: the terms of the variance tree, per calling context (covariances counted\n"
            "twice; net = min(share, Cov(X, parent) / Var(L)), the variance less what its\n"
            "siblings cancel; score = net, or that of a term inside it that explains half of\n"
            "it or more; spec = observed depth^2; VProfiler's = static (H - h)^2 x share):\n"
          : "\nfactors: the terms of the variance tree, per calling context (covariances counted\n"
            "twice; net = min(share, Cov(X, parent) / Var(L)); score = spec x share,\n"
            "VProfiler's ranking):\n";
  std::snprintf(buf, sizeof buf, "%4s %9s %11s %8s %8s %-19s %6s %4s  %s\n", "rank", "score",
                "VProfiler's", "share", "net", "95% CI", "spec", "leaf", "factor");
  out += buf;
  int rank = 0;
  for (const auto &f : g.factors) {
    if (rank >= opt.max_factors)
      break;
    ++rank;
    std::string ci = f.has_ci ? "[" + pct(f.share_lo) + ", " + pct(f.share_hi) + "]" : "-";
    std::snprintf(buf, sizeof buf, "%4d %9.3f %11.3f %8s %8s %-19s %6.0f %4s  %s\n", rank, f.score,
                  f.vprofiler_score, pct(f.share).c_str(), pct(f.net_share).c_str(), ci.c_str(),
                  f.specificity, f.leaf ? "yes" : "no", f.name.c_str());
    out += buf;
  }
  if (!g.whatifs.empty()) {
    out += "\nwhat-if (the factor's time replaced by its mean in every interval):\n";
    std::snprintf(buf, sizeof buf, "%-12s %-12s  %s\n", "Var(L) drop", "p99 drop", "factor");
    out += buf;
    std::map<std::string, std::string> names;
    for (const auto &f : g.factors)
      names[f.key] = f.name;
    for (const auto &w : g.whatifs) {
      std::snprintf(buf, sizeof buf, "%-12s %-12s  %s\n", pct(w.var_drop).c_str(),
                    pct(w.p99_drop).c_str(), names[w.key].c_str());
      out += buf;
    }
  }
  out += "\n";
  if (opt.tree)
    out += tree + "\n";
}

} // namespace

std::string render_text(const AnalysisResult &res, const RenderOptions &opt) {
  std::string out;
  out += "vprof analysis of " + res.trace_dir + "\n";
  out += std::to_string(res.records) + " records, " + std::to_string(res.streams) + " streams, " +
         std::to_string(res.processes) + " processes, " + std::to_string(res.intervals) +
         " intervals, " + std::to_string(res.wake_edges) + " wake-up edges, " +
         std::to_string(res.dropped) + " dropped\n";
  if (res.kernel.files) {
    const KernelWaitStats &k = res.kernel;
    out += std::to_string(k.waits) + " kernel waits (" + std::to_string(k.edges) +
           " woken by traced threads; [io] block device " + std::to_string(k.io_device) +
           ", [net] receive " + std::to_string(k.net_receive) + ", [timer] " +
           std::to_string(k.timer) + ", [process] other " + std::to_string(k.other_process) +
           ", [thread] without records " + std::to_string(k.unrecorded_thread) + "), " +
           std::to_string(k.filled) + " interposed waits given the kernel's waker, " +
           std::to_string(k.data_wakes) + " room wake-ups given their data's waker, " +
           std::to_string(k.clamped) + " kernel events clamped, " + std::to_string(k.lost) +
           " lost\n";
  }
  if (res.message_edges || !res.hosts.empty())
    out += std::to_string(res.message_edges) + " message edges (" +
           std::to_string(res.cross_host_edges) + " between hosts), " +
           std::to_string(res.messages_unmatched) + " receives unmatched, " +
           std::to_string(res.messages_unreceived) + " sends unreceived\n";
  for (std::size_t i = 0; i < res.hosts.size(); ++i) {
    const HostClock &h = res.hosts[i];
    out += "host " + std::to_string(i) + ": " + h.dir +
           (h.hostname.empty() ? "" : " (" + h.hostname + ")") + ": ";
    if (i == 0)
      out += "the reference clock";
    else
      out += "clock offset " + fmt("%+.6fms", h.offset_ns / 1e6) + ", skew bound " +
             (h.skew_bound_ns < 0 ? std::string("unknown") : "+-" + human_ns(h.skew_bound_ns));
    out += " (" + std::to_string(h.clock_samples) + " clock samples, " +
           std::to_string(h.edges_out) + " edges out, " + std::to_string(h.edges_in) + " in" +
           (h.violations ? ", " + std::to_string(h.violations) + " CAUSALITY VIOLATIONS" : "") +
           ")\n";
  }
  out += "H = " + std::to_string(res.H) +
         (res.heights_from_db ? " (call-graph heights)" : " (no call graph: node depths)") +
         (res.ranking == Ranking::Net
              ? "; ranked by observed depth and net variance (VProfiler's static score beside)"
              : "; ranked by VProfiler's score") +
         "\n";
  for (const auto &w : res.warnings)
    out += "warning: " + w + "\n";
  for (const auto &n : res.notes)
    out += "  note: " + n + "\n";
  out += "\n";
  for (const auto &g : res.groups) {
    render_group(out, res, g, opt);
    if (!opt.all_groups)
      break;
  }
  return out;
}

namespace {

// The nodes a compact JSON report keeps (see JsonOptions), as a flag per node id.
std::vector<bool> kept_nodes(const AnalysisResult &res, const JsonOptions &opt) {
  std::vector<bool> keep(res.nodes.size(), opt.full);
  if (opt.full)
    return keep;
  auto mark = [&](int node) {
    for (int n = node; n >= 0 && !keep[static_cast<std::size_t>(n)];
         n = res.nodes[static_cast<std::size_t>(n)].parent)
      keep[static_cast<std::size_t>(n)] = true;
  };
  mark(0);
  for (const auto &g : res.groups) {
    for (const auto &s : g.nodes)
      if (std::abs(s.contribution) >= opt.min_node_contribution ||
          std::abs(s.share) >= opt.min_node_contribution)
        mark(s.node);
    for (std::size_t i = 0; i < g.factors.size() && i < opt.max_factors; ++i) {
      mark(g.factors[i].a);
      mark(g.factors[i].parent);
      if (g.factors[i].b >= 0)
        mark(g.factors[i].b);
    }
  }
  return keep;
}

} // namespace

std::string render_json(const AnalysisResult &res, const JsonOptions &opt) {
  using nlohmann::json;
  const std::vector<bool> keep = kept_nodes(res, opt);
  const std::size_t max_factors = opt.full ? SIZE_MAX : opt.max_factors;
  const std::size_t max_places = opt.full ? SIZE_MAX : opt.max_places;
  std::size_t kept = 0;
  for (bool k : keep)
    kept += k;
  json j;
  j["trace_dir"] = res.trace_dir;
  j["records"] = res.records;
  j["streams"] = res.streams;
  j["processes"] = res.processes;
  j["dropped"] = res.dropped;
  j["intervals"] = res.intervals;
  j["intervals_unfinished"] = res.intervals_unfinished;
  j["wake_edges"] = res.wake_edges;
  if (res.kernel.files) {
    const KernelWaitStats &k = res.kernel;
    j["kernel"] = {{"files", k.files},
                   {"waits", k.waits},
                   {"edges", k.edges},
                   {"pseudo_wakers",
                    {{"io-device", k.io_device},
                     {"net-receive", k.net_receive},
                     {"timer", k.timer},
                     {"other-process", k.other_process},
                     {"unrecorded-thread", k.unrecorded_thread}}},
                   {"filled", k.filled},
                   {"clamped", k.clamped},
                   {"data_wakes", k.data_wakes},
                   {"lost", k.lost}};
  }
  if (res.message_edges || !res.hosts.empty())
    j["messages"] = {{"edges", res.message_edges},
                     {"cross_host_edges", res.cross_host_edges},
                     {"unmatched_receives", res.messages_unmatched},
                     {"unreceived_sends", res.messages_unreceived}};
  if (!res.hosts.empty())
    j["hosts"] = detail::hosts_json(res.hosts);
  j["abandoned_frames"] = res.abandoned_frames;
  j["H"] = res.H;
  j["heights_from_db"] = res.heights_from_db;
  j["ranking"] = res.ranking == Ranking::Net ? "net" : "vprofiler";
  j["warnings"] = res.warnings;
  j["notes"] = res.notes;
  // what a compact report left out is in the workspace
  j["detail"] = {{"full", opt.full},
                 {"nodes", kept},
                 {"nodes_total", res.nodes.size()},
                 {"max_factors", opt.full ? 0 : opt.max_factors},
                 {"max_places", opt.full ? 0 : opt.max_places}};
  json nodes = json::array();
  for (const auto &n : res.nodes) {
    if (!keep[static_cast<std::size_t>(n.id)])
      continue;
    json o{{"id", n.id},     {"parent", n.parent}, {"kind", kind_text(n.kind)},
           {"name", n.name}, {"path", n.path},     {"depth", n.depth}};
    if (n.kind == Node::Kind::Site)
      o["site"] = n.site;
    if (n.kind == Node::Kind::Wait)
      o["wait"] = n.wait;
    if (n.function)
      o["function"] = n.function;
    if (n.height >= 0)
      o["height"] = n.height;
    nodes.push_back(o);
  }
  j["nodes"] = nodes;
  json groups = json::array();
  for (const auto &g : res.groups) {
    const auto &l = g.latency;
    json gj;
    gj["label"] = g.label;
    gj["latency"] = {{"count", l.count},   {"mean_ns", l.mean_ns}, {"var_ns2", l.var_ns2},
                     {"cv", l.cv},         {"min_ns", l.min_ns},   {"p50_ns", l.p50_ns},
                     {"p95_ns", l.p95_ns}, {"p99_ns", l.p99_ns},   {"max_ns", l.max_ns}};
    gj["max_residual"] = g.max_residual;
    gj["noise_floor"] = g.noise_floor;
    const Answer &a = g.answer;
    gj["answer"] = {{"found", a.found},
                    {"key", a.key},
                    {"name", a.name},
                    {"kind", place_kind_text(a.kind)},
                    {"share", a.share},
                    {"contribution", a.contribution},
                    {"node", a.node},
                    {"chain", a.chain},
                    {"chain_functions", a.chain_functions},
                    {"wait", a.wait},
                    {"wait_contribution", a.wait_contribution},
                    {"via_contribution", a.via_contribution},
                    {"waker", a.waker},
                    {"wakeup_delay", a.wakeup_delay},
                    {"wakeup_delay_contribution", a.wakeup_delay_contribution},
                    {"slow_group", a.slow_group},
                    {"sentence", answer_sentence(g)}};
    json tp = json::array();
    for (const auto &p : g.tail.places) {
      if (tp.size() >= max_places)
        break;
      json o{
          {"key", p.key}, {"name", p.name}, {"excess_ns", p.excess_ns}, {"fraction", p.fraction}};
      if (p.has_ci)
        o["excess_ci_ns"] = {p.excess_lo_ns, p.excess_hi_ns};
      tp.push_back(o);
    }
    gj["tail"] = {{"percentile", g.tail.percentile},
                  {"threshold_ns", g.tail.threshold_ns},
                  {"intervals", g.tail.intervals},
                  {"excess_ns", g.tail.excess_ns},
                  {"places", tp}};
    if (g.slow.found) {
      json sp = json::array();
      for (const auto &p : g.slow.places) {
        if (sp.size() >= max_places)
          break;
        sp.push_back({{"key", p.key},
                      {"name", p.name},
                      {"excess_ns", p.excess_ns},
                      {"fraction", p.fraction}});
      }
      gj["slow_group"] = {{"threshold_ns", g.slow.threshold_ns},
                          {"intervals", g.slow.intervals},
                          {"mean_ns", g.slow.mean_ns},
                          {"rest_mean_ns", g.slow.rest_mean_ns},
                          {"between", g.slow.between},
                          {"removed", g.slow.removed},
                          {"places", sp}};
    }
    json ns = json::array();
    for (const auto &s : g.nodes)
      if (keep[static_cast<std::size_t>(s.node)])
        ns.push_back({{"node", s.node},
                      {"mean_ns", s.mean_ns},
                      {"var_ns2", s.var_ns2},
                      {"share", s.share},
                      {"body_mean_ns", s.body_mean_ns},
                      {"body_var_ns2", s.body_var_ns2},
                      {"contribution", s.contribution},
                      {"body_contribution", s.body_contribution},
                      {"expanded", s.expanded},
                      {"residual", s.residual}});
    gj["nodes"] = ns;
    gj["histogram"] = {
        {"lo_ns", g.histogram.lo_ns}, {"hi_ns", g.histogram.hi_ns}, {"counts", g.histogram.counts}};
    json fs = json::array();
    for (const auto &f : g.factors) {
      if (fs.size() >= max_factors)
        break;
      json o{{"key", f.key},
             {"kind", f.kind == Factor::Kind::Variance ? "var" : "cov"},
             {"name", f.name},
             {"parent", f.parent},
             {"a", f.a},
             {"a_body", f.a_body},
             {"term_ns2", f.term_ns2},
             {"share", f.share},
             {"net_share", f.net_share},
             {"specificity", f.specificity},
             {"score", f.score},
             {"vprofiler_score", f.vprofiler_score},
             {"leaf", f.leaf},
             {"noise", f.noise}};
      if (f.b >= 0) {
        o["b"] = f.b;
        o["b_body"] = f.b_body;
      }
      if (f.has_ci)
        o["share_ci"] = {f.share_lo, f.share_hi};
      fs.push_back(o);
    }
    gj["factors"] = fs;
    json ps = json::array();
    for (const auto &p : g.places)
      if (ps.size() < max_places)
        ps.push_back({{"key", p.key},
                      {"name", p.name},
                      {"function", p.function},
                      {"contexts", p.contexts},
                      {"mean_ns", p.mean_ns},
                      {"var_ns2", p.var_ns2},
                      {"share", p.share},
                      {"contribution", p.contribution},
                      {"specificity", p.specificity},
                      {"score", p.score},
                      {"vprofiler_score", p.vprofiler_score},
                      {"waker", p.waker},
                      {"noise", p.noise},
                      {"via", [&] {
                         json v = json::array();
                         for (const auto &[w, c] : p.via)
                           v.push_back({{"wait", w}, {"contribution", c}});
                         return v;
                       }()}});
    gj["places"] = ps;
    json wj = json::array();
    for (const auto &w : g.waits)
      wj.push_back({{"key", w.key},
                    {"name", w.name},
                    {"contexts", w.contexts},
                    {"mean_ns", w.mean_ns},
                    {"var_ns2", w.var_ns2},
                    {"share", w.share},
                    {"contribution", w.contribution}});
    gj["waits"] = wj;
    json ws = json::array();
    for (const auto &w : g.whatifs)
      ws.push_back({{"key", w.key},
                    {"var_after_ns2", w.var_after_ns2},
                    {"var_drop", w.var_drop},
                    {"p99_after_ns", w.p99_after_ns},
                    {"p99_drop", w.p99_drop}});
    gj["whatif"] = ws;
    groups.push_back(gj);
  }
  j["groups"] = groups;
  // bytes from a trace (names, labels) that are not UTF-8 become U+FFFD, never an exception
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

} // namespace vprof::analyzer
