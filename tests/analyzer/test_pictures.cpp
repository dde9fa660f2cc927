// The pictures' data on builder traces with a known decomposition: node contributions,
// folded stacks that add up to Var(L), negative frames kept, the answer sentence, the HTML
// page's self-containment. (The page's drawing is tested in a browser:
// tests/analyzer/test_html.py.)
#include "trace_builder.hpp"
#include "vprof/analyzer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
namespace va = vprof::analyzer;
using vprof::testing::TraceBuilder;

namespace {

fs::path fresh_dir(const std::string &name) {
  fs::path d =
      fs::temp_directory_path() / ("vprof-pictures-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Intervals on one thread: [site 1 for a ticks][site 2 for b ticks], one tick of root body.
// With b = K - a / 2 the second child compensates half of the first: a negative contribution.
fs::path two_children(const std::string &name, const std::vector<std::pair<int, int>> &xs) {
  auto dir = fresh_dir(name);
  TraceBuilder b(1);
  auto &t = b.thread(1);
  std::uint64_t now = 0, id = 1;
  for (auto [xa, xb] : xs) {
    t.emit(VPROF_REC_INTERVAL_BEGIN, id, now);
    t.enter(1, now + 1, 1).exit(1, now + 1 + xa, 1);
    t.enter(2, now + 1 + xa, 1).exit(2, now + 1 + xa + xb, 1);
    now += 1 + xa + xb;
    t.emit(VPROF_REC_INTERVAL_END, id++, now);
    now += 5;
  }
  b.write(dir);
  return dir;
}

// folded line -> value
std::map<std::string, double> parse_folded(const std::string &text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.rfind(' ');
    EXPECT_NE(sp, std::string::npos) << line;
    out[line.substr(0, sp)] += std::stod(line.substr(sp + 1));
  }
  return out;
}

} // namespace

TEST(Pictures, NodeContributionsAddUpToTheParent) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 60; ++i)
    xs.push_back({100 + (i * 37) % 50, 40 + (i * 11) % 17});
  auto res = va::analyze(two_children("sum", xs), nullptr, {});
  const auto &g = res.groups.front();
  std::map<int, double> kids_sum;
  std::map<int, const va::NodeStats *> by_node;
  for (const auto &ns : g.nodes) {
    by_node[ns.node] = &ns;
    int parent = res.nodes[static_cast<std::size_t>(ns.node)].parent;
    if (parent >= 0)
      kids_sum[parent] += ns.contribution;
  }
  EXPECT_NEAR(by_node.at(0)->contribution, 1.0, 1e-9); // Cov(L, L) / Var(L)
  for (const auto &[node, sum] : kids_sum)
    EXPECT_NEAR(sum + by_node.at(node)->body_contribution, by_node.at(node)->contribution, 1e-9)
        << "node " << node;
}

TEST(Pictures, FoldedStacksAddUpToVarianceAndKeepNegatives) {
  // b compensates half of a: L = 201 + a / 2, so Cov(b, L) = -Var(a) / 4 < 0
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 80; ++i) {
    int a = 20 + (i * 53) % 150;
    xs.push_back({a, 200 - a / 2});
  }
  auto res = va::analyze(two_children("folded", xs), nullptr, {});
  const auto &g = res.groups.front();
  auto fs = va::render_folded(res, g);
  auto pos = parse_folded(fs.positive), neg = parse_folded(fs.negative);
  ASSERT_FALSE(neg.empty()) << "the compensating child must be written, as a negative frame";
  double sum = 0;
  for (const auto &[k, v] : pos)
    sum += v;
  for (const auto &[k, v] : neg)
    sum -= v;
  const double lines = static_cast<double>(pos.size() + neg.size());
  // each line is rounded to an integer ns^2 (ticks are ns here)
  EXPECT_NEAR(sum, g.latency.var_ns2, 0.5 * lines + 1e-9 * g.latency.var_ns2);
  EXPECT_NEAR(fs.positive_ns2 - fs.negative_ns2, sum, 1e-6);
  // stacks start at the root frame and name the sites
  for (const auto &[k, v] : pos)
    EXPECT_EQ(k.rfind("(interval)", 0), 0u) << k;
  EXPECT_TRUE(pos.count("(interval);site 1") || neg.count("(interval);site 1"));
  EXPECT_TRUE(neg.count("(interval);site 2"));
}

