// Unit tests of the instrumenter library on in-memory code: scan (call graph, heights,
// virtual edges), plan (roots + depth), rewrite (probe forms, refusals, stable site ids),
// compile database loading and the diff writer.
#include <vprof/instrumenter.hpp>
#include <vprof/planner.hpp>

#include <gtest/gtest.h>

#include <fstream>

namespace {

using namespace vprof;
namespace fs = std::filesystem;

// An in-memory workspace plus one in-memory source file.
struct Fixture {
  ws::Database db{":memory:"};
  instr::CompileDb cdb;
  instr::ParseOptions opt;
  instr::CompileCommand cmd;

  Fixture(const std::string &file, const std::string &code, std::vector<std::string> flags = {}) {
    cmd.file = file;
    cmd.directory = fs::temp_directory_path().string(); // ClangTool chdirs here
    cmd.args = {file.ends_with(".c") ? "cc" : "c++"};
    for (auto &f : flags)
      cmd.args.push_back(f);
    cmd.args.push_back("-c");
    cmd.args.push_back(file);
    cdb.add(cmd);
    opt.quiet = true;
    opt.virtual_files[file] = code;
  }
  void scan() { ASSERT_EQ(instr::scan(db, cdb, opt).failed, 0); }
  instr::RewriteResult rewrite(int iteration = 0) {
    return instr::rewrite(db, cmd, iteration, opt);
  }
  std::int64_t scalar(const std::string &sql) {
    auto st = db.prepare(sql);
    return st.step() ? st.int64(0) : -1;
  }
};

TEST(Rewriter, CCallInConditionUsesStatementExpression) {
  Fixture fx("/virtual/a.c", "int f(int x) { return x; }\n"
                             "int g(int x) {\n  if (f(x) > 1)\n    return f(2);\n  return 0;\n}\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"g"};
  ASSERT_EQ(planner::first_plan(fx.db, po), 1);
  auto r = fx.rewrite();
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.changed);
  EXPECT_EQ(r.body_sites, 1);
  EXPECT_EQ(r.call_sites, 2);
  EXPECT_NE(r.output.find("int g(int x) { VPROF_PROBE_SCOPE(1);"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("if (__extension__({ VPROF_PROBE_SCOPE(2); f(x); }) > 1)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("return __extension__({ VPROF_PROBE_SCOPE(3); f(2); });"),
            std::string::npos);
  EXPECT_EQ(r.output.rfind("#line 1 \"/virtual/a.c\"", 0), 0u) << "output must open with #line";
  EXPECT_NE(r.output.find("#include <vprof/probe.h>"), std::string::npos);
  // f itself is not planned: no body probe there.
  EXPECT_NE(r.output.find("int f(int x) { return x; }"), std::string::npos);
}

TEST(Rewriter, CxxUsesLambdaFormAndKeepsTemplatesAsPatterns) {
  Fixture fx("/virtual/b.cpp",
             "struct S { int v; int get() const { return v; } };\n"
             "template <class T> int use(const T &t) { return t.get() + 1; }\n"
             "int main() { S s{1}; return use(s) + use(S{2}); }\n",
             {"-std=c++17"});
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"use"};
  ASSERT_EQ(planner::first_plan(fx.db, po), 1);
  auto r = fx.rewrite();
  ASSERT_TRUE(r.ok) << r.error;
  // One body probe for the template pattern, not one per instantiation.
  EXPECT_EQ(r.body_sites, 1);
  EXPECT_NE(r.output.find(
                "return ::vprof::rt::call(2, [&]() -> decltype(auto) { return t.get(); }) + 1;"),
            std::string::npos)
      << r.output;
}

TEST(Rewriter, RefusesMacrosAndUnevaluatedOperandsLoudly) {
  Fixture fx("/virtual/c.c",
             "int f(void) { return 1; }\n#define CALL() (f() + 1)\n"
             "int g(void) {\n  int a = CALL();\n  int b = sizeof(f());\n  return a + b;\n}\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"g"};
  planner::first_plan(fx.db, po);
  auto r = fx.rewrite();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.call_sites, 0);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[0].line, 4u);
  EXPECT_NE(r.skipped[0].reason.find("macro expansion"), std::string::npos);
  EXPECT_EQ(r.skipped[0].target, instr::Diagnostic::Target::call);
  EXPECT_EQ(r.skipped[0].subject, "f");
  EXPECT_EQ(r.skipped[1].line, 5u);
  EXPECT_NE(r.skipped[1].reason.find("unevaluated"), std::string::npos);
}

// A call that is all a macro invocation written in the file expands to is timed around
// the invocation (docs/instrumenter.md, "Calls behind macros"); the site is positioned at
// the invocation, where the scan put the call's edge.
TEST(Rewriter, TimesACallBehindAFunctionLikeMacroAtItsInvocation) {
  Fixture fx("/virtual/m.c", "int sync_fd(int fd);\n#define xx_fsync(fd) sync_fd(fd)\n"
                             "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
                             "int g(int fd) {\n  if (xx_fsync(fd) != 0)\n    return 1;\n"
                             "  return MAX(sync_fd(fd), 2);\n}\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"g"};
  planner::first_plan(fx.db, po);
  auto r = fx.rewrite();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.call_sites, 1);
  EXPECT_NE(r.output.find("if (__extension__({ VPROF_PROBE_SCOPE(2); xx_fsync(fd); }) != 0)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(fx.scalar("SELECT line * 100 + col FROM sites WHERE kind = 'call'"), 507)
      << "the invocation's position";
  EXPECT_EQ(fx.scalar("SELECT COUNT(*) FROM calls c JOIN functions f ON f.id = c.callee "
                      "WHERE f.name = 'sync_fd' AND c.line = 5 AND c.col = 7"),
            1)
      << "the scan's edge of the same call";
  // MAX expands its argument twice: that call is refused, by name, once per expansion.
  ASSERT_EQ(r.skipped.size(), 2u);
  for (const auto &d : r.skipped) {
    EXPECT_EQ(d.line, 7u);
    EXPECT_EQ(d.subject, "sync_fd");
    EXPECT_NE(d.reason.find("call in a macro argument"), std::string::npos) << d.reason;
  }
}

TEST(Rewriter, NamesRefusedFunctions) {
  Fixture fx("/virtual/n.c", "#define DEFINE(name) int name(void) { return 1; }\n"
                             "DEFINE(from_macro)\nint g(void) { return from_macro(); }\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"from_macro"};
  planner::first_plan(fx.db, po);
  auto r = fx.rewrite();
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].target, instr::Diagnostic::Target::function);
  EXPECT_EQ(r.skipped[0].subject, "from_macro");
  EXPECT_NE(r.skipped[0].reason.find("body comes from a macro"), std::string::npos);
}

TEST(Rewriter, SiteIdsAreStableAcrossRewritesAndIterations) {
  Fixture fx("/virtual/d.c", "int h(int x) { return x; }\nint f(int x) { return h(x); }\n"
                             "int g(int x) { return f(x) + h(x); }\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"g"};
  planner::first_plan(fx.db, po);
  auto first = fx.rewrite();
  auto again = fx.rewrite();
  ASSERT_TRUE(first.ok && again.ok);
  EXPECT_EQ(first.output, again.output);
  std::int64_t sites = fx.scalar("SELECT count(*) FROM sites");
  EXPECT_EQ(sites, 3);
  // Iteration 1 adds f and h: g's sites keep their ids, the new ones follow in source order.
  po.iteration = 1;
  po.depth = 1;
  planner::first_plan(fx.db, po);
  ASSERT_EQ(instr::current_iteration(fx.db), 1);
  auto second = fx.rewrite(1);
  ASSERT_TRUE(second.ok);
  EXPECT_NE(second.output.find("int g(int x) { VPROF_PROBE_SCOPE(1);"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("int h(int x) { VPROF_PROBE_SCOPE(4);"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("int f(int x) { VPROF_PROBE_SCOPE(5);"), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("__extension__({ VPROF_PROBE_SCOPE(2); f(x); })"),
            std::string::npos);
  EXPECT_EQ(fx.scalar("SELECT max(id) FROM sites"), fx.scalar("SELECT count(*) FROM sites"));
}

TEST(Rewriter, FileOutsidePlanIsUnchanged) {
  Fixture fx("/virtual/e.c", "int f(void) { return 1; }\n");
  fx.scan();
  fx.db.exec("INSERT INTO functions(usr, name, defined) VALUES('c:@F@other', 'other', 1)");
  fx.db.exec("INSERT INTO plans(iteration, function, reason) VALUES(0, (SELECT id FROM functions "
             "WHERE name = 'other'), 'user')");
  auto r = fx.rewrite();
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(r.output.empty());
}

TEST(Scan, HeightsCondenseRecursionAndVirtualCallsReachOverrides) {
  Fixture fx("/virtual/f.cpp",
             "int leaf() { return 1; }\n"
             "int odd(int);\n"
             "int even(int n) { return n ? odd(n - 1) : leaf(); }\n"
             "int odd(int n) { return n ? even(n - 1) : 0; }\n"
             "struct B { virtual int run() { return 0; } virtual ~B() = default; };\n"
             "struct D : B { int run() override { return even(2); } };\n"
             "int go(B &b) { return b.run(); }\n"
             "int main() { D d; return go(d); }\n",
             {"-std=c++17"});
  fx.scan();
  auto height = [&](const std::string &name) {
    return fx.scalar("SELECT height FROM functions WHERE name = '" + name + "'");
  };
  EXPECT_EQ(height("leaf"), 0);
  EXPECT_EQ(height("even"), 1);
  EXPECT_EQ(height("odd"), 1); // same SCC as even
  EXPECT_EQ(height("D::run"), 2);
  EXPECT_EQ(height("go"), 3); // through the override
  EXPECT_EQ(fx.scalar("SELECT count(*) FROM calls c JOIN functions f ON f.id = c.callee "
                      "WHERE f.name = 'D::run' AND c.kind = 'virtual'"),
            1);
  // Plan: go at depth 2 reaches B::run, D::run and even.
  planner::FirstPlanOptions po;
  po.roots = {"go"};
  po.depth = 2;
  EXPECT_EQ(planner::first_plan(fx.db, po), 4);
  EXPECT_EQ(fx.scalar("SELECT count(*) FROM plans WHERE reason = 'root'"), 1);
}

TEST(Scan, AnnotatedFunctionsAreRootsByDefault) {
  Fixture fx("/virtual/g.c",
             "#include <stdint.h>\n#include <vprof/vprof.h>\n"
             "int work(void) { return 2; }\n"
             "int handle(void) { uint64_t iv; VPROF_INTERVAL_BEGIN(iv, \"x\"); int r = work(); "
             "VPROF_INTERVAL_END(iv); return r; }\n");
  fx.scan();
  EXPECT_EQ(fx.scalar("SELECT annotated FROM functions WHERE name = 'handle'"), 1);
  EXPECT_EQ(fx.scalar("SELECT annotated FROM functions WHERE name = 'work'"), 0);
  planner::FirstPlanOptions po;
  EXPECT_EQ(planner::first_plan(fx.db, po), 1);
  po.roots = {"nonexistent"};
  EXPECT_THROW(planner::first_plan(fx.db, po), planner::PlanError);
}

TEST(CompileDb, DropsCc1JobsAndDuplicates) {
  fs::path dir = fs::temp_directory_path() / ("vprof-cdb-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "compile_commands.json")
      << R"([{"directory": "/src", "file": "a.c", "arguments": ["cc", "-c", "a.c"]},
             {"directory": "/src", "file": "a.c", "arguments": ["cc", "-DX", "-c", "a.c"]},
             {"directory": "/src", "file": "a.c", "command": "clang -cc1 -emit-obj a.c"},
             {"directory": "/src", "file": "b.c", "command": "cc -c b.c"}])";
  auto db = instr::CompileDb::load(dir);
  ASSERT_EQ(db.commands().size(), 2u);
  EXPECT_EQ(db.commands()[0].args, (std::vector<std::string>{"cc", "-c", "a.c"}));
  EXPECT_EQ(db.commands()[1].file, "/src/b.c");
  EXPECT_THROW(instr::CompileDb::load(dir / "missing.json"), std::runtime_error);
  fs::remove_all(dir);
}

TEST(Diff, UnifiedDiffShowsInsertedAndChangedLines) {
  std::string a = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\n";
  std::string b = "new\nl1\nl2\nl3\nl4\nL5\nl6\nl7\nl8\n";
  std::string d = instr::unified_diff(a, b, "x.c");
  EXPECT_EQ(
      d,
      "--- a/x.c\n+++ b/x.c\n@@ -1,8 +1,9 @@\n+new\n l1\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n");
  EXPECT_EQ(instr::unified_diff(a, a, "x.c"), "");
}

TEST(Scan, GccOnlyFlagsDoNotStopTheParse) {
  Fixture fx("/virtual/h.c", "int f(void) { return 1; }\nint main(void) { return f(); }\n",
             {"-fconserve-stack", "-mindirect-branch=thunk-extern", "-fno-ipa-sra", "-O2"});
  fx.scan();
  EXPECT_EQ(fx.scalar("SELECT count(*) FROM calls"), 1);
}

} // namespace

// A final plan (plans.final = 1, written by `vprof loop`'s planner) times no direct call
// of the program's own functions: a planned callee's body probe times it, a dropped one's
// time stays in the caller. Calls of outside functions keep their probes; a plan that is
// not final keeps every call-site probe.
// A planned callee kept probe-free by the user (no_instrument_function: refused as a whole)
// has no body probe: a final plan times its call sites, listed or not.
TEST(Rewriter, FinalPlanTimesCallsOfAPlannedCalleeWithoutABodyProbe) {
  Fixture fx("/virtual/u.c", "__attribute__((no_instrument_function)) int raw(int x) {\n"
                             "  return x;\n}\n#define RAW(x) raw(x)\n"
                             "int top(int x) { return RAW(x) + 1; }\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"top"};
  po.depth = 1;
  ASSERT_EQ(planner::first_plan(fx.db, po), 2);
  fx.db.exec("INSERT INTO plans(iteration, function, reason, final) SELECT 1, function, "
             "reason, 1 FROM plans WHERE iteration = 0");
  auto fin = fx.rewrite(1);
  ASSERT_TRUE(fin.ok) << fin.error;
  EXPECT_EQ(fin.body_sites, 1) << fin.output; // top; raw is refused
  EXPECT_EQ(fin.call_sites, 1) << fin.output;
  EXPECT_NE(fin.output.find("return __extension__({ VPROF_PROBE_SCOPE(2); RAW(x); }) + 1;"),
            std::string::npos)
      << fin.output;
  ASSERT_EQ(fin.skipped.size(), 1u);
  EXPECT_EQ(fin.skipped[0].target, instr::Diagnostic::Target::function);
  EXPECT_EQ(fin.skipped[0].subject, "raw");
}

TEST(Rewriter, FinalPlanTimesOnlyTheOutsideCallsItLists) {
  Fixture fx("/virtual/f.c",
             "int printf(const char *, ...);\n"
             "int leaf(int x) { return x + 1; }\n"
             "int kept(int x) { return leaf(x) * 2; }\n"
             "int top(int x) {\n  printf(\"%d\", x);\n  return kept(x) + leaf(x);\n}\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"top"};
  po.depth = 1;
  ASSERT_GE(planner::first_plan(fx.db, po), 3); // top, kept, leaf
  auto normal = fx.rewrite(0);
  ASSERT_TRUE(normal.ok) << normal.error;
  EXPECT_EQ(normal.call_sites, 4) << normal.output; // printf, kept, leaf in top; leaf in kept
  fx.db.exec("INSERT INTO plans(iteration, function, reason, final) SELECT 1, p.function, "
             "p.reason, 1 FROM plans p JOIN functions f ON f.id = p.function "
             "WHERE p.iteration = 0 AND f.name IN ('top', 'kept')");
  // printf's place carried nothing: a final plan lists none of its sites, no call is timed
  auto bare = fx.rewrite(1);
  ASSERT_TRUE(bare.ok) << bare.error;
  EXPECT_EQ(bare.body_sites, 2);
  EXPECT_EQ(bare.call_sites, 0) << bare.output;
  EXPECT_NE(bare.output.find("printf(\"%d\", x);"), std::string::npos) << bare.output;
  // listed (its place carried variance): printf is timed, the program's calls still not
  auto printf_site = fx.db.prepare("SELECT id FROM sites WHERE kind = 'call' AND callee_name "
                                   "= 'printf'");
  ASSERT_TRUE(printf_site.step());
  vprof::ws::write_final_sites(fx.db, 1, {printf_site.int64(0)});
  auto fin = fx.rewrite(1);
  ASSERT_TRUE(fin.ok) << fin.error;
  EXPECT_EQ(fin.body_sites, 2);
  EXPECT_EQ(fin.call_sites, 1) << fin.output; // only printf
  EXPECT_NE(fin.output.find("return kept(x) + leaf(x);"), std::string::npos) << fin.output;
  EXPECT_NE(fin.output.find("VPROF_PROBE_SCOPE"), std::string::npos);
}

// A function planned for its body alone (plans.body_only: an outer frame whose calls would
// not fit the budget) gets its body probe and no call-site probe, nor a lambda in it; a
// planned function beside it keeps its call sites.
TEST(Rewriter, ABodyOnlyFunctionGetsNoCallSiteProbes) {
  Fixture fx("/virtual/o.c",
             "int printf(const char *, ...);\n"
             "int leaf(int x) { return x + 1; }\n"
             "int step(int x) { return leaf(x) * 2; }\n"
             "int loop(int x) {\n  printf(\"%d\", x);\n  return step(x) + leaf(x);\n}\n");
  fx.scan();
  planner::FirstPlanOptions po;
  po.roots = {"loop"};
  po.depth = 1;
  ASSERT_GE(planner::first_plan(fx.db, po), 3); // loop, step, leaf
  fx.db.exec("INSERT INTO plans(iteration, function, reason, body_only) SELECT 1, p.function, "
             "p.reason, f.name = 'loop' FROM plans p JOIN functions f ON f.id = p.function "
             "WHERE p.iteration = 0");
  auto r = fx.rewrite(1);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.body_sites, 3) << r.output;
  EXPECT_EQ(r.call_sites, 1) << r.output; // leaf in step only
  EXPECT_NE(r.output.find("printf(\"%d\", x);"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("return step(x) + leaf(x);"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("return __extension__({ VPROF_PROBE_SCOPE("), std::string::npos)
      << r.output;
  // the plan's rows carry the mark: one of them, loop's
  int marked = 0;
  for (const auto &f : vprof::ws::planned_functions(fx.db, 1))
    marked += f.body_only ? 1 : 0;
  EXPECT_EQ(marked, 1);
  // the same functions with every call site: the plan of iteration 0 times all four calls
  auto all = fx.rewrite(0);
  ASSERT_TRUE(all.ok) << all.error;
  EXPECT_EQ(all.call_sites, 4) << all.output;
}
