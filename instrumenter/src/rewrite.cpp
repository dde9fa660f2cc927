// rewrite: instruments the main file of one translation unit per a plan — a body probe
// in every planned function and a call-site probe around every safe call inside it —
// as tooling::Replacements, with site ids from the workspace `sites` table.
#include "internal.hpp"
#include "vprof/workspace_scan.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/QualTypeNames.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/Builtins.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/Core/Replacement.h>
#include <llvm/ADT/StringSet.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace vprof::instr {
namespace {

using namespace clang;
using detail::usr_of;

struct FnRef {
  std::string usr, name, file;
  unsigned line = 0;
};

struct Site {
  bool body = false;
  unsigned begin = 0, end = 0; // call: [begin, end) of the call text; body: insertion offset
  unsigned line = 0, col = 0;  // identifying position
  std::size_t fn = 0;          // index into State::fns
  std::string callee_usr, callee_name;
  bool dependent = false;     // a template's unresolved call: callee taken from the scan's edge
  bool stmt_expr = false;     // C++: the statement-expression form (no lambda can capture)
  bool decltype_text = false; // C++11: the lambda's return type is decltype(<call text>)
  std::string return_type;    // C++11: ... or this type, spelled out (decltype(<call>))
  bool cast_void = false;     // ... with the call cast to void (its value is discarded)
  std::string captures;       // lambda form: extra init-captures (", &b = b") for bindings
  bool guard = false; // C++: a probe object that ends with the full-expression (temporaries)
  std::int64_t id = 0;
};

// Everything one rewrite collects before it touches the database.
struct State {
  std::unordered_map<std::string, std::int64_t> planned; // usr -> function id
  // A final plan (`vprof loop`'s final plan, plans.final = 1): direct calls of the
  // program's own functions are not timed (a dropped callee's time stays in the caller's
  // body, a planned one's body probe times it); calls of outside functions and virtual
  // calls still are — those the final plan lists (final_sites: the calls whose places
  // carried variance), by their position in the main file.
  bool final_plan = false;
  std::unordered_set<std::string> dropped; // usrs of defined functions not in a final plan
  std::set<std::pair<unsigned, unsigned>> final_sites; // (line, col)
  std::vector<FnRef> fns;
  std::vector<Site> sites;
  std::vector<Diagnostic> skipped;
  std::string main_path;    // absolute path (sites.file)
  std::string spelled_path; // as the compiler saw it (#line)
  std::string code;         // the main file's text
  // Where `#include <vprof/probe.h>` goes: the start of the line of the first top-level
  // declaration that holds an instrumented function, so that feature macros defined
  // above it (_GNU_SOURCE) keep their effect on the user's own includes.
  unsigned include_at = ~0u;
  unsigned include_line = 1; // presumed line there (honours the user's #line)
  std::string include_file;  // presumed file name there
  bool cplusplus = false;
  bool quiet = false;
};

void report(State &st, const SourceManager &sm, SourceLocation loc, std::string reason,
            Diagnostic::Target target, std::string subject) {
  unsigned line = loc.isValid() ? sm.getExpansionLineNumber(loc) : 0;
  if (!st.quiet)
    std::cerr << st.main_path << ":" << line << ": vprof: not instrumented: " << reason << "\n";
  st.skipped.push_back({st.main_path, line, std::move(reason), target, std::move(subject)});
}

// Does the subtree of a call contain something that makes the probe unsafe?
struct SubtreeFacts : RecursiveASTVisitor<SubtreeFacts> {
  bool coawait = false, binding = false, temporary = false, vla = false;
  bool bitfield_binding = false;
  bool lambda = false; // a lambda expression in the call (C++11: not in decltype)
  std::vector<const BindingDecl *> bindings; // named structured bindings, in order

  bool shouldVisitImplicitCode() const { return false; }
  bool TraverseLambdaExpr(LambdaExpr *) { return lambda = true; }
  bool VisitCoawaitExpr(CoawaitExpr *) { return coawait = true; }
  bool VisitCoyieldExpr(CoyieldExpr *) { return coawait = true; }
  bool VisitDependentCoawaitExpr(DependentCoawaitExpr *) { return coawait = true; }
  bool VisitDeclRefExpr(DeclRefExpr *e) {
    if (const auto *bd = dyn_cast<BindingDecl>(e->getDecl())) {
      binding = true;
      if (std::find(bindings.begin(), bindings.end(), bd) == bindings.end())
        bindings.push_back(bd);
      if (const auto *me = dyn_cast_or_null<MemberExpr>(bd->getBinding()))
        if (const auto *fd = dyn_cast<FieldDecl>(me->getMemberDecl()); fd && fd->isBitField())
          bitfield_binding = true;
    }
    if (const auto *vd = dyn_cast<VarDecl>(e->getDecl()))
      if (vd->getType()->isVariablyModifiedType())
        vla = true;
    return true;
  }
  bool VisitMaterializeTemporaryExpr(MaterializeTemporaryExpr *) { return temporary = true; }
  bool VisitCXXBindTemporaryExpr(CXXBindTemporaryExpr *) { return temporary = true; }
  bool VisitCompoundLiteralExpr(CompoundLiteralExpr *) { return temporary = true; }
};

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

// Walks one planned function's body and records its call sites.
class CallCollector : public RecursiveASTVisitor<CallCollector> {
  using Base = RecursiveASTVisitor<CallCollector>;

public:
  CallCollector(ASTContext &ctx, State &st, std::size_t fn,
                std::set<std::pair<unsigned, unsigned>> &seen)
      : ctx_(ctx), sm_(ctx.getSourceManager()), st_(st), fn_(fn), seen_(seen) {}

