// untimed_calls: the calls the rewriter leaves without a call-site probe — silently (too
// cheap to time, or already recorded another way) or with a refusal (the probe's exit
// would not run exactly once).
#include "rewriter.hpp"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/Basic/Builtins.h>
#include <llvm/ADT/StringSet.h>

#include <set>
#include <string>

namespace vprof::instr::rewriting {
namespace {

using namespace clang;

bool returns_twice(const FunctionDecl *fd) {
  if (fd->hasAttr<ReturnsTwiceAttr>())
    return true;
  static const std::set<std::string> names = {"setjmp", "_setjmp",    "sigsetjmp", "__sigsetjmp",
                                              "vfork",  "getcontext", "savectx"};
  const IdentifierInfo *ii = fd->getIdentifier();
  return ii && names.count(std::string(ii->getName()));
}

// fork() returns in two processes: a call-site probe's ENTER is in the parent's stream and
// the child would record the EXIT alone ("probe exits without an open frame").
bool forks(const FunctionDecl *fd) {
  static const std::set<std::string> names = {"fork", "_Fork", "__fork", "__libc_fork"};
  const IdentifierInfo *ii = fd->getIdentifier();
  return ii && fd->getDeclContext()->getRedeclContext()->isTranslationUnit() &&
         names.count(std::string(ii->getName()));
}

bool defined_in_system_header(const SourceManager &sm, const FunctionDecl *callee) {
  const FunctionDecl *def = nullptr;
  if (!callee->isDefined(def))
    def = callee->getTemplateInstantiationPattern();
  if (!def && callee->isConstexpr())
    def = callee; // constexpr functions are inline; the declaration is the definition's header
  return def && sm.isInSystemHeader(sm.getExpansionLoc(def->getLocation()));
}

// C library calls not worth a call-site probe (docs/instrumenter.md):
// - the clock reads, a vDSO call of ~20 ns that never blocks: a probe pair costs more
//   than the call, and spin loops on the clock would fill the trace;
// - the synchronization calls the runtime interposes (the one list,
//   <vprof/sync_functions.def>): their blocking part is recorded as a wait (with its
//   wake-up edge) under the caller, the rest is a few ns.
bool libc_untimed(const SourceManager &sm, const FunctionDecl *callee) {
  const IdentifierInfo *ii = callee->getIdentifier();
  if (!ii || !callee->getDeclContext()->getRedeclContext()->isTranslationUnit() ||
      !sm.isInSystemHeader(sm.getExpansionLoc(callee->getLocation())))
    return false;
  static const llvm::StringSet<> names = {
      "clock_gettime",
      "gettimeofday",
      "time",
      "clock",
#define VPROF_SYNC_FUNCTION(shape, name, glibc_version) #name,
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION
  };
  return names.contains(ii->getName());
}

} // namespace

bool untimed_callee(const ASTContext &ctx, const FunctionDecl *callee) {
  const SourceManager &sm = ctx.getSourceManager();
  // Not calls to time: compiler builtins, implicit conversions, our own runtime.
  if (unsigned id = callee->getBuiltinID())
    if (!ctx.BuiltinInfo.isPredefinedLibFunction(id))
      return true;
  if (const IdentifierInfo *ii = callee->getIdentifier()) {
    StringRef n = ii->getName();
    if (n.starts_with("__builtin") || n.starts_with("vprof_") || n.starts_with("__atomic") ||
        n.starts_with("__sync"))
      return true;
  }
  if (isa<CXXConversionDecl>(callee))
    return true;
  // A compiler-generated (or defaulted) copy or move assignment: a member-wise copy of
  // a few ns. Timing it would name `s = db->Write(...)` after Status::operator=, the
  // operator around the call, instead of the call (which keeps its own probe).
  if (const auto *md = dyn_cast<CXXMethodDecl>(callee))
    if ((md->isCopyAssignmentOperator() || md->isMoveAssignmentOperator()) &&
        (md->isImplicit() || md->isDefaulted()))
      return true;
  // vprof's own API (vprof::interval::end(), guards): timing it would straddle the
  // interval's end.
  if (detail::vprof_header(sm, callee->getLocation()))
    return true;
  // Library code compiled into this translation unit from a system header (std::
  // templates and inline functions: container operations, std::move, size()): a probe
  // pair would cost more than most such calls, and their time stays in the caller's
  // body. Blocking inside them (std::mutex::lock, a condition variable's predicate
  // loop) still appears as a wait: the runtime interposes the pthread calls they make.
  // Out-of-line library functions (fsync, malloc, pthread_*) have no body here and
  // keep their call-site probes.
  return defined_in_system_header(sm, callee) || libc_untimed(sm, callee);
}

const char *refused_callee(const FunctionDecl *callee) {
  if (isa<CXXDestructorDecl>(callee))
    return "explicit destructor call";
  if (callee->isNoReturn())
    return "callee does not return (probe exit would never run)";
  if (returns_twice(callee))
    return "callee returns twice (setjmp-like)";
  if (forks(callee))
    return "callee returns in two processes (fork): the child would record an "
           "exit without its entry";
  if (callee->isConsteval())
    return "consteval callee";
  return nullptr;
}

} // namespace vprof::instr::rewriting
