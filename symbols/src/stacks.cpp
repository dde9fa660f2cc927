// Sampled stacks into frames, and their folded and summary renderings (symbols.hpp).
#include "vprof/stacks_reader.hpp"
#include "vprof/symbols.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace vprof::symbols {

namespace {

// A frame's name in chains: its function, else its object's file name in brackets.
std::string frame_name(const Frame &f) {
  if (!f.function.empty())
    return f.function;
  if (f.object.empty())
    return "[unknown]";
  const auto slash = f.object.rfind('/');
  return "[" + (slash == std::string::npos ? f.object : f.object.substr(slash + 1)) + "]";
}

std::filesystem::path maps_file(const std::filesystem::path &dir, std::uint32_t pid) {
  const auto runtime = dir / (std::to_string(pid) + ".maps");
  if (std::filesystem::exists(runtime))
    return runtime;
  return dir / (std::to_string(pid) + ".stackmaps");
}

const char *what_name(std::uint8_t what) {
  switch (what) {
  case VPROF_STACKS_ONCPU:
    return "on CPU";
  case VPROF_STACKS_SLEEP:
    return "at sleeps";
  case VPROF_STACKS_WAKER:
    return "at wake-ups";
  }
  return "?";
}

const char *what_legend(std::uint8_t what) {
  switch (what) {
  case VPROF_STACKS_ONCPU:
    return "where the threads ran";
  case VPROF_STACKS_SLEEP:
    return "where the threads blocked";
  case VPROF_STACKS_WAKER:
    return "where the wakers were";
  }
  return "";
}

// Counts per chain of names (innermost first) of the samples of one kind.
std::vector<std::pair<std::vector<std::string>, std::uint64_t>>
chains(const trace::StacksFile &file, const SymbolizedStacks &sym, std::uint8_t what) {
  std::vector<std::uint64_t> per_stack(file.stacks.size(), 0);
  for (const auto &s : file.samples)
    if (s.what == what)
      ++per_stack[s.stack];
  std::map<std::vector<std::string>, std::uint64_t> by_chain;
  for (std::size_t i = 0; i < per_stack.size(); ++i) {
    if (per_stack[i] == 0)
      continue;
    std::vector<std::string> names;
    for (const Frame &f : sym.frames[i])
      names.push_back(frame_name(f));
    if (names.empty())
      names.push_back("[unknown]");
    by_chain[names] += per_stack[i];
  }
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> out(by_chain.begin(),
                                                                      by_chain.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  return out;
}

} // namespace

bool takes_sp_word(const std::vector<Mapping> &maps, const std::vector<std::uint64_t> &pc,
                   std::uint64_t sp_word) {
  if (sp_word == 0 || pc.empty() || (pc.size() > 1 && pc[1] == sp_word))
    return false;
  const Mapping *word = mapping_of(maps, sp_word);
  if (!word || !word->executable || word->path.empty() || word->path[0] != '/')
    return false;
  const Mapping *first = mapping_of(maps, pc[0]);
  return first && first->path != word->path;
}

std::vector<Frame> stack_frames(Symbolizer &s, const std::vector<Mapping> &maps,
                                const std::vector<std::uint64_t> &pc, std::uint64_t sp_word) {
  std::vector<std::uint64_t> addresses = pc;
  if (takes_sp_word(maps, pc, sp_word))
    addresses.insert(addresses.begin() + 1, sp_word);
  std::vector<Frame> out;
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    std::vector<Frame> at = s.frames(maps, addresses[i], i > 0);
    if (at.empty())
      at.push_back({"", "", 0, "", false});
    out.insert(out.end(), at.begin(), at.end());
  }
  return out;
}

