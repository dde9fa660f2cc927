// scan: parse every translation unit once and store the whole-program static call graph
// (functions, calls) and the heights (Boost.Graph, SCCs condensed) in the workspace.
#include "internal.hpp"
#include "vprof/workspace_scan.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Builtins.h>
#include <clang/Frontend/CompilerInstance.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace vprof::instr {
namespace {

using namespace clang;
using detail::canonical_fn;
using detail::usr_of;
using detail::vprof_header;

struct FnInfo {
  std::string name, file;
  unsigned line = 0;
  bool defined = false, annotated = false;
  bool defaulted = false; // `= default` out of line: defined, but no body to probe
  // a definition written in the TU's main file: the rewriter probes only those (headers
  // policy, docs/instrumenter.md); a function defined in a header is not rewritable
  bool in_main = false;
};

struct Edge {
  std::string caller, callee, kind, file;
  unsigned line, col;
  bool in_loop = false; // inside a for/while/do loop of the caller (the cost model)
};

// A call through a function pointer (or member-function pointer): its candidate callees
// are the address-taken functions whose type key is one of `keys` (see type_keys).
struct IndirectCall {
  std::string caller, file;
  unsigned line, col;
  std::vector<std::string> keys;
  bool member = false; // through a pointer to member: overrides of the targets count too
  bool in_loop = false;
};

// What one TU contributes.
struct TuGraph {
  std::unordered_map<std::string, FnInfo> fns;
  std::vector<Edge> edges;
  std::vector<Edge> virtual_calls; // callee = the statically named method
  std::vector<std::pair<std::string, std::string>> overrides; // base, override
  std::vector<IndirectCall> indirect_calls;
  std::vector<std::pair<std::string, std::string>> address_taken; // usr, type key
  bool marked = false; // the TU calls vprof's annotations (marks)
};

// Type keys that match function pointers to functions (a string, comparable across TUs):
// "P:<ret>(<params>[,...])" for a prototype, "N:<ret>" for a C function without one.
// Exception specifications and method qualifiers are ignored (a superset, not a miss).
std::string proto_key(const FunctionType *ft, const ASTContext &ctx, bool member) {
  PrintingPolicy pp(ctx.getLangOpts());
  pp.SuppressTagKeyword = false;
  auto str = [&](QualType t) { return t.getCanonicalType().getUnqualifiedType().getAsString(pp); };
  std::string ret = str(ft->getReturnType());
  std::string pre = member ? "M" : "";
  const auto *fp = dyn_cast<FunctionProtoType>(ft);
  if (!fp)
    return pre + "N:" + ret;
  std::string k = pre + "P:" + ret + "(";
  for (unsigned i = 0; i < fp->getNumParams(); ++i)
    k += (i ? "," : "") + str(fp->getParamType(i));
  if (fp->isVariadic())
    k += fp->getNumParams() ? ",..." : "...";
  return k + ")";
}

class GraphVisitor : public RecursiveASTVisitor<GraphVisitor> {
  using Base = RecursiveASTVisitor<GraphVisitor>;

public:
  GraphVisitor(ASTContext &ctx, TuGraph &g, const std::string &cwd)
      : ctx_(ctx), sm_(ctx.getSourceManager()), g_(g), paths_(sm_, cwd) {}

  bool shouldVisitTemplateInstantiations() const { return true; }
  bool shouldVisitImplicitCode() const { return false; }

  bool TraverseDecl(Decl *d) {
    if (!d)
      return true;
    auto *fd = dyn_cast<FunctionDecl>(d);
    if (fd && fd->isExplicitlyDefaulted() &&
        !sm_.isInSystemHeader(sm_.getExpansionLoc(fd->getLocation()))) {
      // a definition in the source, though without a body to walk (or to probe)
      std::string u = note(fd, true);
      if (!u.empty())
        g_.fns[u].defaulted = true;
    }
    if (!fd || !fd->doesThisDeclarationHaveABody() || fd->isDefaulted() || fd->isDeleted())
      return RecursiveASTVisitor::TraverseDecl(d);
    // System headers are external libraries: their bodies are not walked. vprof's own
    // headers are the profiler itself.
    if (sm_.isInSystemHeader(sm_.getExpansionLoc(fd->getLocation())) ||
        vprof_header(sm_, fd->getLocation()))
      return true;
    std::string u = note(fd, true);
    if (u.empty())
      return RecursiveASTVisitor::TraverseDecl(d);
    if (sm_.isWrittenInMainFile(sm_.getExpansionLoc(fd->getLocation())))
      g_.fns[u].in_main = true;
    stack_.push_back(u);
    int loops = std::exchange(loops_, 0); // a function's loops are its own
    bool ok = RecursiveASTVisitor::TraverseDecl(d);
    loops_ = loops;
    stack_.pop_back();
    return ok;
  }

