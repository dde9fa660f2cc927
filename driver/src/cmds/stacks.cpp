// `vprof stacks`: the sampled stacks of a trace (stacks.vpk), symbolized: a summary of where
// the traced threads ran, blocked and woke others, or folded stacks for a flame graph.
#include "cmds/common.hpp"
#include "commands.hpp"

#include "vprof/stacks_reader.hpp"
#include "vprof/symbols.hpp"
#include "vprof/trace_reader.hpp"

#include <ostream>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

std::string g_stacks_target;
std::string g_stacks_folded;
std::size_t g_stacks_top = 10;

std::vector<std::uint8_t> folded_kinds(const std::string &which) {
  if (which == "cpu")
    return {VPROF_STACKS_ONCPU};
  if (which == "sleep")
    return {VPROF_STACKS_SLEEP};
  if (which == "wake")
    return {VPROF_STACKS_WAKER};
  return {VPROF_STACKS_ONCPU, VPROF_STACKS_SLEEP, VPROF_STACKS_WAKER};
}

} // namespace

void setup_stacks(CLI::App &sub, Context &) {
  sub.add_option("trace", g_stacks_target,
                 "a trace directory (default: the newest under .vprof/traces)");
  sub.add_option("--top", g_stacks_top, "chains shown per kind of sample (default 10)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--folded", g_stacks_folded,
                 "print folded stacks (\"outer;...;inner count\", for flamegraph.pl or speedscope) "
                 "of the samples of one kind: cpu, sleep, wake or all")
      ->check(CLI::IsMember({"cpu", "sleep", "wake", "all"}));
  sub.footer(
      "The kernel recorder (vprof-sched, docs/recorder.md) samples the user stacks of the\n"
      "traced threads while they run (sample_hz in vprof.toml) and takes them when a thread\n"
      "blocks and when it wakes another, into stacks.vpk in the trace directory. This prints\n"
      "them symbolized (the processes' <pid>.maps, DWARF or the symbol tables): the most\n"
      "frequent chains of functions on CPU, at sleeps and at wake-ups, innermost first. Code\n"
      "built without frame pointers loses frames (vprof-cc adds -fno-omit-frame-pointer).\n"
      "A trace without stacks.vpk (no recorder, or no privilege) is an error (exit 3).");
}

int run_stacks(Context &ctx) {
  const fs::path dir = trace_target(ctx, g_stacks_target);
  const fs::path file = dir / VPROF_STACKS_FILE_NAME;
  if (!fs::exists(file))
    throw InputError(file.string() +
                     ": no sampled stacks in this trace (the kernel recorder did not run: "
                     "kernel_wakeups = \"off\", or no privilege; see `vprof-sched --check`)");
  trace::StacksFile stacks;
  try {
    stacks = trace::read_stacks(file);
  } catch (const trace::TraceError &e) {
    throw InputError(e.what());
  }
  if (!stacks.warning.empty())
    ctx.progress(stacks.warning);
  const symbols::SymbolizedStacks sym = symbols::symbolize(stacks, dir);
  if (!g_stacks_folded.empty())
    *ctx.out << symbols::render_folded(stacks, sym, folded_kinds(g_stacks_folded));
  else
    *ctx.out << symbols::render_summary(stacks, sym, g_stacks_top);
  return kExitOk;
}

} // namespace vprof::driver
