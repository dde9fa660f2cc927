// Unit tests of the call graph the scan builds for accuracy: default roots (every function
// that begins, ends, attaches to or detaches from an interval, C and C++ guards), candidate
// edges of calls through pointers (kind `indirect`), and the agreement of call edges with
// the rewriter's call-site rows (same file, line, column), which `expand` relies on.
#include <vprof/instrumenter.hpp>
#include <vprof/planner.hpp>
#include <vprof/workspace_rows.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace {

using namespace vprof;
namespace fs = std::filesystem;

// An in-memory workspace plus in-memory source files (one compile command each).
struct Graph {
  ws::Database db{":memory:"};
  instr::CompileDb cdb;
  instr::ParseOptions opt;
  std::vector<instr::CompileCommand> cmds;

  void add(const std::string &file, const std::string &code, std::vector<std::string> flags = {}) {
    instr::CompileCommand cmd;
    cmd.file = file;
    cmd.directory = fs::temp_directory_path().string();
    cmd.args = {file.ends_with(".c") ? "cc" : "c++"};
    for (auto &f : flags)
      cmd.args.push_back(f);
    cmd.args.push_back("-c");
    cmd.args.push_back(file);
    cdb.add(cmd);
    cmds.push_back(cmd);
    opt.quiet = true;
    opt.virtual_files[file] = code;
  }
  void scan() { ASSERT_EQ(instr::scan(db, cdb, opt).failed, 0); }
  std::int64_t scalar(const std::string &sql) {
    auto st = db.prepare(sql);
    return st.step() && !st.is_null(0) ? st.int64(0) : -1;
  }
  std::set<std::string> names(const std::string &sql) {
    std::set<std::string> out;
    auto st = db.prepare(sql);
    while (st.step())
      out.insert(st.text(0));
    return out;
  }
  // Callees of `caller`'s edges of `kind`.
  std::set<std::string> callees(const std::string &caller, const std::string &kind) {
    return names("SELECT g.name FROM calls c JOIN functions f ON f.id = c.caller JOIN functions "
                 "g ON g.id = c.callee WHERE f.name = '" +
                 caller + "' AND c.kind = '" + kind + "'");
  }
  std::int64_t height(const std::string &name) {
    return scalar("SELECT height FROM functions WHERE name = '" + name + "'");
  }
};

using Names = std::set<std::string>;

// The rewriter probes only bodies written in a TU's main file: a function defined in a
// header is recorded as not rewritable, and the first plan steps through it to its callees
// (its calls stay timed at the call sites in the planned callers).
TEST(Rewritable, HeaderFunctionsAreNotPlannedButTheirCalleesAre) {
  Graph g;
  const std::string header = "int leaf(int x);\ninline int wrap(int x) { return leaf(x) + 1; }\n";
  g.opt.virtual_files["/virtual/hdr/wrap.hpp"] = header;
  g.add("/virtual/hdr/leaf.cpp", "int leaf(int x) { return 2 * x; }\n");
  g.add("/virtual/hdr/main.cpp",
        "#include <stdint.h>\n#include <vprof/vprof.h>\n#include \"wrap.hpp\"\n"
        "int serve(int x) { uint64_t iv; VPROF_INTERVAL_BEGIN(iv, \"r\"); int r = wrap(x);\n"
        "  VPROF_INTERVAL_END(iv); return r; }\n");
  g.scan();
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 1 AND rewritable = 0"),
            (Names{"wrap"}));
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 1 AND rewritable = 1"),
            (Names{"serve", "leaf"}));
  planner::FirstPlanOptions po;
  po.depth = 2;
  planner::first_plan(g.db, po);
  EXPECT_EQ(g.names("SELECT f.name FROM plans p JOIN functions f ON f.id = p.function "
                    "WHERE p.iteration = 0"),
            (Names{"serve", "leaf"}));
}

