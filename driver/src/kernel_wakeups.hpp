// The kernel wake-up recorder (vprof-sched) the driver starts beside a workload: found
// beside vprof, checked once per invocation, attached to the workload's first process
// before it runs, stopped after it. Whatever goes wrong with the recorder, the workload
// runs exactly as it would without it (docs/cli.md, "Kernel wake-ups").
#pragma once

#include "commands.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace vprof::driver {

// Where vprof-sched is: $VPROF_SCHED, else beside this vprof (installed layout), else the
// build tree's recorder/ folder. Nothing when none exists; `looked` then says where it looked.
std::optional<std::filesystem::path> find_recorder(std::string &looked);

// One vprof invocation's recorder: `vprof run` uses it for its one workload, `vprof loop`
// for every iteration's, so that "cannot record here" is said once per invocation.
class KernelWakeups {
public:
  explicit KernelWakeups(const Context &ctx);
  ~KernelWakeups(); // a recorder still running is killed (an exception left the workload)
  KernelWakeups(const KernelWakeups &) = delete;
  KernelWakeups &operator=(const KernelWakeups &) = delete;

  // Before a workload starts: whether a recorder will attach to it. The first call finds
  // vprof-sched and runs `vprof-sched --check`. When it cannot record: with "auto" prints
  // the one warning (why, what is lost, the fix) and answers false from then on; with "on"
  // throws EnvironmentError. "off": false, nothing said.
  bool prepare();
  // ProcessOptions::before_exec of the workload: starts the recorder on `pid` (held before
  // exec) writing `trace_dir`/sched.vpk and waits for its ready byte (timeout). A failure
  // warns once and returns with "auto" (the workload then runs unrecorded), throws
  // EnvironmentError with "on".
  void attach(int pid, const std::filesystem::path &trace_dir);
  // After the workload ended: SIGTERM to the recorder and a wait for it (timeout, then
  // SIGKILL, said). Warns when it failed or wrote no file; with "on" that throws
  // EnvironmentError. Returns the run's status for its summary, e.g. "kernel wake-ups
  // recorded (sched.vpk, 12 KiB)".
  std::string finish();

private:
  const Context &ctx_;
  std::chrono::milliseconds timeout_;
  std::filesystem::path binary_;
  bool checked_ = false, usable_ = false;
  int pid_ = -1; // the running recorder
  std::filesystem::path out_, log_;
  std::string status_; // of the last workload, for its summary

  // "auto": the one warning of this invocation, and no recorder from then on; "on": throws.
  void cannot_record(const std::string &why, const std::string &fix);
  void kill_recorder();
};

} // namespace vprof::driver
