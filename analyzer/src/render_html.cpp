// The HTML report (docs/analyzer.md, "Pictures"): one self-contained page. This file only
// turns an AnalysisResult into the page's data (JSON) and wraps it in the page's static
// parts (html/report.css, html/report.js, embedded at build time); the drawing is the script's.
#include "host_json.hpp"
#include "node_kind.hpp"
#include "vprof/analyzer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace vprof::analyzer {
namespace {

using nlohmann::json;

const char kCss[] =
#include "report.css.inc"
    ;
const char kJs[] =
#include "report.js.inc"
    ;

// The flame graph's nodes of one group: those whose |contribution| reaches min_frame (and
// their ancestors), at most max_frames of them by |contribution|. A folded node's time stays
// in its parent's frame (its self part), so widths still add up. Rows: [id, parent row,
// name, kind, contribution, body contribution, share, mean ns, waker's work (0/1)].
json flame_rows(const AnalysisResult &res, const GroupResult &g, const HtmlOptions &opt) {
  std::vector<const NodeStats *> kept;
  for (const auto &ns : g.nodes)
    if (ns.node == 0 || std::abs(ns.contribution) >= opt.min_frame)
      kept.push_back(&ns);
  if (kept.size() > opt.max_frames) {
    std::stable_sort(kept.begin() + 1, kept.end(), [](const NodeStats *a, const NodeStats *b) {
      return std::abs(a->contribution) > std::abs(b->contribution);
    });
    kept.resize(opt.max_frames);
  }
  std::unordered_map<int, const NodeStats *> by_node;
  for (const auto &ns : g.nodes)
    by_node[ns.node] = &ns;
  // ancestors of every kept node, so each row's parent is a row
  std::unordered_map<int, int> row_of;
  std::vector<const NodeStats *> rows;
  std::function<int(int)> add = [&](int node) -> int {
    if (auto it = row_of.find(node); it != row_of.end())
      return it->second;
    const Node &n = res.nodes[static_cast<std::size_t>(node)];
    if (n.parent >= 0 && by_node.count(n.parent))
      add(n.parent);
    row_of[node] = static_cast<int>(rows.size());
    rows.push_back(by_node.at(node));
    return row_of[node];
  };
  for (const auto *ns : kept)
    add(ns->node);
  // waker's work: below a wait node
  std::vector<bool> under_wait(res.nodes.size(), false);
  for (const auto &n : res.nodes)
    if (n.parent >= 0)
      under_wait[static_cast<std::size_t>(n.id)] =
          under_wait[static_cast<std::size_t>(n.parent)] ||
          res.nodes[static_cast<std::size_t>(n.parent)].kind == Node::Kind::Wait;
  json out = json::array();
  for (const auto *ns : rows) {
    const Node &n = res.nodes[static_cast<std::size_t>(ns->node)];
    int parent = n.parent >= 0 && row_of.count(n.parent) ? row_of[n.parent] : -1;
    std::string name =
        n.kind == Node::Kind::Root ? (g.label.empty() ? "all intervals" : g.label) : n.name;
    out.push_back(json::array({n.id, parent, name, detail::kind_text(n.kind), ns->contribution,
                               ns->body_contribution, ns->share, ns->mean_ns,
                               under_wait[static_cast<std::size_t>(n.id)] ? 1 : 0}));
  }
  return out;
}

json place_rows(const std::vector<Place> &places, std::size_t max_rows) {
  json out = json::array();
  for (std::size_t i = 0; i < places.size() && i < max_rows; ++i) {
    const Place &p = places[i];
    json via = json::array();
    for (const auto &[w, c] : p.via)
      via.push_back(json::array({w, c}));
    out.push_back({{"name", p.name},
                   {"contexts", p.contexts},
                   {"mean_ns", p.mean_ns},
                   {"share", p.share},
                   {"contribution", p.contribution},
                   {"specificity", p.specificity},
                   {"score", p.score},
                   {"vprofiler_score", p.vprofiler_score},
                   {"noise", p.noise},
                   {"via", via}});
  }
  return out;
}

json factor_rows(const GroupResult &g, std::size_t max_rows) {
  std::unordered_map<std::string, const WhatIf *> whatif;
  for (const auto &w : g.whatifs)
    whatif[w.key] = &w;
  json out = json::array();
  for (std::size_t i = 0; i < g.factors.size() && i < max_rows; ++i) {
    const Factor &f = g.factors[i];
    json o{{"name", f.name},
           {"share", f.share},
           {"net_share", f.net_share},
           {"specificity", f.specificity},
           {"score", f.score},
           {"vprofiler_score", f.vprofiler_score},
           {"leaf", f.leaf}};
    if (f.has_ci)
      o["ci"] = {f.share_lo, f.share_hi};
    if (auto it = whatif.find(f.key); it != whatif.end())
      o["whatif"] = {it->second->var_drop, it->second->p99_drop};
    out.push_back(o);
  }
  return out;
}

// The tail view: what the slowest intervals spend longer in than the average interval.
json tail_data(const TailStats &t, std::size_t max_rows) {
  json rows = json::array();
  for (std::size_t i = 0; i < t.places.size() && i < max_rows; ++i) {
    const TailPlace &p = t.places[i];
    json o{{"name", p.name}, {"excess_ns", p.excess_ns}, {"fraction", p.fraction}};
    if (p.has_ci)
      o["ci"] = {p.excess_lo_ns, p.excess_hi_ns};
    rows.push_back(o);
  }
  return {{"percentile", t.percentile},
          {"threshold_ns", t.threshold_ns},
          {"intervals", t.intervals},
          {"excess_ns", t.excess_ns},
          {"places", rows}};
}

// The slow group, when found: its size, threshold, means, what removing it removes, and its
// extra time by place (null when none).
json slow_group_data(const SlowGroup &sg, std::size_t max_rows) {
  if (!sg.found)
    return nullptr;
  json rows = json::array();
  for (std::size_t i = 0; i < sg.places.size() && i < max_rows; ++i)
    rows.push_back({{"name", sg.places[i].name},
                    {"excess_ns", sg.places[i].excess_ns},
                    {"fraction", sg.places[i].fraction}});
  return {{"intervals", sg.intervals},
          {"threshold_ns", sg.threshold_ns},
          {"mean_ns", sg.mean_ns},
          {"rest_mean_ns", sg.rest_mean_ns},
          {"between", sg.between},
          {"removed", sg.removed},
          {"places", rows}};
}

json group_data(const AnalysisResult &res, const GroupResult &g, const HtmlOptions &opt) {
  const auto &l = g.latency;
  return {{"label", g.label},
          {"answer", answer_sentence(g)},
          {"answer_chain", g.answer.chain},
          {"tail", tail_data(g.tail, opt.max_rows)},
          {"slow_group", slow_group_data(g.slow, opt.max_rows)},
          {"latency",
           {{"count", l.count},
            {"mean_ns", l.mean_ns},
            {"sd_ns", std::sqrt(std::max(0.0, l.var_ns2))},
            {"cv", l.cv},
            {"min_ns", l.min_ns},
            {"p50_ns", l.p50_ns},
            {"p95_ns", l.p95_ns},
            {"p99_ns", l.p99_ns},
            {"max_ns", l.max_ns}}},
          {"histogram",
           {{"lo_ns", g.histogram.lo_ns},
            {"hi_ns", g.histogram.hi_ns},
            {"counts", g.histogram.counts}}},
          {"residual", g.max_residual},
          {"noise_floor", g.noise_floor},
          {"places", place_rows(g.places, opt.max_rows)},
          {"waits", place_rows(g.waits, opt.max_rows)},
          {"factors", factor_rows(g, opt.max_rows)},
          {"flame", flame_rows(res, g, opt)}};
}

json history_data(const std::vector<IterationSummary> &history) {
  json out = json::array();
  for (const auto &h : history)
    out.push_back({{"iteration", h.iteration},
                   {"plan", h.plan_functions},
                   {"final", h.final_plan},
                   {"intervals", h.intervals},
                   {"records", h.records},
                   {"dropped", h.dropped},
                   {"top", h.top_place},
                   {"contribution", h.top_contribution}});
  return out;
}

// JSON inside <script>: "</" would end the element early, so it is escaped.
std::string script_safe(std::string s) {
  for (std::size_t i = 0; (i = s.find("</", i)) != std::string::npos; i += 3)
    s.replace(i, 2, "<\\/");
  return s;
}

std::string html_escape(const std::string &s) {
  std::string out;
  for (char c : s)
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  return out;
}

} // namespace

