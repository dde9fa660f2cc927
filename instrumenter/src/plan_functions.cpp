// plan_functions: finds the planned functions (and the lambdas inside them) defined in the
// main file, refuses those a probe cannot enter (constexpr, consteval, naked, coroutines,
// bodies from macros), gives the others a body probe and collects the calls in their
// bodies; notes the top-level declaration the probe header goes before.
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
    ++st_.planned_defined;
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
    ++st_.planned_defined;
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

  // The USR of the function a lambda is written in (through nested lambdas).
  std::string enclosing_usr(const LambdaExpr *le) const {
    for (const DeclContext *dc = le->getLambdaClass()->getDeclContext(); dc; dc = dc->getParent())
      if (const auto *f = dyn_cast<FunctionDecl>(dc); f && !detail::is_lambda_operator(f))
        return usr_of(f);
    return usr_of(le->getCallOperator());
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
    // A function planned for its body alone (an outer frame with more calls than the budget
    // holds) gets no call-site probes; a lambda in it goes with it.
    if (!st_.body_only.count(le ? enclosing_usr(le) : usr))
      collect_calls(ctx_, st_, fi, body, seen_calls_);
  }

  ASTContext &ctx_;
  const SourceManager &sm_;
  State &st_;
  std::unordered_set<const LambdaExpr *> constexpr_lambdas_;
  std::set<unsigned> bodies_;
  std::set<std::pair<unsigned, unsigned>> seen_calls_;
};

} // namespace

void collect_sites(ASTContext &ctx, State &st) {
  PlanVisitor v(ctx, st);
  v.TraverseDecl(ctx.getTranslationUnitDecl());
}

} // namespace vprof::instr::rewriting
