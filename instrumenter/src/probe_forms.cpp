// probe_forms: the form a call-site probe takes around its call (the C++ lambda through
// vprof::rt::call, its C++11 spelling, the GNU statement expression, the probe object
// that lives to the end of the full-expression) — chosen from what the call contains and
// how its value is used — and the text of every probe, inserted as tooling::Replacements.
#include "rewriter.hpp"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/QualTypeNames.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Tooling/Core/Replacement.h>

#include <algorithm>
#include <tuple>

namespace vprof::instr::rewriting {
namespace {

using namespace clang;

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

// decltype(<call>) spelled as a type: the call's type, `&` for an lvalue, `&&` for an
// xvalue, fully qualified. C++11 probes use it instead of repeating the call's text in
// decltype, where gcc does not accept the implicit `this` of a member call. Empty when
// the type cannot be spelled here (dependent, unnamed, local to a lambda): then the
// call's text is repeated.
std::string spelled_call_type(const ASTContext &ctx, const Expr *e) {
  QualType t = e->getType();
  if (t.isNull() || t->isDependentType() || t->isUndeducedType())
    return "";
  if (const TagDecl *tag = t->getAsTagDecl();
      tag && (!tag->getIdentifier() || tag->getDeclContext()->isFunctionOrMethod()))
    return "";
  PrintingPolicy pp(ctx.getLangOpts());
  pp.SuppressTagKeyword = true;
  std::string out = TypeName::getFullyQualifiedName(t, ctx, pp, /*WithGlobalNsPrefix=*/true);
  if (e->isLValue())
    out += " &";
  else if (e->isXValue())
    out += " &&";
  return out;
}

FormChoice refuse(std::string reason) {
  FormChoice c;
  c.refusal = std::move(reason);
  return c;
}

} // namespace

FormChoice choose_probe_form(ASTContext &ctx, const Expr *w) {
  SubtreeFacts facts;
  for (const Stmt *child : w->children())
    facts.TraverseStmt(const_cast<Stmt *>(child));
  if (facts.coawait)
    return refuse("co_await/co_yield in the call");
  const LangOptions &lo = ctx.getLangOpts();
  FormChoice out;
  ProbeForm &f = out.form;
  // A lambda cannot capture structured bindings (before C++20) or variable-length
  // arrays. A call whose value is void or a scalar prvalue loses nothing in the GNU
  // statement-expression form, which needs no capture; other calls are refused.
  const char *no_capture = nullptr;
  if (lo.CPlusPlus && !lo.CPlusPlus20 && facts.binding)
    no_capture = "structured binding in the call (a C++17 lambda cannot capture it)";
  else if (lo.CPlusPlus && facts.vla)
    no_capture = "variable-length array in the call (a lambda cannot capture it)";
  if (no_capture) {
    QualType t = w->getType();
    bool scalar = w->isPRValue() && !t->isDependentType() && (t->isVoidType() || t->isScalarType());
    // A discarded value of another type: cast to void inside, so nothing is copied.
    f.cast_void = !scalar && discarded(ctx, w);
    if (scalar || f.cast_void) {
      f.stmt_expr = true;
    } else if (!facts.vla && !facts.bitfield_binding) {
      // C++17: a lambda may not capture a binding, but an init-capture may refer to it
      // (`[&, &b = b]`); not for bit-fields (no reference can bind to one).
      for (const BindingDecl *bd : facts.bindings) {
        std::string n = bd->getName().str();
        f.captures += ", &" + n + " = " + n;
      }
    } else {
      return refuse(std::string(no_capture) +
                    ", and its value, neither void nor a scalar, is used");
    }
  }
  if (facts.temporary) {
    QualType t = w->getType();
    bool handle_like = w->isGLValue() || t->isPointerType() || t->isRecordType() ||
                       t->isMemberPointerType() || t->isDependentType() || t->isBlockPointerType();
    // A discarded result cannot dangle (`v.emplace_back(x, n.size());`). Nor can one
    // timed by a probe object that lives as long as the temporaries — to the end of the
    // full-expression: exact when nothing but a conversion or an assignment follows the
    // call there (`status = log_->AddRecord(Slice(...))`).
    if (handle_like && !discarded(ctx, w)) {
      if (!lo.CPlusPlus || !ends_full_expression(ctx, w))
        return refuse("returns a reference, pointer or object while an argument is a "
                      "temporary (its lifetime would end inside the probe), and more "
                      "than an assignment follows it in its full-expression");
      f.guard = true;
    }
  }
  if (f.guard) {
    f.stmt_expr = f.cast_void = false;
    f.captures.clear();
  }
  // C++11 has no decltype(auto): the lambda's return type repeats the call's text in
  // decltype(...), an unevaluated operand, where a lambda may not appear before C++20.
  f.decltype_text = lo.CPlusPlus && !lo.CPlusPlus14 && !f.stmt_expr && !f.guard;
  if (f.decltype_text && facts.lambda)
    return refuse("a lambda in the call (C++11: the probe's return type repeats the call "
                  "in decltype, where a lambda may not appear)");
  if (f.decltype_text)
    f.return_type = spelled_call_type(ctx, w);
  return out;
}

// One insertion per offset (nested calls share offsets: closing texts first, innermost
// first; then body probes; then opening texts, outermost first).
std::string apply_probes(const State &st, std::string &err) {
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
    const ProbeForm &f = s.form;
    long extent = static_cast<long>(s.end - s.begin);
    if (f.guard) {
      ins.push_back({s.begin, 2, -extent, "((void)::vprof::rt::probe_scope{" + id + "}, "});
      ins.push_back({s.end, 0, extent, ")"});
      continue;
    }
    if (st.cplusplus && !f.stmt_expr)
      ins.push_back({s.begin, 2, -extent,
                     "::vprof::rt::call(" + id + ", [&" + f.captures + "]() -> " +
                         (!f.decltype_text ? std::string("decltype(auto)")
                          : !f.return_type.empty()
                              ? f.return_type
                              : "decltype(" + st.code.substr(s.begin, s.end - s.begin) + ")") +
                         " { return "});
    else
      ins.push_back(
          {s.begin, 2, -extent,
           "__extension__({ VPROF_PROBE_SCOPE(" + id + "); " + (f.cast_void ? "(void)(" : "")});
    if (f.cast_void) {
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

} // namespace vprof::instr::rewriting