TEST(Roots, EveryIntervalCallMarksItsFunction) {
  Graph g;
  g.add("/virtual/roots.c",
        "#include <stdint.h>\n#include <vprof/vprof.h>\n"
        "void work(void) {}\n"
        "void begins(void) { uint64_t iv; VPROF_INTERVAL_BEGIN(iv, \"a\"); (void)iv; }\n"
        "void begins_id(uint64_t id) { VPROF_INTERVAL_BEGIN_ID(id, \"b\"); }\n"
        "void serves(uint64_t id) { VPROF_ATTACH(id); work(); VPROF_INTERVAL_END(id); }\n"
        "void ends(uint64_t id) { work(); VPROF_INTERVAL_END(id); }\n"
        "void hands_off(uint64_t id) { work(); VPROF_DETACH(id); }\n"
        "void plain(void) { work(); }\n");
  g.scan();
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE annotated = 1"),
            (Names{"begins", "begins_id", "serves", "ends", "hands_off"}));
  // They are the default roots of plan 0.
  planner::FirstPlanOptions po;
  EXPECT_EQ(planner::first_plan(g.db, po), 5);
  EXPECT_EQ(g.scalar("SELECT count(*) FROM plans p JOIN functions f ON f.id = p.function "
                     "WHERE f.name = 'serves' AND p.reason = 'root'"),
            1);
  // The runtime's API is not part of the program's call graph.
  EXPECT_EQ(g.scalar("SELECT count(*) FROM functions WHERE name LIKE 'vprof%'"), 0);
}

TEST(Roots, CxxGuardsMarkTheUserFunctionNeverTheHeader) {
  Graph g;
  g.add("/virtual/guards.cpp",
        "#include <vprof/vprof.hpp>\n"
        "void work() {}\n"
        "void handle() { VPROF_SCOPED_INTERVAL(iv, \"req\"); work(); }\n"
        "void early(vprof::interval &iv) { work(); iv.end(); }\n"
        "void serve(unsigned long id) { vprof::attachment a(id); work(); }\n"
        "template <class F> void run(F f) { f(); }\n"
        "void pool(unsigned long id) { run([id] { vprof::attachment a(id); work(); }); }\n"
        "void other() { vprof::custom_wait w(nullptr); work(); }\n",
        {"-std=c++17"});
  g.scan();
  Names annotated = g.names("SELECT name FROM functions WHERE annotated = 1");
  EXPECT_TRUE(annotated.count("handle"));
  EXPECT_TRUE(annotated.count("early"));
  EXPECT_TRUE(annotated.count("serve"));
  EXPECT_FALSE(annotated.count("other")) << "custom_wait is not an interval mark";
  EXPECT_FALSE(annotated.count("pool")) << "the lambda works for the interval, not pool";
  bool lambda = false;
  for (const auto &n : annotated)
    lambda |= n.starts_with("pool::lambda@");
  EXPECT_TRUE(lambda);
  // Nothing from vprof's headers: no nodes, no edges into them.
  EXPECT_EQ(g.scalar("SELECT count(*) FROM functions WHERE name LIKE 'vprof::%' OR file LIKE "
                     "'%/vprof/vprof.hpp'"),
            0);
  EXPECT_EQ(g.callees("handle", "ctor"), Names{});
  EXPECT_EQ(g.callees("handle", "direct"), Names{"work"});
}

TEST(Indirect, CallsThroughPointersReachAddressTakenFunctionsOfTheType) {
  Graph g;
  // The table is filled in one TU and called through in another.
  g.add("/virtual/table.c",
        "typedef void (*handler)(int);\n"
        "void leaf(void) {}\n"
        "void on_a(int x) { (void)x; }\n"
        "void on_b(int x) { (void)x; leaf(); }\n"
        "int on_int(int x) { return x; }\n" // taken, other type
        "void not_taken(int x) { (void)x; }\n"
        "handler table[2] = {on_a, &on_b};\n"
        "int (*iptr)(int) = on_int;\n");
  g.add("/virtual/use.c", "typedef void (*handler)(int);\n"
                          "extern handler table[2];\n"
                          "void not_taken(int x);\n"
                          "void dispatch(int k) { table[k](k); not_taken(k); }\n"
                          "void via_ref(void (*fp)(int)) { (*fp)(1); }\n");
  g.scan();
  EXPECT_EQ(g.callees("dispatch", "indirect"), (Names{"on_a", "on_b"}));
  EXPECT_EQ(g.callees("dispatch", "direct"), Names{"not_taken"});
  EXPECT_EQ(g.callees("via_ref", "indirect"), (Names{"on_a", "on_b"}));
  // All candidates of one call share its position.
  EXPECT_EQ(g.scalar("SELECT count(DISTINCT c.file || ':' || c.line || ':' || c.col) FROM calls c "
                     "JOIN functions f ON f.id = c.caller WHERE f.name = 'dispatch' AND "
                     "c.kind = 'indirect'"),
            1);
  // Heights follow the candidate edges: dispatch -> on_b -> leaf.
  EXPECT_EQ(g.height("on_b"), 1);
  EXPECT_EQ(g.height("dispatch"), 2);
  // A plan reaches the candidates through the pointer.
  planner::FirstPlanOptions po;
  po.roots = {"dispatch"};
  po.depth = 1;
  EXPECT_EQ(planner::first_plan(g.db, po), 4); // dispatch, on_a, on_b, not_taken
}