  // Loop nesting, for the call edges' in_loop (docs/planner.md, "Cost model").
  bool TraverseForStmt(ForStmt *st) {
    return in_loop([&] { return Base::TraverseForStmt(st); });
  }
  bool TraverseWhileStmt(WhileStmt *st) {
    return in_loop([&] { return Base::TraverseWhileStmt(st); });
  }
  bool TraverseDoStmt(DoStmt *st) {
    return in_loop([&] { return Base::TraverseDoStmt(st); });
  }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *st) {
    return in_loop([&] { return Base::TraverseCXXForRangeStmt(st); });
  }
  template <class F> bool in_loop(F &&traverse) {
    ++loops_;
    bool ok = traverse();
    --loops_;
    return ok;
  }

  bool TraverseLambdaExpr(LambdaExpr *le) {
    const CXXMethodDecl *op = le->getCallOperator();
    std::string u = op ? note(op, true) : "";
    if (u.empty())
      return RecursiveASTVisitor::TraverseLambdaExpr(le);
    // A lambda's code is lexically part of its enclosing function.
    if (!stack_.empty())
      add_edge("lambda", op, le->getBeginLoc());
    stack_.push_back(u);
    int loops = std::exchange(loops_, 0);
    bool ok = RecursiveASTVisitor::TraverseLambdaExpr(le);
    loops_ = loops;
    stack_.pop_back();
    return ok;
  }

  // Unevaluated operands call nothing at run time: no edges from them.
  bool TraverseUnaryExprOrTypeTraitExpr(UnaryExprOrTypeTraitExpr *) { return true; }
  bool TraverseCXXNoexceptExpr(CXXNoexceptExpr *) { return true; }
  bool TraverseDecltypeTypeLoc(DecltypeTypeLoc) { return true; }
  bool TraverseTypeOfExprTypeLoc(TypeOfExprTypeLoc) { return true; }
  bool TraverseGenericSelectionExpr(GenericSelectionExpr *e) {
    for (const GenericSelectionExpr::Association a : e->associations())
      if (a.isSelected() && !TraverseStmt(a.getAssociationExpr()))
        return false;
    return true;
  }

  bool VisitCXXMethodDecl(CXXMethodDecl *md) {
    if (md->size_overridden_methods() == 0)
      return true;
    std::string u = note(md, false);
    for (const CXXMethodDecl *base : md->overridden_methods()) {
      std::string b = note(base, false);
      if (!u.empty() && !b.empty())
        g_.overrides.emplace_back(b, u);
    }
    return true;
  }

  bool VisitCallExpr(CallExpr *ce) {
    if (!ce->getCallee())
      return true;
    const Expr *callee_expr = ce->getCallee()->IgnoreParenImpCasts();
    if (const auto *dre = dyn_cast<DeclRefExpr>(callee_expr))
      callee_refs_.insert(dre); // a call by name does not take the address
    if (stack_.empty())
      return true;
    const FunctionDecl *callee = ce->getDirectCallee();
    if (!callee)
      return indirect(ce), true;
    if (unsigned id = callee->getBuiltinID())
      if (!ctx_.BuiltinInfo.isPredefinedLibFunction(id))
        return true;
    if (const IdentifierInfo *ii = callee->getIdentifier())
      if (ii->getName().starts_with("vprof_interval_"))
        mark_annotated();
    if (vprof_header(sm_, callee->getLocation())) {
      if (callee->getIdentifier() && callee->getName().starts_with("vprof_"))
        g_.marked = true;
      // vprof::interval::end() works on behalf of the interval like the C calls.
      if (const auto *md = dyn_cast<CXXMethodDecl>(callee))
        if (annotation_guard(md->getParent()) && md->getIdentifier() && md->getName() == "end")
          mark_annotated();
      return true;
    }
    // A captureless lambda converted to a function pointer: its call operator may be
    // called through that pointer.
    if (const auto *conv = dyn_cast<CXXConversionDecl>(callee))
      if (conv->getParent()->isLambda() && conv->getConversionType()->isPointerType())
        if (const CXXMethodDecl *op = conv->getParent()->getLambdaCallOperator())
          if (const auto *ft = op->getType()->getAs<FunctionType>())
            take_address(op, ft, false);
    std::string kind = "direct";
    if (isa<CXXOperatorCallExpr>(ce)) {
      kind = "operator";
    } else if (const auto *mc = dyn_cast<CXXMemberCallExpr>(ce)) {
      kind = "member";
      const auto *md = dyn_cast<CXXMethodDecl>(callee);
      const auto *me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
      if (md && md->isVirtual() && !(me && me->hasQualifier()))
        kind = "virtual";
    }
    add_edge(kind, callee, detail::site_loc(ce));
    if (kind == "virtual")
      g_.virtual_calls.push_back(g_.edges.back());
    return true;
  }

