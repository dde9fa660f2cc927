// Running the user's build and workload commands from the driver.
#pragma once

#include <filesystem>
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
};

// Runs argv[0] (searched on PATH) with argv. Throws std::runtime_error when it cannot be
// started at all (the message names the program).
ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts);

// Runs `command` through /bin/sh -c.
ProcessResult run_shell(const std::string &command, const ProcessOptions &opts);

// The last `lines` lines of a text file (for showing the end of a failed build's log).
std::string tail_file(const std::filesystem::path &file, int lines);

} // namespace vprof::driver
