// Internal helpers shared by the instrumenter's scan and rewrite passes: running one
// ClangTool per file, USRs, canonical (pattern) declarations, source positions.
#pragma once

#include "vprof/instrumenter.hpp"
#include "vprof/workspace_rows.hpp"

#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/FrontendAction.h>

#include <memory>
#include <string>
#include <unordered_map>

namespace vprof::instr::detail {

// The arguments libTooling parses `cmd` with: the original command, then the resource
// directory, -DVPROF_ENABLE, the annotation/runtime include dirs, `-w`, and extras.
std::vector<std::string> tool_args(const CompileCommand &cmd, const ParseOptions &opt);

// What running one action on one translation unit came to.
struct ActionOutcome {
  enum class Status { parsed, errors, crashed };
  Status status = Status::parsed;
  std::string reason; // errors, crashed: why, for the user ("crashed (signal 11, SIGSEGV)")
  bool ok() const { return status == Status::parsed; }
};

// Runs `action` on the main file of `cmd` with a fresh ClangTool (one per file: a shared
// file manager crashed on same-named files in different folders), on a thread of its own
// with a large stack under LLVM's CrashRecoveryContext: a crash (a signal such as SIGSEGV,
// an abort) in Clang or in the action is caught and returned as `crashed`, so one unit
// never takes a whole scan or a build down (what the crashed parse had allocated leaks).
// Clang's error diagnostics go to stderr unless quiet.
// Testing hook: VPROF_TESTING_CRASH_UNIT=<suffix> crashes the action of every unit whose
// path ends with it (docs/instrumenter.md, "A unit that crashes").
ActionOutcome run_action(const CompileCommand &cmd, const ParseOptions &opt,
                         std::unique_ptr<clang::FrontendAction> action);

// USR of a declaration ("" when Clang cannot make one).
std::string usr_of(const clang::Decl *d);

// The declaration whose USR names `fd` in the call graph: template instantiations map to
// their pattern, so a template is one node.
const clang::FunctionDecl *canonical_fn(const clang::FunctionDecl *fd);

// Display name: the qualified name, or `<enclosing>::lambda@line:col` for lambdas.
std::string display_name(const clang::FunctionDecl *fd, const clang::SourceManager &sm);

// True for the call operator of a lambda's closure class.
bool is_lambda_operator(const clang::FunctionDecl *fd);

// Absolute, symlink-resolved path of the file holding `loc` (expansion location),
// cached per FileID. Empty for locations without a file.
class PathCache {
public:
  explicit PathCache(const clang::SourceManager &sm, std::string cwd)
      : sm_(sm), cwd_(std::move(cwd)) {}
  const std::string &path(clang::SourceLocation loc);

private:
  const clang::SourceManager &sm_;
  std::string cwd_;
  std::unordered_map<unsigned, std::string> cache_;
  std::string empty_;
};

// Normalised absolute path (weakly canonical) of `p` relative to `cwd`.
std::string normal_path(const std::string &p, const std::string &cwd);

// `s` as a C string literal: backslash and quote escaped, anything unprintable in octal
// (a path in `#line`, the strings of a unit's registration).
std::string c_string_literal(const std::string &s);

// True for locations in vprof's own headers (<vprof/vprof.h>, <vprof/vprof.hpp>,
// <vprof/probe.h>, <vprof/trace_format.h>): the profiler, not the program. Their
// functions are neither call-graph nodes nor roots, and calls to them get no probe.
bool vprof_header(const clang::SourceManager &sm, clang::SourceLocation loc);

// The position that identifies a call site (stable across iterations and shared by
// the `calls` and `sites` tables): the member name of member calls, the operator of
// operator calls, the closing parenthesis of other calls, else the start.
clang::SourceLocation site_loc(const clang::Expr *call);

// Where a call whose first or last token comes from a macro can be wrapped
// (macro_call.cpp, docs/instrumenter.md "Calls behind macros"): `expr` is the call, or
// the parentheses and casts around it, whose tokens are exactly those of macro
// invocations written in the main file (and text between them), and [begin, end) those
// invocations' offsets in the main file. Otherwise `expr` is null and `refusal` says why
// (null too when the call is not the main file's text at all).
struct MacroCallSpan {
  const clang::Expr *expr = nullptr;
  unsigned begin = 0, end = 0;
  const char *refusal = nullptr;
};
MacroCallSpan macro_call_span(clang::ASTContext &ctx, const clang::Expr *call);

} // namespace vprof::instr::detail
