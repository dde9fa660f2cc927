// The subcommand table and the flags shared by several subcommands.
#include "commands.hpp"

namespace vprof::driver {

// Handlers live in cmd_basic.cpp and, for the profiling subcommands, one file each in cmds/.
void setup_config(CLI::App &, Context &);
int run_config(Context &);
void setup_run(CLI::App &, Context &);
int run_run(Context &);
void setup_dump(CLI::App &, Context &);
int run_dump(Context &);
void setup_clean(CLI::App &, Context &);
int run_clean(Context &);

#ifdef VPROF_HAVE_PIPELINE
void setup_init(CLI::App &, Context &);
int run_init(Context &);
void setup_instrument(CLI::App &, Context &);
int run_instrument(Context &);
void setup_export(CLI::App &, Context &);
int run_export(Context &);
void setup_analyze(CLI::App &, Context &);
int run_analyze(Context &);
void setup_report(CLI::App &, Context &);
int run_report(Context &);
void setup_expand(CLI::App &, Context &);
int run_expand(Context &);
void setup_build(CLI::App &, Context &);
int run_build(Context &);
void setup_loop(CLI::App &, Context &);
int run_loop(Context &);
void setup_stacks(CLI::App &, Context &);
int run_stacks(Context &);
#endif

const std::vector<Command> &commands() {
  static const std::vector<Command> table = [] {
    std::vector<Command> t;
#ifdef VPROF_HAVE_PIPELINE
    // the profiling subcommands (they need the instrumenter and the analyzer)
    t = {
        {"init", "create the workspace, scan the call graph, write the first plan", setup_init,
         run_init},
        {"instrument", "print one source file instrumented per the plan", setup_instrument,
         run_instrument},
        {"export", "write the instrumented tree to a folder, or print it as a diff", setup_export,
         run_export},
        {"analyze", "critical paths, variance trees and ranked factors of a trace", setup_analyze,
         run_analyze},
        {"report", "print the stored report of an analysed iteration", setup_report, run_report},
        {"expand", "add the top-k factors' callees to the next plan", setup_expand, run_expand},
        {"build", "build the program with one plan's probes (default: the newest)", setup_build,
         run_build},
        {"loop", "build, run, analyze, expand until the top factors are stable", setup_loop,
         run_loop},
        {"stacks", "print a trace's sampled stacks: where threads ran, blocked, woke others",
         setup_stacks, run_stacks},
    };
#endif
    std::vector<Command> basic = {
        {"run", "run a command with tracing on; its trace goes to .vprof/traces/", setup_run,
         run_run},
        {"config", "show the effective settings (vprof.toml merged with flags) and every key",
         setup_config, run_config},
        {"dump", "print a trace as text, one record per line", setup_dump, run_dump},
        {"clean", "remove traces (and with --all the whole workspace)", setup_clean, run_clean},
    };
    t.insert(t.end(), basic.begin(), basic.end());
    return t;
  }();
  return table;
}

namespace {
// Records that a config key was given on the command line (for `vprof config`).
CLI::Option *mark(CLI::Option *opt, Context &ctx, const char *key) {
  opt->each([&ctx, key](const std::string &) { ctx.explicit_keys.push_back(key); });
  return opt;
}
} // namespace

void add_plan_flags(CLI::App &sub, Context &ctx) {
  mark(sub.add_option("--compile-commands", ctx.cfg.compile_commands,
                      "compile_commands.json or its folder [compile_commands]"),
       ctx, "compile_commands");
  mark(sub.add_option("--root", ctx.cfg.roots,
                      "function the first plan starts from, repeatable [roots] "
                      "(default: the functions with interval annotations)"),
       ctx, "roots");
  mark(sub.add_option("--depth", ctx.cfg.depth, "call-graph depth below the roots [depth]")
           ->check(CLI::Range(0, 1000)),
       ctx, "depth");
}

void add_analyze_flags(CLI::App &sub, Context &ctx) {
  mark(sub.add_option("--bootstrap", ctx.cfg.bootstrap, "bootstrap resamples [bootstrap]")
           ->check(CLI::Range(0, 100000)),
       ctx, "bootstrap");
  mark(sub.add_option("--seed", ctx.cfg.seed, "bootstrap seed [seed]"), ctx, "seed");
  mark(sub.add_option("--ranking", ctx.cfg.ranking,
                      "net: factors by net share, places by contribution, the deeper term "
                      "first along one observed calling chain (default); vprofiler: both by "
                      "static specificity x share, VProfiler's score [ranking]")
           ->check(CLI::IsMember({"net", "vprofiler"})),
       ctx, "ranking");
  mark(sub.add_option("--min-intervals", ctx.cfg.min_intervals,
                      "fewer intervals is an error [min_intervals]")
           ->check(CLI::Range(1, 1000000000)),
       ctx, "min_intervals");
}

void add_loop_flags(CLI::App &sub, Context &ctx) {
  mark(sub.add_option("-k,--k", ctx.cfg.k, "top-k factors expanded per iteration [k]")
           ->check(CLI::Range(1, 1000)),
       ctx, "k");
  mark(sub.add_option("--iterations", ctx.cfg.iterations, "iteration budget [iterations]")
           ->check(CLI::Range(1, 1000)),
       ctx, "iterations");
  mark(sub.add_option("--prune", ctx.cfg.prune,
                      "final plan: drop functions whose places stay below this fraction of "
                      "Var(L), then measure it once more; 0: no final plan [prune]")
           ->check(CLI::Range(0.0, 0.999)),
       ctx, "prune");
  mark(sub.add_option("--budget", ctx.cfg.budget,
                      "exploration plans: probe cost per interval as a fraction of the mean "
                      "latency [budget]")
           ->check(CLI::Range(0.0001, 1.0)),
       ctx, "budget");
  mark(sub.add_option("--final-budget", ctx.cfg.final_budget,
                      "the final plan's probe cost per interval as a fraction of the mean "
                      "latency, or of the machine's capacity per interval (cores x span / "
                      "intervals) when that is less [final_budget]")
           ->check(CLI::Range(0.0001, 1.0)),
       ctx, "final_budget");
  mark(sub.add_option("--label", ctx.cfg.label,
                      "expand on the intervals of this label only [label]"),
       ctx, "label");
  mark(sub.add_option("--exclude-labels", ctx.cfg.exclude_labels,
                      "expand on all labelled intervals but these, repeatable [exclude_labels]"),
       ctx, "exclude_labels");
  mark(sub.add_flag("--keep-traces", ctx.cfg.keep_traces,
                    "keep every iteration's trace (default: the newest two) [keep_traces]"),
       ctx, "keep_traces");
  mark(sub.add_flag("--allow-fallback", ctx.cfg.allow_fallback,
                    "go on when a planned file was built uninstrumented [allow_fallback]"),
       ctx, "allow_fallback");
  mark(sub.add_option("--build", ctx.cfg.build, "shell command that builds the program [build]"),
       ctx, "build");
  mark(sub.add_option("--workload", ctx.cfg.workload,
                      "shell command that runs the workload [workload]"),
       ctx, "workload");
}

void add_record_flags(CLI::App &sub, Context &ctx) {
  mark(sub.add_option("--kernel-wakeups", ctx.cfg.kernel_wakeups,
                      "record the kernel's wake-ups beside the workload (vprof-sched): auto, "
                      "on (an error when it cannot), off [kernel_wakeups]")
           ->check(CLI::IsMember({"auto", "on", "off"})),
       ctx, "kernel_wakeups");
  mark(sub.add_option("--sched-ring-mb", ctx.cfg.sched_ring_mb,
                      "the kernel wake-up recorder's ring buffer in MiB [sched_ring_mb]")
           ->check(CLI::Range(1, 4096)),
       ctx, "sched_ring_mb");
  mark(sub.add_option("--sample-hz", ctx.cfg.sample_hz,
                      "the kernel recorder's on-CPU stack samples per second and CPU, 0: none "
                      "[sample_hz]")
           ->check(CLI::Range(0, 10000)),
       ctx, "sample_hz");
  mark(sub.add_option("--stream-cap-mb", ctx.cfg.stream_cap_mb,
                      "size limit of one thread's trace stream in MiB, 0: none (the workload's "
                      "VPROF_MAX_THREAD_MB) [stream_cap_mb]")
           ->check(CLI::Range(0, 1000000))
           ->each([&ctx](const std::string &) { ctx.cfg.stream_cap_from = "--stream-cap-mb"; }),
       ctx, "stream_cap_mb");
}

} // namespace vprof::driver