TEST(Indirect, CWithoutPrototypesMatchesByReturnType) {
  Graph g;
  g.add("/virtual/kr.c",
        "int one(int x) { return x; }\n"
        "int two(void) { return 2; }\n"
        "void three(int x) { (void)x; }\n"
        "int oldstyle() { return 4; }\n"
        "void *keep[] = {(void *)one, (void *)two, (void *)three, (void *)oldstyle};\n"
        "int call_any(int (*fp)()) { return fp(); }\n"
        "int call_int(int (*fp)(int)) { return fp(1); }\n",
        {"-std=gnu11"});
  g.scan();
  EXPECT_EQ(g.callees("call_any", "indirect"), (Names{"one", "two", "oldstyle"}));
  EXPECT_EQ(g.callees("call_int", "indirect"), (Names{"one", "oldstyle"}));
}

TEST(Indirect, MemberPointersAndLambdasConvertedToPointers) {
  Graph g;
  g.add("/virtual/mp.cpp",
        "struct B { virtual int f(int x) { return x; } int g(int x) { return -x; } "
        "virtual ~B() = default; };\n"
        "struct D : B { int f(int x) override { return 2 * x; } };\n"
        "int free_fn(int x) { return x + 1; }\n"
        "int via_member(B &b, int (B::*pm)(int)) { return (b.*pm)(3); }\n"
        "int via_pointer(int (*fp)(int)) { return fp(3); }\n"
        "int main() {\n"
        "  D d;\n"
        "  int (*fp)(int) = [](int x) { return x * 3; };\n"
        "  return via_member(d, &B::f) + via_pointer(fp) + via_pointer(free_fn);\n"
        "}\n",
        {"-std=c++17"});
  g.scan();
  EXPECT_EQ(g.callees("via_member", "indirect"), (Names{"B::f", "D::f"}))
      << "B::g's address is never taken";
  Names p = g.callees("via_pointer", "indirect");
  EXPECT_TRUE(p.count("free_fn"));
  EXPECT_EQ(p.size(), 2u);
  bool lambda = false;
  for (const auto &n : p)
    lambda |= n.starts_with("main::lambda@");
  EXPECT_TRUE(lambda) << "the lambda converted to a function pointer is a candidate";
}

// The analyzer's expand adds the callees of the `calls` edges at a call site's position:
// every probed call site must find its edges by (function, file, line, col).
TEST(Sites, CallSiteRowsMatchTheScansEdges) {
  Graph g;
  g.add("/virtual/sites.cpp",
        "struct Shape { virtual int area() const { return 0; } virtual ~Shape() = default; };\n"
        "struct Sq : Shape { int s = 2; int area() const override { return s * s; } };\n"
        "int tri(int x) { return x; }\n"
        "int (*op)(int) = tri;\n"
        "template <class T> struct Box { T t; int get(int i) const { return t.area() + i; } };\n"
        "template <class B> int use(const B &b) { return b.get(1); }\n"
        "int total(const Shape &s) {\n"
        "  Box<Sq> box{};\n"
        "  return s.area() + op(2) + use(box) + tri(1);\n"
        "}\n"
        "int main() { Sq q; return total(q); }\n",
        {"-std=c++17"});
  g.scan();
  planner::FirstPlanOptions po;
  po.roots = {"total", "use"};
  ASSERT_EQ(planner::first_plan(g.db, po), 2);
  auto r = instr::rewrite(g.db, g.cmds[0], 0, g.opt);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.call_sites, 5); // area, op, use, tri; b.get
  // Every call site has at least one edge at its exact position, from its function.
  EXPECT_EQ(g.scalar("SELECT count(*) FROM sites s WHERE s.kind = 'call' AND NOT EXISTS (SELECT "
                     "1 FROM calls c WHERE c.caller = s.function AND c.file = s.file AND "
                     "c.line = s.line AND c.col = s.col)"),
            0);
  auto at_site = [&](const std::string &callee_name) {
    return g.names("SELECT g.name FROM sites s JOIN calls c ON c.caller = s.function AND c.file = "
                   "s.file AND c.line = s.line AND c.col = s.col JOIN functions g ON g.id = "
                   "c.callee WHERE s.callee_name = '" +
                   callee_name + "'");
  };
  // Virtual: the site names the static method; the edges reach every override.
  EXPECT_EQ(at_site("Shape::area"), (Names{"Shape::area", "Sq::area"}));
  EXPECT_EQ(g.scalar("SELECT count(*) FROM sites s JOIN functions f ON f.id = s.callee WHERE "
                     "s.callee_name = 'Shape::area' AND f.name = 'Shape::area'"),
            1);
  // Indirect: callee NULL, the spelled pointer as callee_name, candidate edges.
  EXPECT_EQ(at_site("op"), Names{"tri"});
  EXPECT_EQ(g.scalar("SELECT count(*) FROM sites WHERE callee_name = 'op' AND callee IS NULL"), 1);
  // A dependent call in a template: the position of the pattern matches the
  // instantiation's edge, and the callee comes from that edge.
  EXPECT_EQ(at_site("b.get"), Names{"Box::get"});
  EXPECT_EQ(g.scalar("SELECT count(*) FROM sites s JOIN functions f ON f.id = s.callee WHERE "
                     "s.callee_name = 'b.get' AND f.name = 'Box::get'"),
            1);
}

