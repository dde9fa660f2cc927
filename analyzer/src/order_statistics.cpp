// Exact order statistics in passes over a stream (order_statistics.hpp).
#include "order_statistics.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vprof::analyzer::detail {

namespace {

// The double's bits, mapped so that unsigned order is the doubles' order.
std::uint64_t key_of(double v) {
  const auto b = std::bit_cast<std::uint64_t>(v);
  return b >> 63 ? ~b : b | (1ull << 63);
}
double value_of(std::uint64_t k) { return std::bit_cast<double>(k >> 63 ? k & ~(1ull << 63) : ~k); }

} // namespace

OrderStatistics::OrderStatistics(std::uint64_t n, std::vector<std::uint64_t> ranks) : n_(n) {
  for (auto r : ranks) {
    Target t;
    t.rank = std::min(r, n > 0 ? n - 1 : 0);
    t.resolved = n == 0;
    targets_.push_back(std::move(t));
  }
  pending_ = n == 0 ? 0 : targets_.size();
  if (pending_)
    root_.assign(std::size_t{1} << 20, 0); // the first pass's counts, shared by every rank
}

void OrderStatistics::add(double v) {
  const std::uint64_t k = key_of(v);
  if (!root_.empty())
    ++root_[static_cast<std::size_t>(k >> 44)];
  for (auto &t : targets_) {
    if (t.resolved || t.shift == 64 || (k >> t.shift) != t.prefix)
      continue;
    if (t.collecting) {
      t.values.push_back(v);
      continue;
    }
    const unsigned w = std::min(width(t), t.shift);
    ++t.counts[static_cast<std::size_t>((k >> (t.shift - w)) & ((1ull << w) - 1))];
  }
}

bool OrderStatistics::end_pass() {
  for (auto &t : targets_) {
    if (t.resolved)
      continue;
    const std::uint64_t r = t.rank - t.below;
    if (t.collecting) { // the rank among the prefix's values
      const auto nth = t.values.begin() + static_cast<std::ptrdiff_t>(r);
      std::nth_element(t.values.begin(), nth, t.values.end());
      t.value = *nth;
      t.values = {};
      t.resolved = true;
      --pending_;
      continue;
    }
    const unsigned w = std::min(width(t), t.shift);
    const std::vector<std::uint32_t> &counts = t.shift == 64 ? root_ : t.counts;
    std::uint64_t cum = 0, b = 0;
    while (cum + counts[b] <= r)
      cum += counts[b++];
    const std::uint64_t count = counts[b];
    t.below += cum;
    t.prefix = t.shift == 64 ? b : (t.prefix << w) | b;
    t.shift -= w;
    if (t.shift == 0) { // every bit known: the bin holds one value, however many times
      t.value = value_of(t.prefix);
      t.resolved = true;
      --pending_;
    } else if (count <= kCollect) {
      t.collecting = true;
      t.counts = {};
      t.values.reserve(count);
    } else {
      t.counts.assign(std::size_t{1} << std::min(width(t), t.shift), 0);
    }
  }
  root_ = {};
  return pending_ == 0;
}

void percentile_ranks(std::uint64_t n, double q, std::uint64_t &lo, std::uint64_t &hi,
                      double &frac) {
  const double pos = q * static_cast<double>(n > 0 ? n - 1 : 0);
  lo = static_cast<std::uint64_t>(pos);
  frac = pos - static_cast<double>(lo);
  hi = n > 0 ? std::min(lo + 1, n - 1) : 0;
}

} // namespace vprof::analyzer::detail
