// Shared libTooling plumbing: argument adjustment (resource dir, annotations), one
// ClangTool run per file, USRs, canonical declarations and source positions.
#include "internal.hpp"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Driver/Options.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Index/USRGeneration.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Option/ArgList.h>
#include <llvm/Option/OptTable.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/raw_ostream.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>

namespace vprof::instr {

const char *annotations_include_dir() { return VPROF_ANNOTATIONS_INCLUDE; }
const char *runtime_include_dir() { return VPROF_RUNTIME_INCLUDE; }
const char *runtime_library_dir() { return VPROF_RUNTIME_LIBDIR; }
const char *clang_resource_dir() { return VPROF_CLANG_RESOURCE_DIR; }

namespace detail {

namespace fs = std::filesystem;
using namespace clang;

std::string normal_path(const std::string &p, const std::string &cwd) {
  fs::path path(p);
  if (path.is_relative())
    path = fs::path(cwd) / path;
  std::error_code ec;
  fs::path c = fs::weakly_canonical(path, ec);
  return (ec ? path.lexically_normal() : c).string();
}

std::string c_string_literal(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// True for an option Clang's driver does not know (gcc-only flags such as
// -fconserve-stack or -mindirect-branch=): the driver would reject the whole command.
static bool unknown_to_clang(const std::string &arg) {
  if (arg.size() < 2 || arg[0] != '-')
    return false;
  const llvm::opt::OptTable &table = driver::getDriverOptTable();
  const char *one[] = {arg.c_str()};
  unsigned missing_index = 0, missing_count = 0;
  llvm::opt::InputArgList parsed = table.ParseArgs(one, missing_index, missing_count);
  return parsed.hasArg(driver::options::OPT_UNKNOWN);
}

std::vector<std::string> tool_args(const CompileCommand &cmd, const ParseOptions &opt) {
  std::vector<std::string> args;
  for (std::size_t i = 0; i < cmd.args.size(); ++i)
    if (i == 0 || !unknown_to_clang(cmd.args[i]))
      args.push_back(cmd.args[i]);
  if (args.empty())
    args.push_back("cc");
  args.push_back(std::string("-resource-dir=") + VPROF_CLANG_RESOURCE_DIR);
  // The real compile (vprof-cc) enables the annotations; parse the same code.
  args.push_back("-DVPROF_ENABLE");
  args.push_back(std::string("-I") + VPROF_ANNOTATIONS_INCLUDE);
  args.push_back(std::string("-I") + VPROF_RUNTIME_INCLUDE);
  // Warnings are the compiler's business, and gcc-only flags must not stop the parse.
  args.push_back("-w");
  args.push_back("-Wno-unknown-warning-option");
  args.push_back("-Qunused-arguments");
  for (const auto &a : opt.extra_args)
    args.push_back(a);
  return args;
}

namespace {

// A compilation database holding exactly one command.
class SingleDb : public tooling::CompilationDatabase {
public:
  explicit SingleDb(tooling::CompileCommand c) : c_(std::move(c)) {}
  std::vector<tooling::CompileCommand> getCompileCommands(StringRef) const override { return {c_}; }
  std::vector<std::string> getAllFiles() const override { return {c_.Filename}; }

private:
  tooling::CompileCommand c_;
};

class OneActionFactory : public tooling::FrontendActionFactory {
public:
  explicit OneActionFactory(std::unique_ptr<FrontendAction> a) : a_(std::move(a)) {}
  std::unique_ptr<FrontendAction> create() override { return std::move(a_); }

private:
  std::unique_ptr<FrontendAction> a_;
};

// Prints nothing but still counts errors: ClangTool's success is the consumer's error
// count, and IgnoringDiagConsumer counts none, which would hide parse failures.
class SilentCounter : public DiagnosticConsumer {
public:
  void HandleDiagnostic(DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
  }
};

} // namespace

// The testing hook of run_action: true when VPROF_TESTING_CRASH_UNIT names the end of `file`.
static bool planted_crash(const std::string &file) {
  const char *suffix = std::getenv("VPROF_TESTING_CRASH_UNIT");
  return suffix && *suffix && std::string_view(file).ends_with(suffix);
}

static std::string crash_reason(int ret_code) {
  // CrashRecoveryContext's code for a signal is 128 + its number
  if (ret_code > 128 && ret_code < 128 + 65) {
    const int sig = ret_code - 128;
    const char *abbrev = sigabbrev_np(sig);
    return "crashed (signal " + std::to_string(sig) +
           (abbrev ? ", SIG" + std::string(abbrev) : "") + ")";
  }
  return "crashed (Clang exited with " + std::to_string(ret_code) + ")";
}

ActionOutcome run_action(const CompileCommand &cmd, const ParseOptions &opt,
                         std::unique_ptr<FrontendAction> action) {
  tooling::CompileCommand c;
  c.Directory = cmd.directory.empty() ? fs::current_path().string() : cmd.directory;
  c.Filename = cmd.file;
  c.CommandLine = tool_args(cmd, opt);
  SingleDb db(c);
  tooling::ClangTool tool(db, {cmd.file});
  for (const auto &[path, text] : opt.virtual_files)
    tool.mapVirtualFile(path, text);
  SilentCounter silent;
  if (opt.quiet)
    tool.setDiagnosticConsumer(&silent);
  OneActionFactory factory(std::move(action));
  static std::once_flag enabled;
  std::call_once(enabled, [] { llvm::CrashRecoveryContext::Enable(); });
  // Clang itself parses deeply nested code with 8 MiB; generated code nests deeper.
  constexpr unsigned kStackBytes = 64u << 20;
  const bool crash = planted_crash(c.Filename);
  int rc = 1;
  llvm::CrashRecoveryContext crc;
  const bool finished = crc.RunSafelyOnThread(
      [&] {
        if (crash)
          std::raise(SIGSEGV);
        rc = tool.run(&factory);
      },
      kStackBytes);
  if (!finished)
    return {ActionOutcome::Status::crashed, crash_reason(crc.RetCode)};
  if (rc != 0)
    return {ActionOutcome::Status::errors, "does not parse"};
  return {};
}

std::string usr_of(const Decl *d) {
  SmallString<128> buf;
  if (index::generateUSRForDecl(d, buf))
    return "";
  return std::string(buf.str());
}

const FunctionDecl *canonical_fn(const FunctionDecl *fd) {
  for (int guard = 0; guard < 16; ++guard) {
    const FunctionDecl *p = fd->getTemplateInstantiationPattern();
    if (!p || p == fd)
      break;
    fd = p;
  }
  return fd;
}

bool is_lambda_operator(const FunctionDecl *fd) {
  const auto *md = dyn_cast<CXXMethodDecl>(fd);
  return md && md->getParent()->isLambda() && md->getOverloadedOperator() == OO_Call;
}

std::string display_name(const FunctionDecl *fd, const SourceManager &sm) {
  if (is_lambda_operator(fd)) {
    const DeclContext *dc = cast<CXXMethodDecl>(fd)->getParent()->getDeclContext();
    std::string outer = "<global>";
    for (; dc; dc = dc->getParent())
      if (const auto *f = dyn_cast<FunctionDecl>(dc)) {
        outer = display_name(f, sm);
        break;
      }
    SourceLocation l = sm.getExpansionLoc(fd->getBeginLoc());
    return outer + "::lambda@" + std::to_string(sm.getExpansionLineNumber(l)) + ":" +
           std::to_string(sm.getExpansionColumnNumber(l));
  }
  return fd->getQualifiedNameAsString();
}

const std::string &PathCache::path(SourceLocation loc) {
  if (loc.isInvalid())
    return empty_;
  FileID id = sm_.getFileID(sm_.getExpansionLoc(loc));
  auto it = cache_.find(id.getHashValue());
  if (it != cache_.end())
    return it->second;
  std::string p;
  if (auto fe = sm_.getFileEntryRefForID(id))
    p = normal_path(std::string(fe->getName()), cwd_);
  return cache_.emplace(id.getHashValue(), std::move(p)).first->second;
}

bool vprof_header(const SourceManager &sm, SourceLocation loc) {
  loc = sm.getExpansionLoc(loc);
  if (loc.isInvalid())
    return false;
  auto fe = sm.getFileEntryRefForID(sm.getFileID(loc));
  if (!fe)
    return false;
  StringRef n = fe->getName();
  return n.ends_with("vprof/vprof.h") || n.ends_with("vprof/vprof.hpp") ||
         n.ends_with("vprof/probe.h") || n.ends_with("vprof/trace_format.h");
}

SourceLocation site_loc(const Expr *call) {
  if (const auto *mc = dyn_cast<CXXMemberCallExpr>(call)) {
    if (const auto *me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens()))
      if (me->getMemberLoc().isValid())
        return me->getMemberLoc();
  }
  if (const auto *oc = dyn_cast<CXXOperatorCallExpr>(call))
    if (oc->getOperatorLoc().isValid())
      return oc->getOperatorLoc();
  // In a template pattern a member call on a dependent object is a plain CallExpr whose
  // callee names the member; its instantiations are CXXMemberCallExprs. Both must give
  // the same position (the scan walks instantiations, the rewriter the pattern).
  if (const auto *ce = dyn_cast<CallExpr>(call)) {
    const Expr *c = ce->getCallee()->IgnoreParens();
    if (const auto *dm = dyn_cast<CXXDependentScopeMemberExpr>(c);
        dm && dm->getMemberLoc().isValid())
      return dm->getMemberLoc();
    if (const auto *um = dyn_cast<UnresolvedMemberExpr>(c); um && um->getMemberLoc().isValid())
      return um->getMemberLoc();
    if (const auto *me = dyn_cast<MemberExpr>(c);
        me && me->getMemberLoc().isValid() && isa<CXXMethodDecl>(me->getMemberDecl()))
      return me->getMemberLoc();
  }
  if (const auto *ce = dyn_cast<CallExpr>(call))
    if (ce->getRParenLoc().isValid())
      return ce->getRParenLoc();
  return call->getBeginLoc();
}

} // namespace detail
} // namespace vprof::instr
