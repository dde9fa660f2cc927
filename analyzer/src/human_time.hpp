// Times as the reports print them: ns, us, ms or s with about three significant digits.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace vprof::analyzer::detail {

inline std::string human_ns(double ns) {
  char buf[64];
  const double a = std::abs(ns);
  if (a < 1e3)
    std::snprintf(buf, sizeof buf, "%.0fns", ns);
  else if (a < 1e6)
    std::snprintf(buf, sizeof buf, "%.2fus", ns / 1e3);
  else if (a < 1e9)
    std::snprintf(buf, sizeof buf, "%.2fms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3fs", ns / 1e9);
  return buf;
}

// A small share of the intervals with two significant digits ("0.088%"), one decimal from 1 %.
inline std::string share_of_intervals(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fraction < 0.01 ? "%.2g%%" : "%.1f%%", 100 * fraction);
  return buf;
}

} // namespace vprof::analyzer::detail
