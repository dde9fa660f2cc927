// Running the user's build and workload commands, and helper processes beside them, from
// the driver.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vprof::driver {

struct ProcessResult {
  int exit_code = 0; // the command's exit status, or 128 + signal
  bool signaled = false;
  int signal = 0;
  double seconds = 0;           // wall time
  std::string describe() const; // "exit code 2" / "killed by signal 9 (Killed)"
};

struct ProcessOptions {
  std::filesystem::path cwd;                // empty: the driver's cwd
  std::map<std::string, std::string> env;   // added to (or replacing in) the environment
  std::optional<std::filesystem::path> log; // stdout+stderr go here instead of the terminal
  // Called with the child's pid after fork while the child is held before exec (it runs
  // nothing of the command yet); the command starts when it returns. If it throws, the
  // held child is killed (the command never ran) and the exception propagates.
  std::function<void(int pid)> before_exec;
};

// Runs argv[0] (searched on PATH) with argv. Throws std::runtime_error when it cannot be
// started at all (the message names the program).
ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts);

// Runs `command` through /bin/sh -c.
ProcessResult run_shell(const std::string &command, const ProcessOptions &opts);

// Starts argv[0] (searched on PATH) without waiting for it: stdin is /dev/null, stdout and
// stderr go to `output_fd` when it is >= 0 (else to opts.log, else the terminal);
// `inherit_fd` (>= 0) stays open in the child under its number. opts.before_exec is not
// used. Returns the pid. Throws std::runtime_error when it cannot be started.
int start_process(const std::vector<std::string> &argv, const ProcessOptions &opts,
                  int output_fd = -1, int inherit_fd = -1);

// Waits up to `timeout` for a started process to end and reaps it; nothing when it is still
// running then. Cost: polls every 2 ms.
std::optional<ProcessResult> wait_process(int pid, std::chrono::milliseconds timeout);

// The last `lines` lines of a text file (for showing the end of a failed build's log).
std::string tail_file(const std::filesystem::path &file, int lines);

} // namespace vprof::driver