  // A function named other than as the callee of a call has its address taken: it may
  // be called through a pointer anywhere in the program.
  bool VisitDeclRefExpr(DeclRefExpr *e) {
    const auto *fd = dyn_cast<FunctionDecl>(e->getDecl());
    if (!fd || callee_refs_.count(e) || fd->getBuiltinID())
      return true;
    const auto *md = dyn_cast<CXXMethodDecl>(fd);
    bool member = md && md->isInstance();
    if (const auto *ft = fd->getType()->getAs<FunctionType>())
      take_address(fd, ft, member);
    return true;
  }

  bool VisitCXXConstructExpr(CXXConstructExpr *e) {
    // Constructing a vprof::interval / vprof::attachment guard begins or attaches.
    if (!stack_.empty() && e->getConstructor() &&
        annotation_guard(e->getConstructor()->getParent()))
      mark_annotated();
    if (!stack_.empty() && user_code(e->getConstructor()))
      add_edge("ctor", e->getConstructor(), e->getBeginLoc());
    return true;
  }

  // `delete p` runs the destructor of p's class. In a template pattern the operand may be
  // dependent (no destroyed type at all: the instantiations give the edge), and an
  // incomplete class has no destructor to name.
  bool VisitCXXDeleteExpr(CXXDeleteExpr *e) {
    if (stack_.empty())
      return true;
    if (const CXXDestructorDecl *dd = destructor_of(e->getDestroyedType()); dd && user_code(dd))
      add_edge("dtor", dd, e->getBeginLoc());
    return true;
  }

  bool VisitVarDecl(VarDecl *vd) {
    if (stack_.empty() || !vd->hasLocalStorage() || isa<ParmVarDecl>(vd))
      return true;
    if (const CXXDestructorDecl *dd = destructor_of(vd->getType()); dd && user_code(dd))
      add_edge("dtor", dd, vd->getLocation());
    return true;
  }

private:
  // The destructor of class type `t`; null for a null, dependent or non-class type and for a
  // class without a definition (declared only, or a specialization never instantiated).
  static const CXXDestructorDecl *destructor_of(QualType t) {
    if (t.isNull() || t->isDependentType())
      return nullptr;
    const CXXRecordDecl *rd = t->getAsCXXRecordDecl();
    if (!rd || !rd->hasDefinition())
      return nullptr;
    return rd->getDefinition()->getDestructor();
  }

  bool user_code(const FunctionDecl *fd) const {
    return fd && fd->isUserProvided() &&
           !sm_.isInSystemHeader(sm_.getExpansionLoc(fd->getLocation())) &&
           !vprof_header(sm_, fd->getLocation());
  }

  // The RAII guards of <vprof/vprof.hpp> that begin an interval or attach to one.
  bool annotation_guard(const CXXRecordDecl *rd) const {
    if (!rd || !vprof_header(sm_, rd->getLocation()))
      return false;
    std::string n = rd->getQualifiedNameAsString();
    return n == "vprof::interval" || n == "vprof::attachment";
  }

  // The function being walked works on behalf of an interval: a default root.
  void mark_annotated() {
    if (!stack_.empty())
      g_.fns[stack_.back()].annotated = true;
  }

  std::string ret_key(const FunctionType *ft) const {
    PrintingPolicy pp(ctx_.getLangOpts());
    pp.SuppressTagKeyword = false;
    return ft->getReturnType().getCanonicalType().getUnqualifiedType().getAsString(pp);
  }