SymbolizedStacks symbolize(const trace::StacksFile &file, const std::filesystem::path &dir) {
  SymbolizedStacks out;
  out.frames.resize(file.stacks.size());
  std::vector<std::uint32_t> pid_of(file.stacks.size(), 0);
  std::vector<bool> seen(file.stacks.size(), false);
  for (const auto &s : file.samples)
    if (!seen[s.stack]) {
      seen[s.stack] = true;
      pid_of[s.stack] = s.pid;
    }
  std::unordered_map<std::uint32_t, std::vector<Mapping>> maps;
  std::set<std::uint32_t> unmapped;
  Symbolizer symbolizer;
  for (std::size_t i = 0; i < file.stacks.size(); ++i) {
    const std::uint32_t pid = pid_of[i];
    auto it = maps.find(pid);
    if (it == maps.end()) {
      it = maps.emplace(pid, read_maps(maps_file(dir, pid))).first;
      if (it->second.empty() && seen[i])
        unmapped.insert(pid);
    }
    out.frames[i] = stack_frames(symbolizer, it->second, file.stacks[i].pc, file.stacks[i].sp_word);
  }
  out.unmapped_pids.assign(unmapped.begin(), unmapped.end());
  return out;
}

std::string render_folded(const trace::StacksFile &file, const SymbolizedStacks &sym,
                          const std::vector<std::uint8_t> &whats) {
  std::map<std::vector<std::string>, std::uint64_t> total;
  for (std::uint8_t what : whats)
    for (auto &[names, n] : chains(file, sym, what))
      total[names] += n;
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> rows(total.begin(), total.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string out;
  for (const auto &[names, n] : rows) {
    for (auto it = names.rbegin(); it != names.rend(); ++it)
      out += (it == names.rbegin() ? "" : ";") + *it;
    out += " " + std::to_string(n) + "\n";
  }
  return out;
}

std::string render_summary(const trace::StacksFile &file, const SymbolizedStacks &sym,
                           std::size_t top) {
  std::uint64_t count[4] = {0, 0, 0, 0};
  std::set<std::uint32_t> pids;
  for (const auto &s : file.samples) {
    ++count[s.what & 3];
    pids.insert(s.pid);
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: %zu samples of %zu process(es): %llu on CPU (%u Hz per CPU), %llu at sleeps, "
                "%llu at wake-ups; %zu distinct stacks\n",
                file.info.file.string().c_str(), file.samples.size(), pids.size(),
                static_cast<unsigned long long>(count[VPROF_STACKS_ONCPU]), file.info.sample_hz,
                static_cast<unsigned long long>(count[VPROF_STACKS_SLEEP]),
                static_cast<unsigned long long>(count[VPROF_STACKS_WAKER]), file.stacks.size());
  std::string out = line;
  if (file.info.lost + file.info.empty + file.info.unresolved > 0) {
    std::snprintf(line, sizeof line,
                  "  %llu lost (ring full: raise --sched-ring-mb), %llu without a user frame, "
                  "%llu naming no stack of the file\n",
                  static_cast<unsigned long long>(file.info.lost),
                  static_cast<unsigned long long>(file.info.empty),
                  static_cast<unsigned long long>(file.info.unresolved));
    out += line;
  }
  for (std::uint32_t pid : sym.unmapped_pids)
    out += "  process " + std::to_string(pid) +
           ": no memory map (<pid>.maps or <pid>.stackmaps): its frames are unnamed\n";
  for (std::uint8_t what : {VPROF_STACKS_ONCPU, VPROF_STACKS_SLEEP, VPROF_STACKS_WAKER}) {
    const std::uint64_t n = count[what];
    if (n == 0)
      continue;
    out += std::string("\n") + what_name(what) + ": " + what_legend(what) +
           " (innermost frame first)\n";
    const auto rows = chains(file, sym, what);
    for (std::size_t i = 0; i < rows.size() && i < top; ++i) {
      std::string chain;
      for (std::size_t k = 0; k < rows[i].first.size() && k < 6; ++k)
        chain += (k ? " <- " : "") + rows[i].first[k];
      if (rows[i].first.size() > 6)
        chain += " <- ...";
      std::snprintf(line, sizeof line, "  %8llu %5.1f%%  ",
                    static_cast<unsigned long long>(rows[i].second),
                    100.0 * static_cast<double>(rows[i].second) / static_cast<double>(n));
      out += line + chain + "\n";
    }
  }
  return out;
}

} // namespace vprof::symbols
