// Memory maps (the /proc/<pid>/maps format) as Mapping values (symbols.hpp).
#include "vprof/symbols.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>

namespace vprof::symbols {

namespace {

// "start-end perms offset dev inode   path": false for a line that is not one.
bool parse_line(const std::string &line, Mapping &m) {
  unsigned long long start = 0, end = 0, offset = 0;
  char perms[8] = {0};
  int path_at = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
                  &path_at) < 4 ||
      end <= start)
    return false;
  m.start = start;
  m.end = end;
  m.offset = offset;
  m.executable = perms[2] == 'x';
  m.path = path_at > 0 && static_cast<std::size_t>(path_at) <= line.size()
               ? line.substr(static_cast<std::size_t>(path_at))
               : "";
  while (!m.path.empty() && (m.path.back() == '\n' || m.path.back() == ' '))
    m.path.pop_back();
  return true;
}

} // namespace

std::vector<Mapping> read_maps(const std::filesystem::path &file) {
  std::vector<Mapping> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    if (parse_line(line, m))
      out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Mapping &a, const Mapping &b) { return a.start < b.start; });
  return out;
}

const Mapping *mapping_of(const std::vector<Mapping> &maps, std::uint64_t address) {
  auto it = std::upper_bound(maps.begin(), maps.end(), address,
                             [](std::uint64_t a, const Mapping &m) { return a < m.start; });
  if (it == maps.begin())
    return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

} // namespace vprof::symbols