  // Records `fd` as address-taken under its type key and under "R:<ret>" (reached by
  // calls through pointers without a prototype).
  void take_address(const FunctionDecl *fd, const FunctionType *ft, bool member) {
    if (vprof_header(sm_, fd->getLocation()))
      return;
    std::string u = note(fd, false);
    if (u.empty())
      return;
    std::string pre = member ? "M" : "";
    g_.address_taken.emplace_back(u, proto_key(ft, ctx_, member));
    if (isa<FunctionProtoType>(ft))
      g_.address_taken.emplace_back(u, pre + "R:" + ret_key(ft));
  }

  // A call without a direct callee: through a pointer to function or to member function.
  void indirect(const CallExpr *ce) {
    const Expr *c = ce->getCallee()->IgnoreParens();
    QualType t;
    bool member = false;
    if (const auto *bo = dyn_cast<BinaryOperator>(c); bo && bo->isPtrMemOp()) {
      t = bo->getRHS()->getType();
      if (const auto *mp = t->getAs<MemberPointerType>())
        t = mp->getPointeeType();
      member = true;
    } else {
      t = c->getType();
      if (t->isPointerType() || t->isReferenceType() || t->isBlockPointerType())
        t = t->getPointeeType();
    }
    if (t.isNull() || t->isDependentType())
      return; // a template pattern: its instantiations are walked instead
    const auto *ft = t->getAs<FunctionType>();
    if (!ft)
      return; // pseudo-destructors, dependent callees, functors
    IndirectCall ic;
    ic.caller = stack_.back();
    ic.member = member;
    SourceLocation l = sm_.getExpansionLoc(detail::site_loc(ce));
    ic.file = paths_.path(l);
    ic.line = sm_.getExpansionLineNumber(l);
    ic.col = sm_.getExpansionColumnNumber(l);
    ic.in_loop = loops_ > 0;
    // The exact type; and, for C, the functions defined without a prototype returning the
    // same type (they may sit behind a prototyped pointer), or - for a pointer without a
    // prototype - every function returning that type.
    std::string pre = member ? "M" : "";
    std::string ret = ret_key(ft);
    ic.keys.push_back(proto_key(ft, ctx_, member));
    if (isa<FunctionProtoType>(ft))
      ic.keys.push_back(pre + "N:" + ret);
    else
      ic.keys.push_back(pre + "R:" + ret);
    g_.indirect_calls.push_back(std::move(ic));
  }

  // Records the node for `fd` (its pattern) and returns its USR.
  std::string note(const FunctionDecl *fd, bool definition) {
    fd = canonical_fn(fd);
    std::string u = usr_of(fd);
    if (u.empty())
      return u;
    SourceLocation loc = sm_.getExpansionLoc(fd->getLocation());
    bool sys = sm_.isInSystemHeader(loc);
    auto [it, fresh] = g_.fns.try_emplace(u);
    FnInfo &fi = it->second;
    if (fresh || (definition && !sys && !fi.defined)) {
      fi.name = detail::display_name(fd, sm_);
      fi.file = paths_.path(loc);
      fi.line = sm_.getExpansionLineNumber(loc);
    }
    if (definition && !sys)
      fi.defined = true;
    return u;
  }

  void add_edge(const std::string &kind, const FunctionDecl *callee, SourceLocation at) {
    std::string cu = note(callee, false);
    if (cu.empty())
      return;
    SourceLocation l = sm_.getExpansionLoc(at);
    g_.edges.push_back({stack_.back(), cu, kind, paths_.path(l), sm_.getExpansionLineNumber(l),
                        sm_.getExpansionColumnNumber(l), loops_ > 0});
  }

  ASTContext &ctx_;
  const SourceManager &sm_;
  TuGraph &g_;
  detail::PathCache paths_;
  std::vector<std::string> stack_; // USRs of the functions being walked
  int loops_ = 0;                  // loops around the current point of the innermost function
  std::unordered_set<const DeclRefExpr *> callee_refs_; // callees of calls by name
};

class GraphConsumer : public ASTConsumer {
public:
  GraphConsumer(TuGraph &g, std::string cwd) : g_(g), cwd_(std::move(cwd)) {}
  void HandleTranslationUnit(ASTContext &ctx) override {
    GraphVisitor v(ctx, g_, cwd_);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
  }

private:
  TuGraph &g_;
  std::string cwd_;
};

