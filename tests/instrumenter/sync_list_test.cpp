// The instrumenter leaves exactly the runtime's interposed synchronization calls (the one
// list, <vprof/sync_functions.def>) without a call-site probe: a C function calling every
// function of the list, plus synchronization calls the runtime does not interpose, is
// rewritten and only the latter are timed. The source is generated from the list, so an
// entry added there is checked here (an unknown shape does not compile: add its arguments).
#include <vprof/instrumenter.hpp>
#include <vprof/planner.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace vprof;
namespace fs = std::filesystem;

// The arguments of a call of each shape, on the locals of the generated function.
constexpr const char *mutex_args = "&m";
constexpr const char *mutex_timed_args = "&m, &ts";
constexpr const char *mutex_clock_args = "&m, CLOCK_MONOTONIC, &ts";
constexpr const char *cond_args = "&c";
constexpr const char *cond_wait_args = "&c, &m";
constexpr const char *cond_timed_args = "&c, &m, &ts";
constexpr const char *cond_clock_args = "&c, &m, CLOCK_MONOTONIC, &ts";
constexpr const char *rw_args = "&rw";
constexpr const char *rw_timed_args = "&rw, &ts";
constexpr const char *rw_clock_args = "&rw, CLOCK_MONOTONIC, &ts";
constexpr const char *sem_args = "&s";
constexpr const char *sem_timed_args = "&s, &ts";
constexpr const char *sem_clock_args = "&s, CLOCK_MONOTONIC, &ts";

struct Call {
  std::string name, args;
  std::string text() const { return name + "(" + args + ")"; }
};

const std::vector<Call> &interposed() {
  static const std::vector<Call> calls = {
#define VPROF_SYNC_FUNCTION(shape, name, glibc_version) {#name, shape##_args},
#include <vprof/sync_functions.def>
#undef VPROF_SYNC_FUNCTION
  };
  return calls;
}

// Synchronization calls of the same headers that the runtime does not interpose (they
// never block, or block where no wake-up edge is recorded): each keeps its probe.
const std::vector<Call> &not_interposed() {
  static const std::vector<Call> calls = {
      {"pthread_mutex_init", "&m, 0"}, {"pthread_mutex_consistent", "&m"},
      {"pthread_cond_init", "&c, 0"},  {"pthread_rwlock_init", "&rw, 0"},
      {"pthread_spin_lock", "&sp"},    {"pthread_barrier_wait", "&b"},
      {"sem_getvalue", "&s, &r"}};
  return calls;
}

std::string source() {
  std::string src = "#define _GNU_SOURCE\n#include <pthread.h>\n#include <semaphore.h>\n"
                    "#include <time.h>\n"
                    "int use_all(void) {\n"
                    "  pthread_mutex_t m; pthread_cond_t c; pthread_rwlock_t rw; sem_t s;\n"
                    "  pthread_spinlock_t sp; pthread_barrier_t b;\n"
                    "  struct timespec ts = {0, 0};\n"
                    "  int r = 0;\n";
  for (const auto *list : {&interposed(), &not_interposed()})
    for (const Call &c : *list)
      src += "  r += " + c.text() + ";\n";
  return src + "  return r;\n}\n";
}

TEST(SyncList, ExactlyTheInterposedCallsGoUntimed) {
  ASSERT_GE(interposed().size(), 20u); // the list was read
  const std::string file = "/virtual/sync_list.c";
  ws::Database db{":memory:"};
  instr::CompileDb cdb;
  instr::ParseOptions opt;
  instr::CompileCommand cmd;
  cmd.file = file;
  cmd.directory = fs::temp_directory_path().string();
  cmd.args = {"cc", "-c", file};
  cdb.add(cmd);
  opt.quiet = true;
  opt.virtual_files[file] = source();
  ASSERT_EQ(instr::scan(db, cdb, opt).failed, 0);
  planner::FirstPlanOptions po;
  po.roots = {"use_all"};
  ASSERT_EQ(planner::first_plan(db, po), 1);
  auto r = instr::rewrite(db, cmd, 0, opt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(r.call_sites, static_cast<int>(not_interposed().size())) << r.output;
  for (const Call &c : interposed())
    EXPECT_NE(r.output.find("  r += " + c.text() + ";\n"), std::string::npos)
        << c.name << " is interposed by the runtime but got a call-site probe:\n"
        << r.output;
  for (const Call &c : not_interposed())
    EXPECT_NE(r.output.find("); " + c.text() + "; });\n"), std::string::npos)
        << c.name << " is not interposed by the runtime but got no call-site probe:\n"
        << r.output;
}

} // namespace