TEST(Pictures, AnswerSentenceNamesTheTopPlace) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 60; ++i)
    xs.push_back({100 + (i * 37) % 400, 40 + i % 3});
  auto res = va::analyze(two_children("answer", xs), nullptr, {});
  std::string s = va::answer_sentence(res.groups.front());
  EXPECT_NE(s.find("site 1"), std::string::npos) << s;
  EXPECT_NE(s.find("of Var(latency)"), std::string::npos) << s;
}

TEST(Pictures, HtmlIsSelfContainedAndCarriesTheData) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back({100 + (i * 37) % 400, 40 + i % 3});
  auto res = va::analyze(two_children("html", xs), nullptr, {});
  res.warnings.push_back("a </script> in a warning must not end the data");
  va::HtmlOptions ho;
  ho.title = "t <&> t";
  va::IterationSummary h;
  h.iteration = 0;
  h.plan_functions = 3;
  h.top_place = "site 1";
  ho.history.push_back(h);
  std::string page = va::render_html(res, ho);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<title>t &lt;&amp;&gt; t</title>"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg")) << "no network";
  EXPECT_EQ(page.find("https://"), std::string::npos) << "no network";
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find("a <\\/script> in a warning"), std::string::npos);
  // one </script> per script element: the data's and the drawing code's
  std::size_t n = 0;
  for (std::size_t i = 0; (i = page.find("</script>", i)) != std::string::npos; ++i)
    ++n;
  EXPECT_EQ(n, 2u);
  EXPECT_NE(page.find("\"flame\""), std::string::npos);
  EXPECT_NE(page.find("\"history\""), std::string::npos);
}

TEST(Pictures, HtmlListsTheHostsOfSeveralDirectories) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back({100 + (i * 37) % 400, 40 + i % 3});
  auto res = va::analyze(two_children("hosts", xs), nullptr, {});
  EXPECT_NE(va::render_html(res, {}).find("\"hosts\":[]"), std::string::npos) << "one directory";
  va::HostClock client, server;
  client.dir = "/traces/client";
  client.hostname = "front-1";
  server.dir = "/traces/server";
  server.hostname = "db-1";
  server.offset_ns = 5e6;
  server.skew_bound_ns = 6070;
  server.edges_in = server.edges_out = 400;
  res.hosts = {client, server};
  std::string page = va::render_html(res, {});
  const auto at = page.find("\"hosts\":[{");
  ASSERT_NE(at, std::string::npos);
  const auto db = page.find("\"hostname\":\"db-1\"", at), front = page.find("front-1", at);
  EXPECT_NE(db, std::string::npos);
  EXPECT_LT(front, db) << "in directory order, the reference clock first";
  EXPECT_NE(page.find("\"skew_bound_ns\":6070", at), std::string::npos);
}

TEST(Pictures, HistogramCountsEveryInterval) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 57; ++i)
    xs.push_back({100 + (i * 37) % 4000, 40});
  auto res = va::analyze(two_children("hist", xs), nullptr, {});
  const auto &h = res.groups.front().histogram;
  std::uint64_t total = 0;
  for (auto c : h.counts)
    total += c;
  EXPECT_EQ(total, 57u);
  EXPECT_LE(h.lo_ns, res.groups.front().latency.min_ns);
  EXPECT_GT(h.hi_ns, res.groups.front().latency.max_ns);
  EXPECT_GT(h.counts.front(), 0u);
  EXPECT_GT(h.counts.back(), 0u);
}

TEST(Pictures, CompactJsonKeepsWhatCarriesVarianceAndSaysWhatItLeftOut) {
  std::vector<std::pair<int, int>> xs;
  for (int i = 0; i < 40; ++i)
    xs.push_back({100 + (i * 37) % 400, 40}); // site 2 is constant: no variance, no factor
  auto res = va::analyze(two_children("json", xs), nullptr, {});
  std::string full = va::render_json(res);
  va::JsonOptions jo;
  jo.full = false;
  std::string compact = va::render_json(res, jo);
  // a node object: its keys are sorted, "name" is followed by "parent"
  auto has_node = [](const std::string &json, const std::string &name) {
    return std::regex_search(json, std::regex("\"name\": \"" + name + "\",\\s*\"parent\""));
  };
  EXPECT_TRUE(has_node(full, "site 2"));
  EXPECT_FALSE(has_node(compact, "site 2"));
  EXPECT_TRUE(has_node(compact, "site 1"));
  EXPECT_NE(compact.find("\"nodes_total\": " + std::to_string(res.nodes.size())),
            std::string::npos);
  EXPECT_NE(compact.find("\"full\": false"), std::string::npos);
}
