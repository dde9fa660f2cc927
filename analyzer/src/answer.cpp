// The answer of a group (docs/analyzer.md, "The answer"): computed here once, from the ranked
// places, and read by every front end (text, HTML, JSON, `vprof loop`'s last line, the final
// plan's chain). No front end ranks or picks a place of its own.
#include "human_time.hpp"
#include "stages.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace vprof::analyzer::detail {
namespace {

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// The tree nodes from the interval's root (excluded) down to `node`, outermost first.
std::vector<int> path_to(const AnalysisResult &res, int node) {
  std::vector<int> path;
  for (std::size_t steps = 0; node > 0 && steps <= res.nodes.size(); ++steps) {
    path.push_back(node);
    node = res.nodes[static_cast<std::size_t>(node)].parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// The waker's outermost frame on the path: the first frame (or pseudo-waker) below the first
// wait on it; "" when the path passes no wait or ends at it.
std::string waker_on(const AnalysisResult &res, const std::vector<int> &path) {
  bool below_wait = false;
  for (int n : path) {
    const Node &nd = res.nodes[static_cast<std::size_t>(n)];
    if (below_wait && (nd.kind == Node::Kind::Site || is_pseudo_waker(nd)))
      return nd.name;
    below_wait = below_wait || (nd.kind == Node::Kind::Wait && !is_pseudo_waker(nd));
  }
  return "";
}

std::string sentence_of(const Answer &a) {
  const std::string head = a.name + ": " + percent(a.contribution) +
                           " of Var(latency) (its own variance " + percent(a.share) + ")";
  if (a.kind == Place::Kind::Outside)
    return head + ", the intervals' own time outside every probed function: code above the roots "
                  "(the outer frames), which the loop plans upward while its probe budget allows.";
  if (!a.wait.empty())
    return head + ", the wakers' work behind " + a.wait + " (" + percent(a.wait_contribution) +
           " of Var(latency) waiting there" +
           (a.via_contribution != a.contribution
                ? ", " + percent(a.via_contribution) + " through it"
                : "") +
           ")" + (a.waker.empty() ? "" : ", woken by " + a.waker) + ".";
  if (a.kind == Place::Kind::Wait)
    return head + ", waiting on the intervals' critical path" +
           (a.waker.empty() ? "" : ", woken by " + a.waker) + ".";
  return head + ", on the intervals' critical path.";
}

// Said after the answer when the scheduler's time outweighs it: what the waiters lost between
// their waker's release and running again names no code, so it never is the answer.
std::string wakeup_delay_note(const Answer &a) {
  if (a.wakeup_delay.empty())
    return "";
  return " Beside it, " + a.wakeup_delay + " carries " + percent(a.wakeup_delay_contribution) +
         " of Var(latency): the waiters' time from their waker's release to running again (the "
         "run queue: more runnable threads than free CPUs), which no code of the program names.";
}

// The largest wake-up delay above the noise floor that carries more than the answer.
void note_wakeup_delay(const GroupResult &gr, Answer &a) {
  for (const Place &p : gr.places)
    if (p.wakeup_delay && !p.noise && p.contribution > a.contribution &&
        p.contribution > a.wakeup_delay_contribution) {
      a.wakeup_delay = p.name;
      a.wakeup_delay_contribution = p.contribution;
    }
}

// A slow group is said after the answer when it carries at least this many times the
// answer's contribution (the answer explains less than two thirds of what removing the group
// would remove): the variance is those few intervals' being of another kind, spread over
// places.
constexpr double kSlowGroupOverAnswer = 1.5;

// Whether the answer leaves the slow group unsaid: a place that names code and carries most
// of what removing the group would remove. Time outside every probed function names no code,
// so beside it the group is always said (memcached's final plan of session 18: 84.6 % outside
// the one probed function, a group of 202 multi-gets removing 95 %).
bool answer_holds_slow_group(const SlowGroup &sg, const Answer &a) {
  return a.kind != Place::Kind::Outside && sg.removed < kSlowGroupOverAnswer * a.contribution;
}

// The sentence's part for the slow group ("" when not said).
std::string slow_group_note(const GroupResult &gr, const Answer &a) {
  const SlowGroup &sg = gr.slow;
  if (!a.slow_group)
    return "";
  const double n = static_cast<double>(gr.latency.count);
  std::string places;
  int shown = 0;
  for (const TailPlace &p : sg.places) {
    if (shown == 3 || (shown > 0 && p.fraction < 0.05))
      break;
    places += std::string(shown++ ? ", " : "") + p.name + " " + percent(p.fraction);
  }
  char head[256];
  std::snprintf(head, sizeof head,
                " Beside it, a slow group: %llu of %llu intervals (%s) take %s or more, %.0f times "
                "the others' mean, and carry %s of Var(latency) (removing them would remove that "
                "much)",
                static_cast<unsigned long long>(sg.intervals),
                static_cast<unsigned long long>(gr.latency.count),
                share_of_intervals(static_cast<double>(sg.intervals) / n).c_str(),
                human_ns(sg.threshold_ns).c_str(),
                sg.rest_mean_ns > 0 ? sg.mean_ns / sg.rest_mean_ns : 0.0,
                percent(sg.removed).c_str());
  return std::string(head) + (places.empty() ? "." : "; their extra time: " + places + ".");
}

} // namespace

Answer answer_of(const AnalysisResult &res, const GroupResult &gr) {
  Answer a;
  if (gr.places.empty() || gr.latency.var_ns2 <= 0) {
    a.sentence = "No variance to explain (" + std::to_string(gr.latency.count) + " intervals).";
    return a;
  }
  const Place &p = gr.places.front();
  a.found = true;
  a.key = p.key;
  a.name = p.name;
  a.kind = p.kind;
  a.share = p.share;
  a.contribution = p.contribution;
  a.node = p.node;
  const std::vector<int> path = path_to(res, p.node);
  for (int n : path) {
    const Node &nd = res.nodes[static_cast<std::size_t>(n)];
    a.chain.push_back(nd.name);
    if (nd.function && std::find(a.chain_functions.begin(), a.chain_functions.end(), nd.function) ==
                           a.chain_functions.end())
      a.chain_functions.push_back(nd.function);
  }
  // the way carrying most of it: a wait's waker (the place is the work the waiters wait
  // for), or the intervals' own path
  if (p.waker && !p.via.empty() && !p.via.front().first.empty()) {
    a.wait = p.via.front().first;
    a.via_contribution = p.via.front().second;
    for (const auto &w : gr.waits)
      if (w.name == a.wait)
        a.wait_contribution = w.contribution;
  }
  if (!a.wait.empty() || p.kind == Place::Kind::Wait)
    a.waker = waker_on(res, path);
  if (a.waker == a.name) // the place is the waker's outermost frame itself
    a.waker.clear();
  note_wakeup_delay(gr, a);
  a.slow_group = gr.slow.found && !answer_holds_slow_group(gr.slow, a);
  a.sentence = sentence_of(a) + wakeup_delay_note(a) + slow_group_note(gr, a);
  return a;
}

} // namespace vprof::analyzer::detail