TEST(Rewriter, IntervalGuardCallsGetNoProbe) {
  Graph g;
  g.add("/virtual/end.cpp",
        "#include <vprof/vprof.hpp>\n"
        "int work() { return 1; }\n"
        "int handle() { VPROF_SCOPED_INTERVAL(iv, \"x\"); int r = work(); iv.end(); return r; }\n",
        {"-std=c++17"});
  g.scan();
  planner::FirstPlanOptions po;
  ASSERT_EQ(planner::first_plan(g.db, po), 1); // handle, the annotated function
  auto r = instr::rewrite(g.db, g.cmds[0], 0, g.opt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.call_sites, 1) << r.output; // work() only
  EXPECT_NE(r.output.find(" iv.end();"), std::string::npos) << r.output;
  EXPECT_TRUE(r.skipped.empty());
}

TEST(Heights, MetaHIsTheLargestHeightOfAnAnnotatedFunction) {
  Graph g;
  g.add("/virtual/h.c", "#include <stdint.h>\n#include <vprof/vprof.h>\n"
                        "void c(void) {}\nvoid b(void) { c(); }\nvoid a(void) { b(); }\n"
                        "void top(void) { a(); }\n"
                        "void root(uint64_t id) { VPROF_ATTACH(id); b(); VPROF_DETACH(id); }\n");
  g.scan();
  EXPECT_EQ(g.height("top"), 3);
  EXPECT_EQ(g.height("root"), 2);
  auto st = g.db.prepare("SELECT value FROM meta WHERE key = 'H'");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "2");
}

} // namespace

namespace {

TEST(Rewriter, ForkGetsNoCallSiteProbe) {
  Graph g;
  g.add("/virtual/fork.c", "#include <unistd.h>\n"
                           "int work(void) { return 1; }\n"
                           "int spawn(void) { pid_t p = fork(); return p == 0 ? work() : 0; }\n");
  g.scan();
  planner::FirstPlanOptions po;
  po.roots = {"spawn"};
  ASSERT_EQ(planner::first_plan(g.db, po), 1);
  auto r = instr::rewrite(g.db, g.cmds[0], 0, g.opt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.call_sites, 1) << r.output; // work() only
  EXPECT_NE(r.output.find("pid_t p = fork();"), std::string::npos) << r.output;
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].reason.find("fork"), std::string::npos);
  EXPECT_EQ(r.skipped[0].line, 3u);
}

} // namespace

namespace {

// Call sites inside lambdas (also in templates and generic lambdas) find their edges.
TEST(Sites, LambdaCallSitesMatchTheScansEdges) {
  Graph g;
  g.add("/virtual/lam.cpp",
        "int leaf(int x) { return x; }\n"
        "template <class T> int tpl(T t) { auto f = [&](int y) { return leaf(y) + t; }; "
        "return f(1); }\n"
        "int plain(int z) { auto h = [z](auto w) { return leaf(z) + w; }; return h(2) + h(3L); }\n"
        "int main() { return tpl(1) + tpl(2L) + plain(4); }\n",
        {"-std=c++17"});
  g.scan();
  planner::FirstPlanOptions po;
  po.roots = {"tpl", "plain"};
  ASSERT_EQ(planner::first_plan(g.db, po), 2);
  auto r = instr::rewrite(g.db, g.cmds[0], 0, g.opt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.call_sites, 5) << r.output; // leaf in each lambda, f(1), h(2), h(3L)
  EXPECT_EQ(g.names("SELECT s.callee_name FROM sites s WHERE s.kind = 'call' AND NOT EXISTS "
                    "(SELECT 1 FROM calls c WHERE c.caller = s.function AND c.file = s.file AND "
                    "c.line = s.line AND c.col = s.col)"),
            Names{});
}

} // namespace

