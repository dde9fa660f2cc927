// Exact order statistics of a stream of doubles read in passes, in bounded memory
// (docs/statistics.md, "Sums, not matrices"): the latencies' percentiles and the tail's
// threshold without keeping a group's latencies. Internal to the analyzer.
#pragma once

#include <cstdint>
#include <vector>

namespace vprof::analyzer::detail {

// The k-th smallest values (0-based ranks) of n doubles that every pass gives in full, in
// any order. Each value's 64 bits, mapped so that their unsigned order is the doubles'
// order, are read from the top: a pass counts the values under the next 20 bits (16 after
// the first pass) of each wanted rank's prefix, so the rank's bin is known; a bin of at most
// kCollect values is collected in the following pass and the rank selected in it; a larger
// one is counted again under its next bits (values all equal end there: their bits are the
// value). Typically two passes: the first counts, the second collects. Memory: 4 MiB of
// counts in the first pass, 256 KiB per rank after it, at most kCollect doubles per rank.
class OrderStatistics {
public:
  static constexpr std::size_t kCollect = std::size_t{1} << 20;
  OrderStatistics() = default;
  OrderStatistics(std::uint64_t n, std::vector<std::uint64_t> ranks);
  // one value of the current pass
  void add(double v);
  // The pass is over: true when every rank is known (value()), else another pass is due.
  bool end_pass();
  bool done() const { return pending_ == 0; }
  double value(std::size_t i) const { return targets_[i].value; }

private:
  struct Target {
    std::uint64_t rank = 0;   // among all values
    std::uint64_t prefix = 0; // the key's top bits above `shift` every candidate shares
    unsigned shift = 64;      // 64: no bit known yet
    std::uint64_t below = 0;  // values whose key lies below the prefix
    bool collecting = false, resolved = false;
    std::vector<std::uint32_t> counts; // under the next bits (counting passes after the first)
    std::vector<double> values;        // of the prefix (collecting pass)
    double value = 0;
  };
  static unsigned width(const Target &t) { return t.shift == 64 ? 20 : 16; }
  std::uint64_t n_ = 0;
  std::vector<Target> targets_;
  std::vector<std::uint32_t> root_; // the first pass's counts under the top 20 bits
  std::size_t pending_ = 0;
};

// The q-th percentile (q in [0, 1]) by linear interpolation between order statistics (R
// type 7), as LatencyStats: the two ranks it needs, and the value from them.
void percentile_ranks(std::uint64_t n, double q, std::uint64_t &lo, std::uint64_t &hi,
                      double &frac);

} // namespace vprof::analyzer::detail
