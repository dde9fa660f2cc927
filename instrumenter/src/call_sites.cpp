// call_sites: walks one planned function's body and records a call-site probe for every
// call that can be timed — refused, with the reason, inside contexts where a probe cannot
// run (unevaluated operands, constant expressions, types) — with the probe form it takes.
#include "rewriter.hpp"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>

namespace vprof::instr::rewriting {
namespace {

using namespace clang;
using detail::usr_of;

// Walks one planned function's body and records its call sites.
class CallCollector : public RecursiveASTVisitor<CallCollector> {
  using Base = RecursiveASTVisitor<CallCollector>;

public:
  CallCollector(ASTContext &ctx, State &st, std::size_t fn,
                std::set<std::pair<unsigned, unsigned>> &seen)
      : ctx_(ctx), sm_(ctx.getSourceManager()), st_(st), fn_(fn), seen_(seen) {}

  bool shouldVisitImplicitCode() const { return false; }
  bool shouldVisitTemplateInstantiations() const { return false; }

  // Lambdas are instrumented as functions of their own (plan_functions.cpp).
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
    if (callee) {
      if (untimed_callee(ctx_, callee))
        return;
      // In a final plan the call of a program function is not timed either when the plan
      // dropped the callee (its time stays in the caller's body) or when the callee is
      // planned and has its body probe (final_plan.cpp).
      if (st_.final_plan && final_plan_skips_callee(st_, callee, &unprobed_callee))
        return;
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
    if (st_.final_plan && !unprobed_callee && !final_plan_lists_call(st_, line, col))
      return; // a call whose place carried nothing: no probe in a final plan (nor a refusal)
    if (!refuse_.empty())
      return skip(at, refuse_.back());
    if (callee)
      if (const char *why = refused_callee(callee))
        return skip(at, why);
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

    FormChoice choice = choose_probe_form(ctx_, w);
    if (!choice.refusal.empty())
      return skip(at, choice.refusal);
    if (!seen_.insert({bo, eo}).second)
      return;

    Site s;
    s.begin = bo;
    s.end = eo;
    s.fn = fn_;
    s.form = std::move(choice.form);
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

  ASTContext &ctx_;
  const SourceManager &sm_;
  State &st_;
  std::size_t fn_;
  std::set<std::pair<unsigned, unsigned>> &seen_;
  std::vector<const char *> refuse_;
  std::string label_; // the callee of the call being handled (refusals name it)
};

} // namespace

void collect_calls(ASTContext &ctx, State &st, std::size_t fn, Stmt *body,
                   std::set<std::pair<unsigned, unsigned>> &seen) {
  CallCollector cc(ctx, st, fn, seen);
  cc.TraverseStmt(body);
}

} // namespace vprof::instr::rewriting