  bool shouldVisitImplicitCode() const { return false; }
  bool shouldVisitTemplateInstantiations() const { return false; }

  // Lambdas are instrumented as functions of their own (PlanVisitor).
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }

  bool TraverseDecl(Decl *d) {
    if (!d)
      return true;
    if (auto *vd = dyn_cast<VarDecl>(d)) {
      bool konst = vd->isConstexpr() || vd->hasAttr<ConstInitAttr>();
      return guarded(konst ? "initializer of a constexpr/constinit variable" : nullptr,
                     [&] { return Base::TraverseDecl(d); });
    }
    if (isa<StaticAssertDecl>(d))
      return guarded("static_assert", [&] { return Base::TraverseDecl(d); });
    if (isa<BindingDecl>(d))
      return Base::TraverseDecl(d);
    return true; // local classes and prototypes: not this function's code
  }

  bool TraverseTypeLoc(TypeLoc tl) {
    return guarded("inside a type (decltype, typeof, template argument, array bound)",
                   [&] { return Base::TraverseTypeLoc(tl); });
  }
  bool TraverseUnaryExprOrTypeTraitExpr(UnaryExprOrTypeTraitExpr *e) {
    return guarded("unevaluated operand (sizeof/alignof)",
                   [&] { return Base::TraverseUnaryExprOrTypeTraitExpr(e); });
  }
  bool TraverseCXXTypeidExpr(CXXTypeidExpr *e) {
    return guarded("typeid operand", [&] { return Base::TraverseCXXTypeidExpr(e); });
  }
  bool TraverseCXXNoexceptExpr(CXXNoexceptExpr *e) {
    return guarded("noexcept operator operand", [&] { return Base::TraverseCXXNoexceptExpr(e); });
  }
  bool TraverseGenericSelectionExpr(GenericSelectionExpr *e) {
    return guarded("_Generic selection", [&] { return Base::TraverseGenericSelectionExpr(e); });
  }
  bool TraverseConstantExpr(ConstantExpr *e) {
    return guarded("constant-evaluated context", [&] { return Base::TraverseConstantExpr(e); });
  }
  bool TraverseRequiresExpr(RequiresExpr *e) {
    return guarded("requires-expression", [&] { return Base::TraverseRequiresExpr(e); });
  }
  bool TraversePackExpansionExpr(PackExpansionExpr *e) {
    return guarded("inside a pack expansion", [&] { return Base::TraversePackExpansionExpr(e); });
  }
  bool TraverseCXXFoldExpr(CXXFoldExpr *e) {
    return guarded("inside a fold expression", [&] { return Base::TraverseCXXFoldExpr(e); });
  }
  bool TraverseGCCAsmStmt(GCCAsmStmt *s) {
    return guarded("asm operand", [&] { return Base::TraverseGCCAsmStmt(s); });
  }
  bool TraverseCaseStmt(CaseStmt *s) {
    bool ok = guarded("case label (constant expression)",
                      [&] { return TraverseStmt(s->getLHS()) && TraverseStmt(s->getRHS()); });
    return ok && TraverseStmt(s->getSubStmt());
  }
  bool TraverseIfStmt(IfStmt *s) {
    if (!s->isConstexpr())
      return Base::TraverseIfStmt(s);
    bool ok = TraverseStmt(s->getInit()) &&
              guarded("if constexpr condition", [&] { return TraverseStmt(s->getCond()); });
    return ok && TraverseStmt(s->getThen()) && TraverseStmt(s->getElse());
  }

  bool VisitCallExpr(CallExpr *ce) {
    handle(ce, ce->getDirectCallee());
    return true;
  }
  bool VisitCXXTemporaryObjectExpr(CXXTemporaryObjectExpr *e) {
    const CXXConstructorDecl *ctor = e->getConstructor();
    if (ctor && ctor->isUserProvided() &&
        !sm_.isInSystemHeader(sm_.getExpansionLoc(ctor->getLocation())))
      handle(e, ctor);
    return true;
  }

private:
  // decltype(<call>) spelled as a type: the call's type, `&` for an lvalue, `&&` for an
  // xvalue, fully qualified. C++11 probes use it instead of repeating the call's text in
  // decltype, where gcc does not accept the implicit `this` of a member call. Empty when
  // the type cannot be spelled here (dependent, unnamed, local to a lambda): then the
  // call's text is repeated.
  std::string spelled_call_type(const Expr *e) const {
    QualType t = e->getType();
    if (t.isNull() || t->isDependentType() || t->isUndeducedType())
      return "";
    if (const TagDecl *tag = t->getAsTagDecl();
        tag && (!tag->getIdentifier() || tag->getDeclContext()->isFunctionOrMethod()))
      return "";
    PrintingPolicy pp(ctx_.getLangOpts());
    pp.SuppressTagKeyword = true;
    std::string out = TypeName::getFullyQualifiedName(t, ctx_, pp, /*WithGlobalNsPrefix=*/true);
    if (e->isLValue())
      out += " &";
    else if (e->isXValue())
      out += " &&";
    return out;
  }

