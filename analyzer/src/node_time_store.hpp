// The node times of every finished interval, written as the engine walks them and read back
// a block at a time by the analysis's passes (docs/statistics.md, "Sums, not matrices"): an
// unlinked temporary file, so the analysis's memory does not grow with the number of
// intervals. Internal to the analyzer (analyze_trace; tests/analyzer/test_accumulators.cpp).
#pragma once

#include "engine.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace vprof::analyzer::detail {

// Blocks of intervals as the engine hands them over (IntervalSink): per interval its label
// and its node times, varint-coded (the node as the difference to the previous one, the
// self time zigzag-coded), about 3 bytes a node time, and their byte count (a pass over one
// label's intervals skips the others without decoding them).
class NodeTimeStore {
public:
  // A file in `dir` (default: $TMPDIR, else /tmp), removed when the store is destroyed (it
  // has no name: O_TMPFILE, or unlinked right after mkstemp). Throws AnalysisError naming
  // the directory when none can be made.
  explicit NodeTimeStore(const std::filesystem::path &dir = {});
  ~NodeTimeStore();
  NodeTimeStore(const NodeTimeStore &) = delete;
  NodeTimeStore &operator=(const NodeTimeStore &) = delete;

  void append(const std::vector<IntervalRec> &intervals, const std::vector<NodeTime> &times);
  // fn(times, n) for every interval with the label index `label` (-1: every interval), in
  // writing order (appending is over once reading begins); `times` is valid during the call
  using RowFn = std::function<void(const NodeTime *times, std::uint32_t n)>;
  void for_each_interval(std::int64_t label, const RowFn &fn) const;

  std::uint64_t intervals() const { return intervals_; }
  std::uint64_t bytes() const { return size_; }
  const std::filesystem::path &dir() const { return dir_; }

private:
  void write_all(const std::uint8_t *p, std::size_t n);
  int fd_ = -1;
  std::filesystem::path dir_;
  std::uint64_t intervals_ = 0, size_ = 0;
  std::vector<std::uint8_t> buf_, one_; // one block's bytes, one interval's; reused
};

} // namespace vprof::analyzer::detail
