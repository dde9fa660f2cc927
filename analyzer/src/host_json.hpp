// The hosts of a multi-host analysis as JSON, as the JSON report and the HTML page carry them.
#pragma once

#include "vprof/analyzer.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace vprof::analyzer::detail {

inline nlohmann::json hosts_json(const std::vector<HostClock> &hosts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto &h : hosts)
    out.push_back({{"dir", h.dir},
                   {"hostname", h.hostname},
                   {"clock_samples", h.clock_samples},
                   {"offset_ns", h.offset_ns},
                   {"skew_bound_ns", h.skew_bound_ns},
                   {"edges_out", h.edges_out},
                   {"edges_in", h.edges_in},
                   {"violations", h.violations},
                   {"worst_violation_ns", h.worst_violation_ns}});
  return out;
}

} // namespace vprof::analyzer::detail