  bool defined_in_system_header(const FunctionDecl *callee) const {
    const FunctionDecl *def = nullptr;
    if (!callee->isDefined(def))
      def = callee->getTemplateInstantiationPattern();
    if (!def && callee->isConstexpr())
      def = callee; // constexpr functions are inline; the declaration is the definition's header
    return def && sm_.isInSystemHeader(sm_.getExpansionLoc(def->getLocation()));
  }

  // C library calls not worth a call-site probe (docs/instrumenter.md):
  // - the clock reads, a vDSO call of ~20 ns that never blocks: a probe pair costs more
  //   than the call, and spin loops on the clock would fill the trace;
  // - the synchronization calls the runtime interposes: their blocking part is recorded
  //   as a wait (with its wake-up edge) under the caller, the rest is a few ns.
  bool libc_untimed(const FunctionDecl *callee) const {
    const IdentifierInfo *ii = callee->getIdentifier();
    if (!ii || !callee->getDeclContext()->getRedeclContext()->isTranslationUnit() ||
        !sm_.isInSystemHeader(sm_.getExpansionLoc(callee->getLocation())))
      return false;
    static const llvm::StringSet<> names = {"clock_gettime",
                                            "gettimeofday",
                                            "time",
                                            "clock",
                                            "pthread_mutex_lock",
                                            "pthread_mutex_trylock",
                                            "pthread_mutex_timedlock",
                                            "pthread_mutex_clocklock",
                                            "pthread_mutex_unlock",
                                            "pthread_cond_wait",
                                            "pthread_cond_timedwait",
                                            "pthread_cond_clockwait",
                                            "pthread_cond_signal",
                                            "pthread_cond_broadcast",
                                            "pthread_rwlock_rdlock",
                                            "pthread_rwlock_wrlock",
                                            "pthread_rwlock_tryrdlock",
                                            "pthread_rwlock_trywrlock",
                                            "pthread_rwlock_timedrdlock",
                                            "pthread_rwlock_timedwrlock",
                                            "pthread_rwlock_clockrdlock",
                                            "pthread_rwlock_clockwrlock",
                                            "pthread_rwlock_unlock",
                                            "sem_wait",
                                            "sem_trywait",
                                            "sem_timedwait",
                                            "sem_clockwait",
                                            "sem_post"};
    return names.contains(ii->getName());
  }

  template <class F> bool guarded(const char *reason, F &&f) {
    if (reason)
      refuse_.push_back(reason);
    bool ok = f();
    if (reason)
      refuse_.pop_back();
    return ok;
  }

