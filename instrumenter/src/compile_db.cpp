// Loading compile_commands.json: bear's internal `-cc1` jobs are dropped and a source
// built by several commands is kept once.
#include "internal.hpp"

#include <clang/Tooling/JSONCompilationDatabase.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace vprof::instr {

namespace fs = std::filesystem;

CompileDb CompileDb::load(const fs::path &path) {
  fs::path file = path;
  if (fs::is_directory(file))
    file /= "compile_commands.json";
  if (!fs::exists(file))
    throw std::runtime_error(file.string() + ": no such compile database");
  std::string err;
  auto jdb = clang::tooling::JSONCompilationDatabase::loadFromFile(
      file.string(), err, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!jdb)
    throw std::runtime_error(file.string() + ": cannot read compile database: " + err);
  CompileDb db;
  std::unordered_set<std::string> seen;
  for (auto &cc : jdb->getAllCompileCommands()) {
    // bear sometimes records the driver's internal `clang -cc1` job; libTooling rejects it.
    if (std::find(cc.CommandLine.begin(), cc.CommandLine.end(), "-cc1") != cc.CommandLine.end())
      continue;
    CompileCommand c;
    c.directory = cc.Directory;
    c.file = detail::normal_path(cc.Filename, cc.Directory);
    c.args = cc.CommandLine;
    db.all_.push_back(c);
    if (seen.insert(c.file).second) // built into two targets: parse it once
      db.commands_.push_back(std::move(c));
  }
  if (db.commands_.empty())
    throw std::runtime_error(file.string() + ": no usable compile commands");
  return db;
}

void CompileDb::add(CompileCommand cmd) {
  all_.push_back(cmd);
  for (const auto &c : commands_)
    if (c.file == cmd.file)
      return; // the same file built into two targets: parse it once
  commands_.push_back(std::move(cmd));
}

const CompileCommand *CompileDb::find(const fs::path &file) const {
  std::string want = detail::normal_path(file.string(), fs::current_path().string());
  for (const auto &c : commands_)
    if (c.file == want)
      return &c;
  return nullptr;
}

} // namespace vprof::instr