// The cost model needs to know which calls sit in loops: a call inside for/while/do (or a
// range for) is marked in_loop, one after the loop, in a lambda defined inside a loop's
// body, is not (a lambda's body is its own function); the counts per function split
// accordingly. A file calling vprof's annotations is a marked file.
TEST(Scan, CallsInsideLoopsAreMarked) {
  Graph g;
  g.add("/virtual/loops.cpp", "#include <vprof/vprof.h>\n"
                              "int leaf(int i) { return i; }\n"
                              "int once(int i) { return i + 1; }\n"
                              "int sum(int n) {\n"
                              "  int s = 0;\n"
                              "  for (int i = 0; i < n; i++) s += leaf(i);\n"
                              "  while (n-- > 0) { do { s += leaf(n); } while (0); }\n"
                              "  for (int i = 0; i < 2; i++) { auto f = [] { return once(1); };\n"
                              "    s += f(); }\n"
                              "  VPROF_WAKE(&s);\n"
                              "  return s + once(s);\n"
                              "}\n");
  g.scan();
  EXPECT_EQ(g.scalar("SELECT COUNT(*) FROM calls c JOIN functions f ON f.id = c.caller "
                     "WHERE f.name = 'sum' AND c.in_loop = 1"),
            4) // leaf twice; the lambda (its definition's edge and the call f())
      << "for, while, do";
  EXPECT_EQ(g.scalar("SELECT in_loop FROM calls c JOIN functions f ON f.id = c.caller JOIN "
                     "functions g ON g.id = c.callee WHERE f.name = 'sum' AND g.name = 'once'"),
            0);
  EXPECT_EQ(g.scalar("SELECT MAX(c.in_loop) FROM calls c JOIN functions f ON f.id = "
                     "c.caller JOIN functions g ON g.id = c.callee WHERE g.name = 'once'"),
            0)
      << "the lambda's own call is outside any loop of the lambda";
  auto sum = g.scalar("SELECT id FROM functions WHERE name = 'sum'");
  auto c = ws::call_sites_in(g.db, sum);
  EXPECT_EQ(c.looped, 4);
  EXPECT_GE(c.straight, 1);
  EXPECT_EQ(ws::marked_files(g.db), std::vector<std::string>{"/virtual/loops.cpp"});
}

// Templates (docs/instrumenter.md, "Templates"): `delete` of a dependent operand in a class
// template's destructor gives no edge from the pattern (it has no destroyed type: the scan
// once dereferenced the null type there and crashed) and the destructor's edge from the
// instantiation.
TEST(Templates, DeleteOfADependentOperandGetsItsEdgeFromTheInstantiation) {
  Graph g;
  g.add("/virtual/tpl/owning.cpp",
        "#include <list>\n"
        "template <typename Tcnt> struct owning : public Tcnt {\n"
        "  typedef typename Tcnt::iterator iterator;\n"
        "  ~owning() { for (iterator i = this->begin(); i != this->end(); ++i) delete *i; }\n"
        "};\n"
        "struct node { int v; ~node(); };\n"
        "node::~node() { v = 0; }\n"
        "int use() { owning<std::list<node *>> h; h.push_back(new node{1});\n"
        "  return h.front()->v; }\n");
  g.scan();
  EXPECT_EQ(g.names("SELECT g.name FROM calls c JOIN functions f ON f.id = c.caller JOIN "
                    "functions g ON g.id = c.callee WHERE f.name LIKE '%~owning%' AND "
                    "c.kind = 'dtor'"),
            (Names{"node::~node"}));
  EXPECT_EQ(g.names("SELECT g.name FROM calls c JOIN functions f ON f.id = c.caller JOIN "
                    "functions g ON g.id = c.callee WHERE f.name = 'use' AND c.kind = 'dtor'"),
            (Names{"owning::~owning<Tcnt>"}));
}