  void handle(Expr *e, const FunctionDecl *callee) {
    bool unprobed_callee = false; // final plan: a planned callee without a body probe
    // Not calls to time: compiler builtins, implicit conversions, our own runtime.
    if (callee) {
      if (unsigned id = callee->getBuiltinID())
        if (!ctx_.BuiltinInfo.isPredefinedLibFunction(id))
          return;
      if (const IdentifierInfo *ii = callee->getIdentifier()) {
        StringRef n = ii->getName();
        if (n.starts_with("__builtin") || n.starts_with("vprof_") || n.starts_with("__atomic") ||
            n.starts_with("__sync"))
          return;
      }
      if (isa<CXXConversionDecl>(callee))
        return;
      // A compiler-generated (or defaulted) copy or move assignment: a member-wise copy of
      // a few ns. Timing it would name `s = db->Write(...)` after Status::operator=, the
      // operator around the call, instead of the call (which keeps its own probe).
      if (const auto *md = dyn_cast<CXXMethodDecl>(callee))
        if ((md->isCopyAssignmentOperator() || md->isMoveAssignmentOperator()) &&
            (md->isImplicit() || md->isDefaulted()))
          return;
      // vprof's own API (vprof::interval::end(), guards): timing it would straddle the
      // interval's end.
      if (detail::vprof_header(sm_, callee->getLocation()))
        return;
      // Library code compiled into this translation unit from a system header (std::
      // templates and inline functions: container operations, std::move, size()): a probe
      // pair would cost more than most such calls, and their time stays in the caller's
      // body. Blocking inside them (std::mutex::lock, a condition variable's predicate
      // loop) still appears as a wait: the runtime interposes the pthread calls they make.
      // Out-of-line library functions (fsync, malloc, pthread_*) have no body here and
      // keep their call-site probes.
      if (defined_in_system_header(callee) || libc_untimed(callee))
        return;
      // In a final plan the call of a program function is not timed either when the plan
      // dropped the callee (its time stays in the caller's body) or when the callee is
      // planned (its body probe times it; the call site would only repeat it, with the
      // call's position, which the final report's places do not use). Virtual calls
      // keep their probe: they name the dispatch, not one function.
      // A planned callee whose body the user keeps probe-free (naked,
      // no_instrument_function) has no body probe: its call site is its only timing.
      if (st_.final_plan) {
        std::string u = usr_of(callee);
        const auto *m = dyn_cast<CXXMethodDecl>(callee);
        unprobed_callee = st_.planned.count(u) && (callee->hasAttr<NoInstrumentFunctionAttr>() ||
                                                   callee->hasAttr<NakedAttr>());
        if ((st_.dropped.count(u) || st_.planned.count(u)) && (!m || !m->isVirtual()) &&
            !unprobed_callee)
          return;
      }
    }
    if (auto *oc = dyn_cast<CXXOperatorCallExpr>(e)) {
      if (!callee || oc->getOperator() == OO_Arrow)
        return; // dependent (maybe builtin) operators; `->` has no wrappable text
    }
    if (auto *ce = dyn_cast<CallExpr>(e))
      if (isa<CXXPseudoDestructorExpr>(ce->getCallee()->IgnoreParens()))
        return;

    SourceLocation at = e->getBeginLoc();
    label_ = callee_label(e, callee);
    SourceLocation pos = sm_.getExpansionLoc(detail::site_loc(e));
    const unsigned line = sm_.getExpansionLineNumber(pos), col = sm_.getExpansionColumnNumber(pos);
    if (st_.final_plan && !unprobed_callee && !st_.final_sites.count({line, col}))
      return; // a call whose place carried nothing: no probe in a final plan (nor a refusal)
    if (!refuse_.empty())
      return skip(at, refuse_.back());
    if (callee) {
      if (isa<CXXDestructorDecl>(callee))
        return skip(at, "explicit destructor call");
      if (callee->isNoReturn())
        return skip(at, "callee does not return (probe exit would never run)");
      if (returns_twice(callee))
        return skip(at, "callee returns twice (setjmp-like)");
      if (forks(callee))
        return skip(at, "callee returns in two processes (fork): the child would record an "
                        "exit without its entry");
      if (callee->isConsteval())
        return skip(at, "consteval callee");
    }
    SourceLocation b = e->getBeginLoc(), en = e->getEndLoc();
    if (b.isInvalid() || en.isInvalid())
      return;
    // What is wrapped: the call's text, or — for a call written through macros — the
    // macro invocation in the file that expands to exactly the call (`w`, the call or the
    // parentheses and casts around it there), whose value and type the probe keeps.
    const Expr *w = e;
    unsigned bo = 0, eo = 0;
    if (b.isMacroID() || en.isMacroID()) {
      detail::MacroCallSpan span = detail::macro_call_span(ctx_, e);
      if (!span.expr)
        return span.refusal ? skip(at, span.refusal) : void();
      w = span.expr;
      bo = span.begin;
      eo = span.end;
    } else {
      if (!sm_.isWrittenInMainFile(b) || !sm_.isWrittenInMainFile(en))
        return;
      SourceLocation after = Lexer::getLocForEndOfToken(en, 0, sm_, ctx_.getLangOpts());
      if (after.isInvalid())
        return skip(at, "cannot find the end of the call");
      bo = sm_.getFileOffset(b);
      eo = sm_.getFileOffset(after);
      if (eo <= bo)
        return skip(at, "empty call range");
    }

    SubtreeFacts facts;
    for (const Stmt *child : w->children())
      facts.TraverseStmt(const_cast<Stmt *>(child));
    if (facts.coawait)
      return skip(at, "co_await/co_yield in the call");
    const LangOptions &lo = ctx_.getLangOpts();
    // A lambda cannot capture structured bindings (before C++20) or variable-length
    // arrays. A call whose value is void or a scalar prvalue loses nothing in the GNU
    // statement-expression form, which needs no capture; other calls are refused.
    bool stmt_expr = false;
    std::string captures; // C++17 init-captures of structured bindings
    const char *no_capture = nullptr;
    if (lo.CPlusPlus && !lo.CPlusPlus20 && facts.binding)
      no_capture = "structured binding in the call (a C++17 lambda cannot capture it)";
    else if (lo.CPlusPlus && facts.vla)
      no_capture = "variable-length array in the call (a lambda cannot capture it)";
    bool cast_void = false, guard = false;
    if (no_capture) {
      QualType t = w->getType();
      bool scalar =
          w->isPRValue() && !t->isDependentType() && (t->isVoidType() || t->isScalarType());
      // A discarded value of another type: cast to void inside, so nothing is copied.
      cast_void = !scalar && discarded(w);
      if (scalar || cast_void) {
        stmt_expr = true;
      } else if (!facts.vla && !facts.bitfield_binding) {
        // C++17: a lambda may not capture a binding, but an init-capture may refer to it
        // (`[&, &b = b]`); not for bit-fields (no reference can bind to one).
        for (const BindingDecl *bd : facts.bindings) {
          std::string n = bd->getName().str();
          captures += ", &" + n + " = " + n;
        }
      } else {
        return skip(at, std::string(no_capture) +
                            ", and its value, neither void nor a scalar, is used");
      }
    }
    if (facts.temporary) {
      QualType t = w->getType();
      bool handle_like = w->isGLValue() || t->isPointerType() || t->isRecordType() ||
                         t->isMemberPointerType() || t->isDependentType() ||
                         t->isBlockPointerType();
      // A discarded result cannot dangle (`v.emplace_back(x, n.size());`). Nor can one
      // timed by a probe object that lives as long as the temporaries — to the end of the
      // full-expression: exact when nothing but a conversion or an assignment follows the
      // call there (`status = log_->AddRecord(Slice(...))`).
      if (handle_like && !discarded(w)) {
        if (!lo.CPlusPlus || !ends_full_expression(w))
          return skip(at, "returns a reference, pointer or object while an argument is a "
                          "temporary (its lifetime would end inside the probe), and more "
                          "than an assignment follows it in its full-expression");
        guard = true;
      }
    }
    if (guard) {
      stmt_expr = cast_void = false;
      captures.clear();
    }
    // C++11 has no decltype(auto): the lambda's return type repeats the call's text in
    // decltype(...), an unevaluated operand, where a lambda may not appear before C++20.
    const bool decltype_text = lo.CPlusPlus && !lo.CPlusPlus14 && !stmt_expr && !guard;
    if (decltype_text && facts.lambda)
      return skip(at, "a lambda in the call (C++11: the probe's return type repeats the call "
                      "in decltype, where a lambda may not appear)");
    if (!seen_.insert({bo, eo}).second)
      return;

    Site s;
    s.begin = bo;
    s.end = eo;
    s.fn = fn_;
    s.stmt_expr = stmt_expr;
    s.guard = guard;
    s.decltype_text = decltype_text;
    if (decltype_text)
      s.return_type = spelled_call_type(w);
    s.cast_void = cast_void;
    s.captures = std::move(captures);
    s.line = line;
    s.col = col;
    if (callee) {
      s.callee_usr = usr_of(detail::canonical_fn(callee));
    } else if (auto *ce = dyn_cast<CallExpr>(e)) {
      const Expr *c = ce->getCallee()->IgnoreParenImpCasts();
      s.dependent = isa<CXXDependentScopeMemberExpr, UnresolvedMemberExpr, UnresolvedLookupExpr>(c);
    }
    s.callee_name = label_;
    st_.sites.push_back(std::move(s));
  }

