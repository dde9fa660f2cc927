// Finding the workspace database: $VPROF_WORKSPACE, else .vprof/vprof.db upwards.
#include "vprof/instrumenter.hpp"

#include <cstdlib>

namespace vprof::instr {

namespace fs = std::filesystem;

std::optional<fs::path> find_workspace(const fs::path &start) {
  std::error_code ec;
  if (const char *env = std::getenv("VPROF_WORKSPACE"); env && *env) {
    fs::path p(env);
    if (fs::is_directory(p, ec)) {
      if (fs::exists(p / ".vprof" / "vprof.db", ec))
        return p / ".vprof" / "vprof.db";
      if (fs::exists(p / "vprof.db", ec))
        return p / "vprof.db";
      return std::nullopt;
    }
    if (fs::exists(p, ec))
      return p;
    return std::nullopt;
  }
  for (fs::path d = fs::absolute(start, ec); !d.empty(); d = d.parent_path()) {
    fs::path cand = d / ".vprof" / "vprof.db";
    if (fs::exists(cand, ec))
      return cand;
    if (d == d.root_path())
      break;
  }
  return std::nullopt;
}

} // namespace vprof::instr
