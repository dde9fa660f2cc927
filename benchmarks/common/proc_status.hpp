// A field of /proc/self/status in kB (VmHWM: the peak resident set, VmRSS: the current
// one), for the benchmarks' memory figures; -1 when the field is missing.
#pragma once

#include <cstring>
#include <fstream>
#include <string>

namespace vprof::bench {

inline long status_kb(const char *field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field, 0) == 0)
      return std::stol(line.substr(std::strlen(field)));
  return -1;
}

} // namespace vprof::bench