  // The callee's name: qualified, or as spelled for calls through pointers and dependent
  // calls (`g_handlers[k]`, `b.get`; at most 80 characters).
  std::string callee_label(const Expr *e, const FunctionDecl *callee) const {
    if (callee)
      return detail::display_name(detail::canonical_fn(callee), sm_);
    const auto *ce = dyn_cast<CallExpr>(e);
    if (!ce)
      return "";
    SourceRange r = ce->getCallee()->getSourceRange();
    if (r.getBegin().isMacroID() || r.getEnd().isMacroID()) {
      // Through a macro: as spelled in its definition when both ends are written there,
      // else the invocation's text.
      SourceLocation b = sm_.getSpellingLoc(r.getBegin()), en = sm_.getSpellingLoc(r.getEnd());
      if (sm_.getFileID(b) == sm_.getFileID(en) && !sm_.isBeforeInTranslationUnit(en, b))
        r = SourceRange(b, en);
      else
        r = sm_.getExpansionRange(r).getAsRange();
    }
    std::string out = std::string(
        Lexer::getSourceText(CharSourceRange::getTokenRange(r), sm_, ctx_.getLangOpts()));
    if (out.size() > 80)
      out.resize(80);
    return out;
  }

  void skip(SourceLocation loc, const std::string &reason) {
    report(st_, sm_, loc, "call: " + reason, Diagnostic::Target::call, label_);
  }