// A class without a definition where it is deleted or declared names no destructor: no
// edge, no crash (a forward-declared class, a pointer to a class template declared but never
// defined, a dependent local in a pattern never instantiated).
TEST(Templates, IncompleteAndDependentClassesNameNoDestructor) {
  Graph g;
  g.add("/virtual/tpl/incomplete.cpp",
        "struct opaque;\n"
        "void drop(opaque *p) { delete p; }\n"
        "template <class T> struct box;\n"
        "template <class T> void drop_box(box<T> *b) { delete b; }\n"
        "template <class T> struct cell { T v; };\n"
        "template <class T> void never(T *p) { cell<T> c{*p}; delete p; (void)c; }\n");
  g.scan();
  EXPECT_EQ(g.scalar("SELECT COUNT(*) FROM calls WHERE kind = 'dtor'"), 0);
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 1"),
            (Names{"drop", "drop_box", "never"}));
}

// Constructors and destructors of class templates and dependent member calls: the pattern
// holds the code, its instantiations the callees. A class template's constructor and
// destructor are named as Clang prints them in the pattern (`holder::holder<T>`).
TEST(Templates, ClassTemplateLifetimesAndDependentCallsReachTheirCallees) {
  Graph g;
  g.add("/virtual/tpl/lifetime.cpp",
        "struct res { res(); ~res(); int get() const; };\n"
        "res::res() {}\nres::~res() {}\nint res::get() const { return 1; }\n"
        "template <class T> struct holder { T *p; holder() : p(new T) {}\n"
        "  ~holder() { delete p; } int peek() const { return p->get(); } };\n"
        "template <class C> int sum_all(const C &c) { int s = 0;\n"
        "  for (const auto &x : c) s += x.get(); return s; }\n"
        "int run() { holder<res> h; res a[2]; return h.peek() + sum_all(a); }\n");
  g.scan();
  EXPECT_EQ(g.callees("run", "ctor"), (Names{"holder::holder<T>", "res::res"}));
  EXPECT_EQ(g.callees("run", "dtor"), (Names{"holder::~holder<T>"}));
  EXPECT_EQ(g.callees("holder::holder<T>", "ctor"), (Names{"res::res"}));
  EXPECT_EQ(g.callees("holder::~holder<T>", "dtor"), (Names{"res::~res"}));
  EXPECT_EQ(g.callees("holder::peek", "member"), (Names{"res::get"}));
  EXPECT_EQ(g.callees("sum_all", "member"), (Names{"res::get"}));
}

// One unit can never take the scan down (docs/instrumenter.md, "A unit that crashes"): a
// crash planted in one unit's walk is caught, counted, named with its signal and recorded
// in the workspace, and the other units are scanned.
TEST(CrashRecovery, APlantedCrashSkipsItsUnitAndTheScanGoesOn) {
  Graph g;
  g.add("/virtual/crash/a.cpp", "int leaf(int x) { return x + 1; }\n");
  g.add("/virtual/crash/b.cpp", "int leaf(int x);\nint mid(int x) { return leaf(x); }\n");
  g.add("/virtual/crash/c.cpp", "int mid(int x);\nint top(int x) { return mid(x) * 2; }\n");
  ::setenv("VPROF_TESTING_CRASH_UNIT", "crash/b.cpp", 1);
  instr::ScanStats st = instr::scan(g.db, g.cdb, g.opt);
  ::unsetenv("VPROF_TESTING_CRASH_UNIT");
  EXPECT_EQ(st.tus, 3);
  EXPECT_EQ(st.failed, 1);
  EXPECT_EQ(st.crashed, 1);
  ASSERT_EQ(st.skipped.size(), 1u);
  EXPECT_EQ(st.skipped[0].file, "/virtual/crash/b.cpp");
  EXPECT_EQ(st.skipped[0].reason, "crashed (signal 11, SIGSEGV) in the scan");
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 1"), (Names{"leaf", "top"}));
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 0"), (Names{"mid"}));
  const auto rows = ws::skipped_units(g.db);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].file, "/virtual/crash/b.cpp");
  // a scan without the crash clears the record
  ASSERT_EQ(instr::scan(g.db, g.cdb, g.opt).failed, 0);
  EXPECT_TRUE(ws::skipped_units(g.db).empty());
  EXPECT_EQ(g.names("SELECT name FROM functions WHERE defined = 1"), (Names{"leaf", "mid", "top"}));
}
