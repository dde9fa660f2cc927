// export: the instrumented tree into an output folder, or a unified diff.
#include "internal.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

namespace vprof::instr {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_lines(const std::string &s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(s.substr(start));
      break;
    }
    lines.push_back(s.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return lines;
}

std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

// A small Myers-free diff: common prefix/suffix trimmed, then an LCS over the middle
// when it is small, else a line-by-line pairing (the rewriter only inserts text within
// lines and adds whole lines, so the pairing after the header lines is exact).
std::string unified_diff(const std::string &before, const std::string &after,
                         const std::string &name) {
  std::vector<std::string> a = split_lines(before), b = split_lines(after);
  // Edit script as (op, line) with op ' ', '-', '+'.
  std::vector<std::pair<char, std::string>> ops;
  std::size_t n = a.size(), m = b.size();
  std::size_t i = 0, j = 0;
  // Align: b may have extra lines (the probe header); find them greedily.
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ops.push_back({' ', a[i]});
      ++i, ++j;
    } else if (m - j > n - i) {
      ops.push_back({'+', b[j++]});
    } else if (n - i > m - j) {
      ops.push_back({'-', a[i++]});
    } else {
      ops.push_back({'-', a[i++]});
      ops.push_back({'+', b[j++]});
    }
  }
  std::ostringstream out;
  const std::size_t ctx = 3;
  std::size_t k = 0;
  bool header = false;
  while (k < ops.size()) {
    if (ops[k].first == ' ') {
      ++k;
      continue;
    }
    std::size_t start = k >= ctx ? k - ctx : 0;
    std::size_t end = k, last_change = k;
    while (end < ops.size() && end - last_change <= 2 * ctx) {
      if (ops[end].first != ' ')
        last_change = end;
      ++end;
    }
    end = std::min(ops.size(), last_change + ctx + 1);
    std::size_t ai = 1, bi = 1;
    for (std::size_t q = 0; q < start; ++q) {
      if (ops[q].first != '+')
        ++ai;
      if (ops[q].first != '-')
        ++bi;
    }
    std::size_t acount = 0, bcount = 0;
    for (std::size_t q = start; q < end; ++q) {
      if (ops[q].first != '+')
        ++acount;
      if (ops[q].first != '-')
        ++bcount;
    }
    if (!header) {
      out << "--- a/" << name << "\n+++ b/" << name << "\n";
      header = true;
    }
    out << "@@ -" << ai << "," << acount << " +" << bi << "," << bcount << " @@\n";
    for (std::size_t q = start; q < end; ++q) {
      out << ops[q].first << ops[q].second;
      if (ops[q].second.empty() || ops[q].second.back() != '\n')
        out << "\n\\ No newline at end of file\n";
    }
    k = end;
  }
  return out.str();
}

int export_tree(ws::Database &wsdb, const CompileDb &db, const ExportOptions &opt, int *failed) {
  int written = 0, bad = 0;
  fs::path root = opt.root;
  if (root.empty()) {
    // Common parent directory of all sources.
    for (const auto &c : db.commands()) {
      fs::path dir = fs::path(c.file).parent_path();
      if (root.empty()) {
        root = dir;
        continue;
      }
      fs::path common;
      auto r = root.begin(), d = dir.begin();
      for (; r != root.end() && d != dir.end() && *r == *d; ++r, ++d)
        common /= *r;
      root = common;
    }
  }
  for (const auto &c : db.commands()) {
    if (!file_has_plan(wsdb, c.file, opt.iteration))
      continue;
    RewriteResult r = rewrite(wsdb, c, opt.iteration, opt.parse);
    if (!r.ok) {
      std::cerr << "vprof: export: " << r.error << "\n";
      ++bad;
      continue;
    }
    if (!r.changed)
      continue;
    fs::path rel = fs::path(c.file).lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..")
      rel = fs::path(c.file).relative_path();
    if (opt.diff) {
      *opt.diff << unified_diff(read_file(c.file), r.output, rel.string());
    } else {
      fs::path dst = opt.out_dir / rel;
      fs::create_directories(dst.parent_path());
      std::ofstream out(dst, std::ios::binary);
      out << r.output;
      if (!out) {
        std::cerr << "vprof: export: " << dst.string() << ": cannot write\n";
        ++bad;
        continue;
      }
    }
    ++written;
  }
  if (failed)
    *failed = bad;
  return written;
}

} // namespace vprof::instr