  // True when the value of `e` is never used: an expression statement (also an
  // unbraced if/loop body, a for increment, the left of a comma, a cast to void), but
  // not the last statement of a GNU statement expression, whose value is its result.
  // Whether only conversions, a copy or an assignment of its value follow the call `e` in
  // its full-expression (what a probe object living to the full-expression's end may time).
  bool ends_full_expression(const Expr *e) {
    const Stmt *cur = e;
    for (int depth = 0; depth < 16; ++depth) {
      auto ps = ctx_.getParents(*cur);
      if (ps.size() != 1)
        return false;
      if (const auto *d = ps[0].template get<Decl>())
        return isa<VarDecl, FieldDecl>(d); // an initializer is a full-expression
      const Stmt *p = ps[0].template get<Stmt>();
      if (!p)
        return false;
      if (!isa<Expr>(p))
        return true; // a statement: the expression was a full-expression
      if (isa<ExprWithCleanups>(p))
        return true;
      bool through = isa<ParenExpr, ImplicitCastExpr, CXXBindTemporaryExpr,
                         MaterializeTemporaryExpr, CXXFunctionalCastExpr, CStyleCastExpr>(p);
      if (const auto *c = dyn_cast<CXXConstructExpr>(p))
        through = c->getNumArgs() == 1;
      if (const auto *b = dyn_cast<BinaryOperator>(p))
        through = b->getOpcode() == BO_Assign &&
                  b->getRHS()->IgnoreParenImpCasts() == cast<Expr>(cur)->IgnoreParenImpCasts();
      if (const auto *o = dyn_cast<CXXOperatorCallExpr>(p))
        through = o->getOperator() == OO_Equal && o->getNumArgs() == 2 && o->getArg(1) == cur;
      if (!through)
        return false;
      cur = p;
    }
    return false;
  }

  bool discarded(const Expr *e) {
    const Stmt *cur = e;
    for (int guard = 0; guard < 8; ++guard) {
      auto ps = ctx_.getParents(*cur);
      if (ps.size() != 1)
        return false;
      const Stmt *p = ps[0].template get<Stmt>();
      if (!p)
        return false;
      if (isa<ExprWithCleanups, ParenExpr, CXXBindTemporaryExpr>(p)) {
        cur = p;
        continue;
      }
      if (const auto *c = dyn_cast<CastExpr>(p))
        return c->getType()->isVoidType();
      if (const auto *cs = dyn_cast<CompoundStmt>(p)) {
        auto pp = ctx_.getParents(*cs);
        bool value = pp.size() == 1 && pp[0].template get<StmtExpr>() && cs->body_back() == cur;
        return !value;
      }
      if (const auto *f = dyn_cast<ForStmt>(p))
        return f->getInc() == cur || f->getBody() == cur;
      if (const auto *i = dyn_cast<IfStmt>(p))
        return i->getThen() == cur || i->getElse() == cur;
      if (const auto *w = dyn_cast<WhileStmt>(p))
        return w->getBody() == cur;
      if (const auto *d = dyn_cast<DoStmt>(p))
        return d->getBody() == cur;
      if (const auto *c = dyn_cast<CaseStmt>(p))
        return c->getSubStmt() == cur;
      if (isa<DefaultStmt, LabelStmt>(p))
        return true;
      if (const auto *b = dyn_cast<BinaryOperator>(p); b && b->getOpcode() == BO_Comma)
        return b->getLHS() == cur;
      return false;
    }
    return false;
  }

  ASTContext &ctx_;
  const SourceManager &sm_;
  State &st_;
  std::size_t fn_;
  std::set<std::pair<unsigned, unsigned>> &seen_;
  std::vector<const char *> refuse_;
  std::string label_; // the callee of the call being handled (refusals name it)
};

// Finds the planned functions (and lambdas inside them) defined in the main file.
class PlanVisitor : public RecursiveASTVisitor<PlanVisitor> {
public:
  PlanVisitor(ASTContext &ctx, State &st) : ctx_(ctx), sm_(ctx.getSourceManager()), st_(st) {}
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool shouldVisitImplicitCode() const { return false; }

  bool VisitVarDecl(VarDecl *vd) {
    if (vd->isConstexpr() && vd->getInit())
      if (auto *le = dyn_cast<LambdaExpr>(vd->getInit()->IgnoreImplicit()))
        constexpr_lambdas_.insert(le);
    return true;
  }

  bool VisitFunctionDecl(FunctionDecl *fd) {
    if (!fd->doesThisDeclarationHaveABody() || detail::is_lambda_operator(fd))
      return true;
    if (!in_main(fd->getLocation()))
      return true;
    std::string u = usr_of(fd);
    if (!st_.planned.count(u))
      return true;
    instrument(fd, u, nullptr);
    return true;
  }