class GraphAction : public ASTFrontendAction {
public:
  GraphAction(TuGraph &g, std::string cwd) : g_(g), cwd_(std::move(cwd)) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &, StringRef) override {
    return std::make_unique<GraphConsumer>(g_, cwd_);
  }

private:
  TuGraph &g_;
  std::string cwd_;
};

// Writes one TU's nodes and edges; `ids` caches USR -> function id across TUs.
void store(ws::Database &db, const TuGraph &g, std::unordered_map<std::string, std::int64_t> &ids) {
  ws::Transaction tx(db);
  ws::FunctionWriter fns(db);
  for (const auto &[usr, fi] : g.fns) {
    if (auto id = fns.merge({.usr = usr,
                             .name = fi.name,
                             .file = fi.file,
                             .line = fi.line,
                             .defined = fi.defined,
                             .annotated = fi.annotated,
                             .body = !fi.defaulted,
                             .rewritable = fi.in_main}))
      ids[usr] = *id;
  }
  ws::CallWriter calls(db);
  for (const Edge &e : g.edges) {
    auto a = ids.find(e.caller), b = ids.find(e.callee);
    if (a == ids.end() || b == ids.end())
      continue;
    calls.add({.caller = a->second,
               .callee = b->second,
               .kind = e.kind,
               .file = e.file,
               .line = e.line,
               .col = e.col,
               .in_loop = e.in_loop});
  }
  tx.commit();
}

// A unit the scan could not walk: counted, named on stderr and in the workspace (a plan
// that would need its functions says which unit is missing).
void skip_unit(ws::Database &wsdb, ScanStats &stats, const CompileCommand &c,
               const detail::ActionOutcome &parsed) {
  const bool crashed = parsed.status == detail::ActionOutcome::Status::crashed;
  ++stats.failed;
  if (crashed)
    ++stats.crashed;
  const std::string file = detail::normal_path(c.file, c.directory);
  const std::string reason = crashed ? parsed.reason + " in the scan" : parsed.reason;
  stats.skipped.push_back({file, reason});
  ws::add_skipped_unit(wsdb, file, reason);
  std::cerr << "vprof: scan: " << c.file << ": " << reason << ", skipped"
            << (crashed ? " (a vprof bug: please report it with this file's compile command)" : "")
            << "\n";
}

} // namespace

// Longest path to a leaf for every function, with each strongly connected component
// (recursion) condensed into one node. Returns the largest height.
static int compute_heights(ws::Database &db) {
  std::int64_t n = ws::max_function_id(db);
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph graph(static_cast<std::size_t>(n + 1));
  std::vector<std::pair<std::int64_t, std::int64_t>> edges = ws::call_edges(db);
  for (auto [u, v] : edges)
    boost::add_edge(static_cast<std::size_t>(u), static_cast<std::size_t>(v), graph);
  std::vector<int> comp(static_cast<std::size_t>(n + 1));
  int ncomp = boost::strong_components(graph, comp.data());
  // Tarjan numbers components in reverse topological order: every edge between two
  // components goes from a higher number to a lower one, so ascending order is enough.
  std::vector<std::pair<int, int>> cedges;
  for (auto [u, v] : edges) {
    int cu = comp[static_cast<std::size_t>(u)], cv = comp[static_cast<std::size_t>(v)];
    if (cu != cv)
      cedges.emplace_back(cu, cv);
  }
  std::sort(cedges.begin(), cedges.end());
  std::vector<int> h(static_cast<std::size_t>(ncomp), 0);
  for (auto [cu, cv] : cedges)
    h[static_cast<std::size_t>(cu)] =
        std::max(h[static_cast<std::size_t>(cu)], h[static_cast<std::size_t>(cv)] + 1);
  int best = 0;
  std::vector<int> height(static_cast<std::size_t>(n + 1), 0); // by function id
  for (std::int64_t id = 1; id <= n; ++id) {
    int hh = h[static_cast<std::size_t>(comp[static_cast<std::size_t>(id)])];
    best = std::max(best, hh);
    height[static_cast<std::size_t>(id)] = hh;
  }
  ws::Transaction tx(db);
  ws::write_heights(db, height);
  int root_h = ws::max_annotated_height(db).value_or(best);
  db.set_meta("H", std::to_string(root_h));
  db.set_meta("max_height", std::to_string(best));
  tx.commit();
  return best;
}

