// rewrite: instruments the main file of one translation unit per a plan — a body probe
// in every planned function and a call-site probe around every safe call inside it —
// as tooling::Replacements, with site ids from the workspace `sites` table. The parts of
// the pass are listed in rewriter.hpp; this file runs them and writes the output.
#include "rewriter.hpp"

#include "vprof/workspace_scan.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>

#include <filesystem>
#include <iostream>

namespace vprof::instr {
namespace rewriting {

using namespace clang;

void report(State &st, const SourceManager &sm, SourceLocation loc, std::string reason,
            Diagnostic::Target target, std::string subject) {
  unsigned line = loc.isValid() ? sm.getExpansionLineNumber(loc) : 0;
  if (!st.quiet)
    std::cerr << st.main_path << ":" << line << ": vprof: not instrumented: " << reason << "\n";
  st.skipped.push_back({st.main_path, line, std::move(reason), target, std::move(subject)});
}

namespace {

class RewriteConsumer : public ASTConsumer {
public:
  explicit RewriteConsumer(State &st) : st_(st) {}
  void HandleTranslationUnit(ASTContext &ctx) override {
    const SourceManager &sm = ctx.getSourceManager();
    FileID main = sm.getMainFileID();
    st_.code = std::string(sm.getBufferData(main));
    if (auto fe = sm.getFileEntryRefForID(main))
      st_.spelled_path = std::string(fe->getName());
    st_.cplusplus = ctx.getLangOpts().CPlusPlus;
    collect_sites(ctx, st_);
  }

private:
  State &st_;
};

class RewriteAction : public ASTFrontendAction {
public:
  explicit RewriteAction(State &st) : st_(st) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, StringRef) override {
    return std::make_unique<RewriteConsumer>(st_);
  }

private:
  State &st_;
};

// Gives every site its id: INSERT OR IGNORE then SELECT, in one IMMEDIATE transaction
// so parallel compiler wrappers agree on ids.
void assign_ids(ws::Database &db, State &st) {
  ws::Transaction tx(db);
  ws::SiteTableWriter table(db);
  std::vector<std::int64_t> fn_ids(st.fns.size(), 0);
  for (std::size_t i = 0; i < st.fns.size(); ++i) {
    const FnRef &f = st.fns[i];
    auto it = st.planned.find(f.usr);
    std::int64_t id = it != st.planned.end() ? it->second : table.function_id(f.usr);
    if (!id) { // a lambda the scan did not record
      table.add_defined_function(f.usr, f.name, f.file, f.line);
      id = table.function_id(f.usr);
    }
    fn_ids[i] = id;
  }
  std::unordered_map<std::string, std::int64_t> callee_ids;
  for (Site &s : st.sites) {
    std::int64_t fid = fn_ids[s.fn];
    std::int64_t cid = 0;
    if (!s.callee_usr.empty()) {
      auto it = callee_ids.find(s.callee_usr);
      cid = it != callee_ids.end() ? it->second
                                   : (callee_ids[s.callee_usr] = table.function_id(s.callee_usr));
    }
    if (!cid && s.dependent) {
      // The scan resolved the call in the instantiations: one callee for all of them
      // names the site's callee; several (or none) leave it NULL.
      cid = table.sole_callee_at(fid, st.main_path, s.line, s.col);
    }
    if (auto id = table.site_id({.body = s.body,
                                 .function = fid,
                                 .callee = cid,
                                 .callee_name = s.callee_name,
                                 .file = st.main_path,
                                 .line = s.line,
                                 .col = s.col}))
      s.id = *id;
  }
  tx.commit();
}

// The rewritten text with the probe header placed before the first declaration that
// holds a probe (see State::include_at), at the very top if some edit would precede it,
// and #line directives that keep the original file's positions.
std::string with_probe_header(const State &st, const std::string &body) {
  unsigned at = st.include_at == ~0u ? 0 : st.include_at;
  for (const Site &s : st.sites)
    if (s.begin < at)
      at = 0;
  std::string path =
      detail::c_string_literal(st.spelled_path.empty() ? st.main_path : st.spelled_path);
  std::string probe =
      std::string(st.cplusplus ? "#include <cstdint>\n" : "") + "#include <vprof/probe.h>\n";
  if (at == 0)
    return probe + "#line 1 " + path + "\n" + body;
  std::string there = st.include_file.empty() ? path : detail::c_string_literal(st.include_file);
  return "#line 1 " + path + "\n" + body.substr(0, at) + probe + "#line " +
         std::to_string(st.include_line) + " " + there + "\n" + body.substr(at);
}

} // namespace
} // namespace rewriting

RewriteResult rewrite(ws::Database &db, const CompileCommand &cmd, int iteration,
                      const ParseOptions &opt) {
  using namespace rewriting;
  RewriteResult res;
  State st;
  st.quiet = opt.quiet;
  st.main_path = detail::normal_path(
      cmd.file, cmd.directory.empty() ? std::filesystem::current_path().string() : cmd.directory);
  try {
    if (!file_has_plan(db, st.main_path, iteration)) {
      res.ok = true;
      return res;
    }
    for (const auto &f : ws::planned_functions(db, iteration)) {
      st.planned[f.usr] = f.id;
      if (f.body_only)
        st.body_only.insert(f.usr);
    }
    load_final_plan(db, iteration, st);
  } catch (const std::exception &e) {
    res.error = e.what();
    return res;
  }
  CompileCommand c = cmd;
  c.file = st.main_path;
  if (detail::ActionOutcome parsed =
          detail::run_action(c, opt, std::make_unique<RewriteAction>(st));
      !parsed.ok()) {
    res.error = st.main_path + ": " + parsed.reason;
    return res;
  }
  res.skipped = st.skipped;
  res.planned_defined = st.planned_defined;
  if (st.sites.empty()) {
    res.ok = true;
    return res;
  }
  try {
    assign_ids(db, st);
  } catch (const std::exception &e) {
    res.error = e.what();
    return res;
  }
  std::string err;
  std::string body = apply_probes(st, err);
  if (!err.empty()) {
    res.error = st.main_path + ": " + err;
    return res;
  }
  for (const Site &s : st.sites)
    (s.body ? res.body_sites : res.call_sites)++;
  res.output = with_probe_header(st, body);
  res.ok = true;
  res.changed = true;
  return res;
}

} // namespace vprof::instr
