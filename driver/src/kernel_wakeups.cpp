// Starting and stopping vprof-sched beside the workload; saying once, loudly, when it
// cannot record.
#include "kernel_wakeups.hpp"
#include "pipeline.hpp"
#include "process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <sstream>
#include <sys/mman.h>
#include <unistd.h>

namespace vprof::driver {
namespace fs = std::filesystem;

namespace {

bool executable(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// How long the driver waits for the recorder to check, attach and stop:
// $VPROF_SCHED_TIMEOUT seconds, default 10.
std::chrono::milliseconds recorder_timeout() {
  if (const char *s = std::getenv("VPROF_SCHED_TIMEOUT"); s && *s) {
    char *end = nullptr;
    double v = std::strtod(s, &end);
    if (end && *end == '\0' && v > 0 && v < 86400)
      return std::chrono::milliseconds(static_cast<long>(v * 1000));
  }
  return std::chrono::seconds(10);
}

std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream os;
  os << static_cast<double>(t.count()) / 1000.0 << " s";
  return os.str();
}

// "768 bytes", "12 KiB", "3 MiB"
std::string size_text(std::uintmax_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " bytes";
  if (bytes < (1u << 20))
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes >> 20) + " MiB";
}

// The recorder's own explanation: the last non-empty line of its output.
std::string last_line(const std::string &text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t\r");
    if (b != std::string::npos)
      last = line.substr(b, line.find_last_not_of(" \t\r") + 1 - b);
  }
  return last;
}

std::string read_fd(int fd) {
  std::string out;
  char buf[4096];
  ::lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < (1u << 20))
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}

std::string read_text(const fs::path &p) {
  std::ifstream in(p);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The recorder's line, or how it ended when it said nothing.
std::string explain(const std::string &output, const ProcessResult &r) {
  std::string line = last_line(output);
  return line.empty() ? "vprof-sched ended with " + r.describe() + " and said nothing" : line;
}

const char *kLost = "waits that are not pthread calls (futexes, pipes, sockets, epoll, sleeps, "
                    "disk I/O) get no waker on the critical path";
const char *kFixPrivileges = "run vprof as root, or grant the recorder CAP_BPF and CAP_PERFMON "
                             "(setcap cap_bpf,cap_perfmon+ep ";

// Waits up to `timeout` for one byte on `fd`: 1 = the byte came, 0 = EOF (the recorder
// closed it or ended without writing), -1 = timeout.
int wait_ready(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    char b = 0;
    ssize_t got;
    do
      got = ::read(fd, &b, 1);
    while (got < 0 && errno == EINTR);
    return got == 1 ? 1 : 0;
  }
}

} // namespace

std::optional<fs::path> find_recorder(std::string &looked) {
  if (const char *env = std::getenv("VPROF_SCHED"); env && *env) {
    looked = "VPROF_SCHED=" + std::string(env) + " is not an executable file";
    if (executable(env))
      return fs::absolute(env);
    return std::nullopt;
  }
  std::vector<fs::path> dirs = {self_dir(), fs::path(VPROF_RECORDER_BUILD_DIR)};
  looked = "vprof-sched is not installed (looked beside vprof in " + dirs[0].string() + " and in " +
           dirs[1].string() + "; VPROF_SCHED is not set)";
  for (const auto &dir : dirs)
    if (!dir.empty() && executable(dir / "vprof-sched"))
      return dir / "vprof-sched";
  return std::nullopt;
}

KernelWakeups::KernelWakeups(const Context &ctx) : ctx_(ctx), timeout_(recorder_timeout()) {}

KernelWakeups::~KernelWakeups() {
  if (pid_ > 0)
    kill_recorder();
}

void KernelWakeups::kill_recorder() {
  ::kill(pid_, SIGKILL);
  wait_process(pid_, std::chrono::seconds(5));
  pid_ = -1;
}

void KernelWakeups::cannot_record(const std::string &why, const std::string &fix) {
  usable_ = false;
  status_ = "kernel wake-ups not recorded (" + why + ")";
  if (ctx_.cfg.kernel_wakeups == "on")
    throw EnvironmentError("kernel_wakeups = \"on\", but kernel wake-ups cannot be recorded "
                           "here: " +
                           why + ". Fix: " + fix +
                           ", or set kernel_wakeups = \"auto\" to go on without them");
  // the one warning of this invocation; -q does not hide it (kernel_wakeups = "off" does)
  *ctx_.err << "vprof: warning: kernel wake-ups are off: " << why << ". Lost: " << kLost
            << ". Fix: " << fix << ", or set kernel_wakeups = \"off\" in vprof.toml to silence "
            << "this" << std::endl;
}

