// parent_walk: what surrounds a call, read by walking up the AST's parent map — whether
// its value is used at all, and whether only a conversion, copy or assignment follows it
// to the end of its full-expression (which decides the probe form for temporaries).
#include "rewriter.hpp"

#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/StmtCXX.h>

namespace vprof::instr::rewriting {

using namespace clang;

bool ends_full_expression(ASTContext &ctx, const Expr *e) {
  const Stmt *cur = e;
  for (int depth = 0; depth < 16; ++depth) {
    auto ps = ctx.getParents(*cur);
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
    bool through = isa<ParenExpr, ImplicitCastExpr, CXXBindTemporaryExpr, MaterializeTemporaryExpr,
                       CXXFunctionalCastExpr, CStyleCastExpr>(p);
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

bool discarded(ASTContext &ctx, const Expr *e) {
  const Stmt *cur = e;
  for (int guard = 0; guard < 8; ++guard) {
    auto ps = ctx.getParents(*cur);
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
      auto pp = ctx.getParents(*cs);
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

} // namespace vprof::instr::rewriting