ScanStats scan(ws::Database &wsdb, const CompileDb &db, const ParseOptions &opt) {
  ScanStats stats;
  std::unordered_map<std::string, std::int64_t> ids = ws::function_ids(wsdb);
  ws::delete_calls(wsdb);
  ws::clear_annotated(wsdb); // recomputed from the sources
  ws::clear_marked_files(wsdb);
  ws::clear_skipped_units(wsdb);
  std::vector<Edge> vcalls;
  std::vector<IndirectCall> icalls;
  std::unordered_map<std::string, std::set<std::string>> taken; // type key -> USRs
  std::unordered_map<std::string, std::vector<std::string>> overrides;
  const auto &cmds = db.commands();
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    const CompileCommand &c = cmds[i];
    if (!opt.quiet)
      std::cerr << "vprof: scan [" << (i + 1) << "/" << cmds.size() << "] " << c.file << "\n";
    TuGraph g;
    const detail::ActionOutcome parsed =
        detail::run_action(c, opt, std::make_unique<GraphAction>(g, c.directory));
    ++stats.tus;
    if (!parsed.ok()) {
      skip_unit(wsdb, stats, c, parsed);
      continue;
    }
    store(wsdb, g, ids);
    if (g.marked)
      ws::add_marked_file(wsdb, detail::normal_path(c.file, c.directory));
    for (auto &e : g.virtual_calls)
      vcalls.push_back(std::move(e));
    for (auto &[b, d] : g.overrides)
      overrides[b].push_back(d);
    for (auto &c : g.indirect_calls)
      icalls.push_back(std::move(c));
    for (auto &[u, k] : g.address_taken)
      taken[k].insert(u);
  }
  // Every known override of `base` (transitively), in any TU.
  auto overriders = [&](const std::string &base) {
    std::set<std::string> seen;
    std::vector<std::string> todo{base};
    while (!todo.empty()) {
      std::string b = todo.back();
      todo.pop_back();
      auto it = overrides.find(b);
      if (it == overrides.end())
        continue;
      for (const auto &d : it->second)
        if (seen.insert(d).second)
          todo.push_back(d);
    }
    return seen;
  };
  // A virtual call may reach every known override, in any TU.
  if (!vcalls.empty()) {
    ws::Transaction tx(wsdb);
    ws::CallWriter calls(wsdb);
    for (const Edge &e : vcalls) {
      std::set<std::string> seen = overriders(e.callee);
      auto a = ids.find(e.caller);
      for (const auto &d : seen) {
        auto b = ids.find(d);
        if (a == ids.end() || b == ids.end())
          continue;
        calls.add({.caller = a->second,
                   .callee = b->second,
                   .kind = "virtual",
                   .file = e.file,
                   .line = e.line,
                   .col = e.col,
                   .in_loop = e.in_loop});
      }
    }
    tx.commit();
  }
  // A call through a pointer may reach every defined function of a matching type whose
  // address is taken somewhere in the program (kind 'indirect', a sound over-approximation
  // for type-correct code; see docs/instrumenter.md).
  if (!icalls.empty()) {
    std::vector<std::int64_t> defined_ids = ws::defined_function_ids(wsdb);
    std::unordered_set<std::int64_t> defined(defined_ids.begin(), defined_ids.end());
    ws::Transaction tx(wsdb);
    ws::CallWriter calls(wsdb);
    for (const IndirectCall &c : icalls) {
      std::set<std::string> targets;
      for (const auto &k : c.keys)
        if (auto it = taken.find(k); it != taken.end())
          targets.insert(it->second.begin(), it->second.end());
      if (c.member) // a pointer to a virtual member function dispatches to overrides
        for (const auto &t : std::set<std::string>(targets))
          for (const auto &d : overriders(t))
            targets.insert(d);
      auto a = ids.find(c.caller);
      if (a == ids.end())
        continue;
      for (const auto &t : targets) {
        auto b = ids.find(t);
        if (b == ids.end() || !defined.count(b->second))
          continue;
        calls.add({.caller = a->second,
                   .callee = b->second,
                   .kind = "indirect",
                   .file = c.file,
                   .line = c.line,
                   .col = c.col,
                   .in_loop = c.in_loop});
      }
    }
    tx.commit();
  }
  stats.max_height = compute_heights(wsdb);
  ws::CallGraphSize size = ws::call_graph_size(wsdb);
  stats.functions = size.functions;
  stats.calls = size.calls;
  return stats;
}

} // namespace vprof::instr