std::string answer_sentence(const GroupResult &g) {
  return g.answer.sentence.empty()
             ? "No variance to explain (" + std::to_string(g.latency.count) + " intervals)."
             : g.answer.sentence;
}

std::string render_html(const AnalysisResult &res, const HtmlOptions &opt) {
  json data;
  data["title"] = opt.title;
  data["trace_dir"] = res.trace_dir;
  data["run"] = {{"records", res.records},
                 {"streams", res.streams},
                 {"processes", res.processes},
                 {"intervals", res.intervals},
                 {"dropped", res.dropped},
                 {"wake_edges", res.wake_edges},
                 {"unfinished", res.intervals_unfinished}};
  data["warnings"] = res.warnings;
  data["notes"] = res.notes;
  data["hosts"] = detail::hosts_json(res.hosts); // none for one directory
  data["ranking"] = res.ranking == Ranking::Net ? "net" : "vprofiler";
  data["history"] = history_data(opt.history);
  json groups = json::array();
  for (const auto &g : res.groups)
    groups.push_back(group_data(res, g, opt));
  data["groups"] = groups;

  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<title>" + html_escape(opt.title) + "</title>\n<style>\n";
  page += kCss;
  page += "</style>\n</head>\n<body>\n<div id=\"app\"></div>\n";
  page += "<script id=\"vprof-data\" type=\"application/json\">\n";
  page += script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace));
  page += "\n</script>\n<script>\n";
  page += kJs;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

} // namespace vprof::analyzer