  bool VisitLambdaExpr(LambdaExpr *le) {
    CXXMethodDecl *op = le->getCallOperator();
    if (!op || !in_main(le->getBeginLoc()))
      return true;
    std::string u = usr_of(op);
    bool planned = st_.planned.count(u) > 0;
    // A lambda is part of its enclosing function: planned with it.
    for (const DeclContext *dc = le->getLambdaClass()->getDeclContext(); dc && !planned;
         dc = dc->getParent()) {
      if (const auto *f = dyn_cast<FunctionDecl>(dc)) {
        planned = st_.planned.count(usr_of(f)) > 0;
        if (!detail::is_lambda_operator(f))
          break;
      }
    }
    if (!planned)
      return true;
    if (constexpr_lambdas_.count(le))
      return report(st_, sm_, le->getBeginLoc(), "lambda: initializes a constexpr variable",
                    Diagnostic::Target::function, detail::display_name(op, sm_)),
             true;
    instrument(op, u, le);
    return true;
  }

private:
  // Records the line start of the top-level declaration (namespace, extern "C", class,
  // template, function) that contains `fd` as a candidate include point.
  void note_top_level(const Decl *d) {
    while (d->getDeclContext() && !isa<TranslationUnitDecl>(d->getDeclContext()))
      d = cast<Decl>(d->getDeclContext());
    SourceLocation b = d->getBeginLoc();
    if (const auto *f = dyn_cast<FunctionDecl>(d); f && f->getDescribedFunctionTemplate())
      b = f->getDescribedFunctionTemplate()->getBeginLoc();
    else if (const auto *r = dyn_cast<CXXRecordDecl>(d); r && r->getDescribedClassTemplate())
      b = r->getDescribedClassTemplate()->getBeginLoc();
    else if (const auto *dd = dyn_cast<DeclaratorDecl>(d))
      b = dd->getOuterLocStart();
    else if (const auto *td = dyn_cast<TagDecl>(d))
      b = td->getOuterLocStart();
    b = sm_.getExpansionLoc(b);
    if (b.isInvalid() || !sm_.isWrittenInMainFile(b))
      return;
    unsigned off = sm_.getFileOffset(b);
    unsigned line = sm_.getLineNumber(sm_.getFileID(b), off);
    unsigned col = sm_.getColumnNumber(sm_.getFileID(b), off);
    unsigned at = off - (col - 1);
    if (at < st_.include_at) {
      st_.include_at = at;
      st_.include_line = line;
      PresumedLoc p = sm_.getPresumedLoc(b.getLocWithOffset(-static_cast<int>(col - 1)));
      if (p.isValid()) {
        st_.include_line = p.getLine();
        st_.include_file = p.getFilename();
      }
    }
  }

  bool in_main(SourceLocation loc) const {
    return loc.isValid() && sm_.isWrittenInMainFile(sm_.getExpansionLoc(loc));
  }

  void instrument(FunctionDecl *fd, const std::string &usr, LambdaExpr *le) {
    SourceLocation loc = fd->getLocation();
    std::string what = le ? "lambda" : "function " + fd->getQualifiedNameAsString();
    auto refuse = [&](std::string reason) {
      report(st_, sm_, loc, std::move(reason), Diagnostic::Target::function,
             detail::display_name(fd, sm_));
    };
    if (fd->isDefaulted() || fd->isDeleted())
      return refuse(what + ": = default / = delete");
    if (fd->isConsteval())
      return refuse(what + ": consteval");
    if (le) {
      // Implicitly constexpr lambdas are fine; one declared constexpr may be evaluated
      // at compile time, where a probe cannot run.
      SourceRange r(le->getIntroducerRange().getEnd(), le->getBody()->getBeginLoc());
      StringRef text =
          Lexer::getSourceText(CharSourceRange::getCharRange(r), sm_, ctx_.getLangOpts());
      if (text.contains("constexpr"))
        return refuse(what + ": declared constexpr");
    } else if (fd->isConstexpr()) {
      return refuse(what + ": constexpr (may run at compile time)");
    }
    if (fd->hasAttr<NakedAttr>() || fd->hasAttr<NoInstrumentFunctionAttr>())
      return refuse(what + ": naked or no_instrument_function");
    Stmt *body = fd->getBody();
    if (isa_and_nonnull<CoroutineBodyStmt>(body))
      return refuse(what + ": coroutine");
    CompoundStmt *cs = nullptr;
    if (auto *t = dyn_cast_or_null<CXXTryStmt>(body))
      cs = t->getTryBlock();
    else
      cs = dyn_cast_or_null<CompoundStmt>(body);
    if (!cs)
      return;
    SourceLocation lb = cs->getLBracLoc();
    if (lb.isInvalid() || lb.isMacroID() || !sm_.isWrittenInMainFile(lb))
      return refuse(what + ": body comes from a macro expansion");
    unsigned at = sm_.getFileOffset(lb) + 1;
    if (!bodies_.insert(at).second)
      return;
    FnRef ref;
    ref.usr = usr;
    ref.name = detail::display_name(fd, sm_);
    ref.file = st_.main_path;
    ref.line = sm_.getExpansionLineNumber(fd->getLocation());
    st_.fns.push_back(ref);
    std::size_t fi = st_.fns.size() - 1;
    Site s;
    s.body = true;
    s.begin = s.end = at;
    s.fn = fi;
    s.line = sm_.getExpansionLineNumber(lb);
    s.col = sm_.getExpansionColumnNumber(lb);
    st_.sites.push_back(s);
    note_top_level(fd);
    CallCollector cc(ctx_, st_, fi, seen_calls_);
    cc.TraverseStmt(body);
  }

  ASTContext &ctx_;
  const SourceManager &sm_;
  State &st_;
  std::unordered_set<const LambdaExpr *> constexpr_lambdas_;
  std::set<unsigned> bodies_;
  std::set<std::pair<unsigned, unsigned>> seen_calls_;
};

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
    PlanVisitor v(ctx, st_);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
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