bool KernelWakeups::prepare() {
  status_.clear();
  if (ctx_.cfg.kernel_wakeups == "off") {
    status_ = "kernel wake-ups off (kernel_wakeups = \"off\")";
    return false;
  }
  if (checked_) {
    if (!usable_)
      status_ = "kernel wake-ups not recorded (see the warning above)";
    return usable_;
  }
  checked_ = true;
  std::string looked;
  auto bin = find_recorder(looked);
  if (!bin) {
    cannot_record(looked, "build the recorder (target vprof-sched, needs libbpf: "
                          "cmake/install-deps.sh) or point VPROF_SCHED at it");
    return false;
  }
  binary_ = *bin;
  const std::string fix = kFixPrivileges + binary_.string() + ")";
  int out = ::memfd_create("vprof-sched-check", MFD_CLOEXEC);
  if (out < 0) {
    cannot_record(std::string("memfd_create: ") + std::strerror(errno), fix);
    return false;
  }
  std::string why;
  try {
    int pid = start_process({binary_.string(), "--check"}, ProcessOptions{}, out);
    auto r = wait_process(pid, timeout_);
    if (!r) {
      ::kill(pid, SIGKILL);
      wait_process(pid, std::chrono::seconds(5));
      why = binary_.string() + " --check did not answer within " + seconds(timeout_);
    } else if (r->exit_code != 0) {
      why = explain(read_fd(out), *r);
      if (r->exit_code != 3)
        why = binary_.string() + " --check failed (" + r->describe() + "): " + why;
    }
  } catch (const std::runtime_error &e) {
    why = e.what();
  }
  ::close(out);
  if (!why.empty()) {
    cannot_record(why, fix);
    return false;
  }
  usable_ = true;
  return true;
}

void KernelWakeups::attach(int pid, const fs::path &trace_dir) {
  if (!usable_)
    return;
  out_ = trace_dir / "sched.vpk";
  const fs::path stacks = trace_dir / "stacks.vpk";
  log_ = trace_dir / "sched.log";
  std::error_code ec;
  fs::remove(out_, ec);
  fs::remove(stacks, ec);
  const std::string fix = kFixPrivileges + binary_.string() + ")";
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    cannot_record(std::string("pipe: ") + std::strerror(errno), fix);
    return;
  }
  ProcessOptions po;
  po.log = log_;
  std::vector<std::string> argv = {binary_.string(),
                                   "--root-pid",
                                   std::to_string(pid),
                                   "--out",
                                   out_.string(),
                                   "--ready-fd",
                                   std::to_string(ready[1]),
                                   "--quiet",
                                   "--ring-mb",
                                   std::to_string(ctx_.cfg.sched_ring_mb),
                                   "--stacks",
                                   stacks.string(),
                                   "--sample-hz",
                                   std::to_string(ctx_.cfg.sample_hz)};
  std::string why;
  try {
    pid_ = start_process(argv, po, -1, ready[1]);
  } catch (const std::runtime_error &e) {
    why = e.what();
  }
  ::close(ready[1]);
  if (pid_ > 0) {
    int got = wait_ready(ready[0], timeout_);
    if (got < 0) {
      kill_recorder();
      why = "vprof-sched did not report that it was recording within " + seconds(timeout_);
      if (auto line = last_line(read_text(log_)); !line.empty())
        why += " (its last words: " + line + ")";
    } else if (got == 0) {
      auto r = wait_process(pid_, timeout_);
      if (!r)
        kill_recorder();
      pid_ = -1;
      ProcessResult unknown;
      unknown.exit_code = -1;
      why = explain(read_text(log_), r ? *r : unknown);
      if (r && r->exit_code != 3)
        why = "vprof-sched could not attach (" + r->describe() + "): " + why;
    }
  }
  ::close(ready[0]);
  if (!why.empty()) {
    fs::remove(out_, ec); // a partial file must not look like a recording
    cannot_record(why, fix);
  }
}

std::string KernelWakeups::finish() {
  if (pid_ <= 0)
    return status_;
  ::kill(pid_, SIGTERM);
  auto r = wait_process(pid_, timeout_);
  std::string trouble;
  if (!r) {
    kill_recorder();
    trouble = "vprof-sched did not stop within " + seconds(timeout_) +
              " of SIGTERM and was killed: " + out_.string() + " may be incomplete";
  } else {
    pid_ = -1;
    if (r->exit_code != 0)
      trouble = "vprof-sched failed (" + r->describe() + "): " + explain(read_text(log_), *r) +
                "; " + out_.string() + " may be incomplete";
  }
  std::error_code ec;
  if (fs::is_regular_file(log_, ec) && fs::file_size(log_, ec) == 0)
    fs::remove(log_, ec); // a quiet recorder leaves no empty log behind
  const bool written = fs::exists(out_, ec);
  if (trouble.empty() && !written)
    trouble = "vprof-sched ended normally but wrote no " + out_.string();
  if (!trouble.empty()) {
    if (ctx_.cfg.kernel_wakeups == "on")
      throw EnvironmentError("kernel_wakeups = \"on\": " + trouble + " (log: " + log_.string() +
                             ")");
    ctx_.progress("warning: kernel wake-ups: " + trouble + " (log: " + log_.string() + ")");
  }
  if (!written)
    return status_ = "kernel wake-ups not recorded";
  const std::uintmax_t bytes = fs::file_size(out_, ec);
  return status_ = "kernel wake-ups recorded (" + out_.filename().string() + ", " +
                   size_text(ec ? 0 : bytes) + (trouble.empty() ? "" : ", partial") + ")";
}

} // namespace vprof::driver
