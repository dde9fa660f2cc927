// The driver's subcommand table and what every subcommand handler receives.
#pragma once

#include "config.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace vprof::driver {

// Exit codes of every subcommand (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,          // done
  kExitFailed = 1,      // the work failed: build or workload failed, nothing to analyse
  kExitUsage = 2,       // bad command line or vprof.toml
  kExitBadInput = 3,    // missing workspace, unreadable compile database, corrupt trace
  kExitInternal = 4,    // a bug in vprof
  kExitEnvironment = 5, // the machine cannot do what the settings require (EnvironmentError)
};

// Shared state of one invocation: the merged configuration and output streams.
struct Context {
  Config cfg;
  bool verbose = false;
  bool quiet = false;
  std::ostream *out = nullptr;            // results
  std::ostream *err = nullptr;            // progress and diagnostics
  std::vector<std::string> explicit_keys; // config keys given on the command line
  // Prints a progress line to stderr unless --quiet.
  void progress(const std::string &line) const;
};

// One subcommand: `setup` declares its flags on its CLI11 subcommand (binding them to
// statics or to ctx.cfg); `run` does the work and returns an ExitCode.
struct Command {
  const char *name;
  const char *help;
  void (*setup)(CLI::App &sub, Context &ctx);
  int (*run)(Context &ctx);
};

// The table, in the order `vprof --help` lists it.
const std::vector<Command> &commands();

// Flags for config keys, shared by the subcommands that use them.
void add_plan_flags(CLI::App &sub, Context &ctx);    // --compile-commands --root --depth
void add_analyze_flags(CLI::App &sub, Context &ctx); // --bootstrap --seed --min-intervals
void add_loop_flags(CLI::App &sub, Context &ctx);    // --k --iterations --build --workload
// --kernel-wakeups --sched-ring-mb --stream-cap-mb: how a workload is recorded (run, loop)
void add_record_flags(CLI::App &sub, Context &ctx);

// The trace directory (or file) a reading subcommand works on: `given`, or the newest
// directory under .vprof/traces when empty. InputError when there is none.
std::filesystem::path trace_target(const Context &ctx, const std::string &given);

} // namespace vprof::driver