// Turns the sites into one insertion per offset (nested calls share offsets: closing
// texts first, innermost first; then body probes; then opening texts, outermost first)
// and applies them.
std::string apply_edits(const State &st, std::string &err) {
  struct Ins {
    unsigned off;
    int order; // 0 close, 1 body, 2 open
    long rank; // within order
    std::string text;
  };
  std::vector<Ins> ins;
  for (const Site &s : st.sites) {
    std::string id = std::to_string(s.id);
    if (s.body) {
      ins.push_back({s.begin, 1, 0, " VPROF_PROBE_SCOPE(" + id + ");"});
      continue;
    }
    long extent = static_cast<long>(s.end - s.begin);
    if (s.guard) {
      ins.push_back({s.begin, 2, -extent, "((void)::vprof::rt::probe_scope{" + id + "}, "});
      ins.push_back({s.end, 0, extent, ")"});
      continue;
    }
    if (st.cplusplus && !s.stmt_expr)
      ins.push_back({s.begin, 2, -extent,
                     "::vprof::rt::call(" + id + ", [&" + s.captures + "]() -> " +
                         (!s.decltype_text ? std::string("decltype(auto)")
                          : !s.return_type.empty()
                              ? s.return_type
                              : "decltype(" + st.code.substr(s.begin, s.end - s.begin) + ")") +
                         " { return "});
    else
      ins.push_back(
          {s.begin, 2, -extent,
           "__extension__({ VPROF_PROBE_SCOPE(" + id + "); " + (s.cast_void ? "(void)(" : "")});
    if (s.cast_void) {
      ins.push_back({s.end, 0, extent, "); })"});
      continue;
    }
    ins.push_back({s.end, 0, extent, "; })"});
  }
  std::stable_sort(ins.begin(), ins.end(), [](const Ins &a, const Ins &b) {
    return std::tie(a.off, a.order, a.rank) < std::tie(b.off, b.order, b.rank);
  });
  tooling::Replacements repl;
  for (std::size_t i = 0; i < ins.size();) {
    std::string text;
    std::size_t j = i;
    for (; j < ins.size() && ins[j].off == ins[i].off; ++j)
      text += ins[j].text;
    if (auto e = repl.add(tooling::Replacement(st.main_path, ins[i].off, 0, text))) {
      err = llvm::toString(std::move(e));
      return "";
    }
    i = j;
  }
  auto out = tooling::applyAllReplacements(st.code, repl);
  if (!out) {
    err = llvm::toString(out.takeError());
    return "";
  }
  return *out;
}

} // namespace

RewriteResult rewrite(ws::Database &db, const CompileCommand &cmd, int iteration,
                      const ParseOptions &opt) {
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
    for (const auto &f : ws::planned_functions(db, iteration))
      st.planned[f.usr] = f.id;
    st.final_plan = ws::is_final_plan(db, iteration);
    if (st.final_plan) {
      for (auto &usr : ws::unplanned_usrs(db, iteration))
        st.dropped.insert(std::move(usr));
      for (const auto &p : ws::final_site_positions(db, iteration))
        if (p.file == st.main_path)
          st.final_sites.insert({static_cast<unsigned>(p.line), static_cast<unsigned>(p.col)});
    }
  } catch (const std::exception &e) {
    res.error = e.what();
    return res;
  }
  CompileCommand c = cmd;
  c.file = st.main_path;
  if (!detail::run_action(c, opt, std::make_unique<RewriteAction>(st))) {
    res.error = st.main_path + ": does not parse";
    return res;
  }
  res.skipped = st.skipped;
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
  std::string body = apply_edits(st, err);
  if (!err.empty()) {
    res.error = st.main_path + ": " + err;
    return res;
  }
  // The probe header goes before the first declaration that holds a probe (see
  // State::include_at); at the very top if some edit would precede it.
  unsigned at = st.include_at == ~0u ? 0 : st.include_at;
  for (const Site &s : st.sites)
    if (s.begin < at)
      at = 0;
  std::string path =
      detail::c_string_literal(st.spelled_path.empty() ? st.main_path : st.spelled_path);
  std::string probe =
      std::string(st.cplusplus ? "#include <cstdint>\n" : "") + "#include <vprof/probe.h>\n";
  std::string out;
  if (at == 0) {
    out = probe + "#line 1 " + path + "\n" + body;
  } else {
    std::string there = st.include_file.empty() ? path : detail::c_string_literal(st.include_file);
    out = "#line 1 " + path + "\n" + body.substr(0, at) + probe + "#line " +
          std::to_string(st.include_line) + " " + there + "\n" + body.substr(at);
  }
  for (const Site &s : st.sites)
    (s.body ? res.body_sites : res.call_sites)++;
  res.output = std::move(out);
  res.ok = true;
  res.changed = true;
  return res;
}

} // namespace vprof::instr
