// Places (docs/statistics.md, "Places"): every node's place and the wait whose waker's
// work it is.
#include "stages.hpp"

#include <Eigen/Dense>

#include <string>
#include <unordered_map>

namespace vprof::analyzer::detail {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// The waiter's wake-up delay below a wait node (the engine's kWakeup child).
bool is_wakeup_delay(const AnalysisResult &res, int node) {
  const Node &n = res.nodes[static_cast<std::size_t>(node)];
  return n.kind == Node::Kind::Wait && n.parent >= 0 &&
         res.nodes[static_cast<std::size_t>(n.parent)].kind == Node::Kind::Wait &&
         n.wait == wait_kind_name(kWakeup);
}

bool is_pseudo_waker(const Node &n) {
  return n.kind == Node::Kind::Wait && (n.wait == "io-device" || n.wait == "net-receive" ||
                                        n.wait == "timer" || n.wait == "other-process");
}

bool is_outside_waker(const Node &n) { return is_pseudo_waker(n) && n.wait != "other-process"; }

// A kernel wait (or its pseudo-waker or wake-up delay) directly inside a timed call of an
// outside function: the place the call's time belongs to takes it too.
bool in_outside_call(const AnalysisResult &res, const PlaceTable &pt, int node) {
  const Node &n = res.nodes[static_cast<std::size_t>(node)];
  if (n.parent <= 0)
    return false;
  const Node &p = res.nodes[static_cast<std::size_t>(n.parent)];
  const int pp = pt.place_of[static_cast<std::size_t>(n.parent)];
  if (pp < 0)
    return false;
  if (p.kind == Node::Kind::Site)
    return pt.kind[static_cast<std::size_t>(pp)] == Place::Kind::Call &&
           is_kernel_wait_name(n.wait);
  // below a folded kernel wait: its pseudo-waker and its wake-up delay (not a waker's frames)
  return p.kind == Node::Kind::Wait && n.kind == Node::Kind::Wait && pt.folded[n.parent];
}

// Every site and wait node belongs to one place, the root to "outside probed functions"
// (its body: the interval's own time where no probed frame is open), (untracked) to none. A
// call of a function defined in the program belongs to the callee (with its body below it:
// one place), a call of an outside function to "callee in caller", a wait to "kind in the
// function that waited"; below a wait node, places are the waker's and are kept apart per
// wait.
PlaceTable assign_places(const AnalysisResult &res, const DbFacts &facts) {
  const std::size_t N = res.nodes.size();
  PlaceTable pt;
  pt.place_of.assign(N, -1);
  pt.folded.assign(N, 0);
  std::unordered_map<std::string, int> place_index;
  if (N > 0) {
    pt.key.push_back(kOutsideKey);
    pt.name.push_back(kOutsideName);
    pt.function.push_back(0);
    pt.holder.push_back(0);
    pt.site.push_back(0);
    pt.kind.push_back(Place::Kind::Outside);
    pt.wakeup_delay.push_back(0);
    pt.outside_waker.push_back(0);
    pt.place_of[0] = 0;
    place_index.emplace(kOutsideKey, 0);
  }
  // the function whose code a node's time runs in (key, name); an unknown site stands for
  // itself
  std::vector<std::string> encl_key(N), encl_name(N);
  std::vector<std::int64_t> encl_fn(N, 0);
  // a call of a program function whose body the plan does not probe: the calling function
  // (key, name), so that a wait inside it is a place per caller — LevelDB's writer queue
  // and its compaction wait both wait in CondVar::Wait, called from DBImpl::Write and from
  // MakeRoomForWrite
  std::vector<std::string> call_from_key(N), call_from_name(N);
  for (std::size_t i = 1; i < N; ++i) {
    const Node &n = res.nodes[i];
    encl_key[i] = encl_key[n.parent];
    encl_name[i] = encl_name[n.parent];
    encl_fn[i] = encl_fn[n.parent];
    std::string key, name;
    std::int64_t fn = 0, holder = 0, psite = 0;
    Place::Kind pkind = Place::Kind::Function;
    bool wakeup_delay = false;
    if (n.kind == Node::Kind::Untracked) {
      continue;
    } else if (n.kind == Node::Kind::Wait && in_outside_call(res, pt, static_cast<int>(i))) {
      // a kernel wait inside a timed call of an outside function (fdatasync, read) is that
      // call's time, as it was before the kernel's events split it: one place, the call's;
      // its waker's work (if a traced thread woke it) reaches the path through that place
      pt.place_of[i] = pt.place_of[n.parent];
      pt.folded[i] = 1;
      continue;
    } else if (n.kind == Node::Kind::Wait && is_wakeup_delay(res, static_cast<int>(i))) {
      // the waiter's delay after the release: a place of its own beside the wait's
      const int wp = pt.place_of[n.parent];
      pkind = Place::Kind::Wait;
      wakeup_delay = true;
      holder = pt.holder[wp];
      key = "w:wakeup@" + pt.key[wp];
      name = n.name + " after " + pt.name[wp];
    } else if (n.kind == Node::Kind::Wait) {
      pkind = Place::Kind::Wait;
      holder = encl_fn[n.parent];
      key = "w:" + n.wait + "@" + encl_key[n.parent];
      name = n.name + " in " + (encl_name[n.parent].empty() ? "(interval)" : encl_name[n.parent]);
      if (!call_from_key[n.parent].empty()) {
        key += "<" + call_from_key[n.parent];
        name += " from " + call_from_name[n.parent];
      }
    } else {
      auto it = facts.sites.find(n.site);
      const SiteInfo *si =
          it == facts.sites.end() || it->second.kind.empty() ? nullptr : &it->second;
      if (!si) {
        pkind = Place::Kind::Site;
        psite = n.site;
        key = "s:" + std::to_string(n.site);
        name = n.name;
        encl_key[i] = key;
        encl_name[i] = name;
        encl_fn[i] = 0;
      } else if (si->kind == "body" || (si->function && !si->dispatch && !si->external)) {
        fn = si->function;
        key = "f:" + std::to_string(fn);
        name = si->kind == "body" ? si->name : si->callee_name;
        encl_key[i] = "f:" + std::to_string(fn);
        encl_name[i] = name;
        encl_fn[i] = fn;
        if (si->kind != "body" && si->caller) {
          call_from_key[i] = "f:" + std::to_string(si->caller);
          call_from_name[i] = si->caller_name;
        }
      } else {
        pkind = si->external ? Place::Kind::Call : Place::Kind::Site;
        holder = si->caller;
        psite = si->external ? 0 : n.site;
        key = si->external ? "x:" + si->callee_name + "@" + std::to_string(si->caller)
                           : "s:" + std::to_string(n.site);
        name = si->external ? si->callee_name + "() in " + si->caller_name : n.name;
        encl_key[i] = "f:" + std::to_string(si->caller);
        encl_name[i] = si->caller_name;
        encl_fn[i] = si->caller;
      }
    }
    auto [it, fresh] = place_index.try_emplace(key, static_cast<int>(pt.key.size()));
    if (fresh) {
      pt.key.push_back(key);
      pt.name.push_back(name);
      pt.function.push_back(fn);
      pt.holder.push_back(holder);
      pt.site.push_back(psite);
      pt.kind.push_back(pkind);
      pt.wakeup_delay.push_back(wakeup_delay);
      pt.outside_waker.push_back(n.kind == Node::Kind::Wait && !wakeup_delay &&
                                 is_outside_waker(n));
    }
    pt.place_of[i] = it->second;
  }
  // how a node reaches the critical path: -1 on the interval's own path, else the place of
  // its outermost wait ancestor (the wait on the own path whose waker's work it is)
  pt.via_of.assign(N, -1);
  for (std::size_t i = 1; i < N; ++i) {
    int p = res.nodes[i].parent;
    if (is_wakeup_delay(res, static_cast<int>(i))) { // on the path the wait itself is on
      pt.via_of[i] = pt.via_of[p];
      continue;
    }
    pt.via_of[i] = pt.via_of[p] >= 0                       ? pt.via_of[p]
                   : res.nodes[p].kind == Node::Kind::Wait ? pt.place_of[p]
                                                           : -1;
  }
  return pt;
}

} // namespace vprof::analyzer::detail
