// minidb row lock manager: per-row request queues, FCFS or oldest-transaction-first
// (VATS) granting, waiters parked on their transaction's condition variable.
#include "minidb.hpp"

#include <algorithm>

namespace minidb {

LockManager::LockManager(LockPolicy policy) : policy_(policy) {
  for (auto &p : parts_)
    pthread_mutex_init(&p.mu, nullptr);
}

LockManager::~LockManager() {
  for (auto &p : parts_)
    pthread_mutex_destroy(&p.mu);
}

void LockManager::acquire(Txn &txn, std::uint64_t row, LockMode mode) {
  if (policy_ == LockPolicy::None)
    return;
  for (const LockRequest *r : txn.held)
    if (r->row == row && (r->mode == LockMode::Exclusive || mode == LockMode::Shared))
      return; // already held in this or a stronger mode (callers never upgrade S -> X)
  auto *req = new LockRequest{&txn, mode, false, row};
  txn.held.push_back(req);
  Partition &p = partition(row);
  MutexLock guard(p.mu);
  Head &head = p.heads[row];
  head.queue.push_back(req);
  grant_waiters(head);
  if (!req->granted) {
    std::uint64_t t0 = now_ns();
    while (!req->granted)
      pthread_cond_wait(&txn.granted_cv, &p.mu);
    txn.lock_wait_ns += now_ns() - t0;
  }
}

void LockManager::grant_waiters(Head &head) {
  int granted = 0;
  bool exclusive_granted = false;
  for (const LockRequest *r : head.queue)
    if (r->granted) {
      ++granted;
      exclusive_granted |= r->mode == LockMode::Exclusive;
    }
  auto try_grant = [&](LockRequest *r) {
    bool compatible = granted == 0 || (r->mode == LockMode::Shared && !exclusive_granted);
    if (!compatible)
      return false;
    r->granted = true;
    ++granted;
    exclusive_granted |= r->mode == LockMode::Exclusive;
    pthread_cond_signal(&r->txn->granted_cv);
    return true;
  };
  if (policy_ == LockPolicy::Fcfs) {
    // Queue order; the first incompatible waiter blocks everyone behind it.
    for (LockRequest *r : head.queue)
      if (!r->granted && !try_grant(r))
        break;
    return;
  }
  // VATS: waiters by the age of their transaction (earliest start first); stopping at
  // the first incompatible one keeps the oldest from being starved by younger readers.
  std::vector<std::pair<std::uint64_t, std::size_t>> order; // (start time, queue position)
  std::vector<LockRequest *> queued;
  for (LockRequest *r : head.queue)
    if (!r->granted) {
      order.emplace_back(r->txn->start_ns, queued.size());
      queued.push_back(r);
    }
  std::sort(order.begin(), order.end()); // ties keep queue order
  std::vector<LockRequest *> waiters;
  for (const auto &o : order)
    waiters.push_back(queued[o.second]);
  for (LockRequest *r : waiters)
    if (!try_grant(r))
      break;
}

void LockManager::release_all(Txn &txn) {
  for (LockRequest *req : txn.held) {
    Partition &p = partition(req->row);
    {
      MutexLock guard(p.mu);
      auto it = p.heads.find(req->row);
      if (it != p.heads.end()) {
        it->second.queue.remove(req);
        if (it->second.queue.empty())
          p.heads.erase(it);
        else
          grant_waiters(it->second);
      }
    }
    delete req;
  }
  txn.held.clear();
}

} // namespace minidb
