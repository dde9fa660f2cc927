// fork/exec of user commands with an extended environment and optional log capture; a
// command may be held between fork and exec while a helper attaches to it.
#include "process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace vprof::driver {

std::string ProcessResult::describe() const {
  if (signaled)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

namespace {

// argv and envp of a command, built before fork: the child only calls async-signal-safe
// functions.
struct ExecImage {
  std::vector<char *> argv;
  std::vector<std::string> env_strings;
  std::vector<char *> envp;

  ExecImage(const std::vector<std::string> &args, const std::map<std::string, std::string> &env) {
    if (args.empty())
      throw std::runtime_error("no command given");
    for (const auto &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    for (char **e = environ; *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos && env.count(kv.substr(0, eq)))
        continue;
      env_strings.push_back(std::move(kv));
    }
    for (const auto &[k, v] : env)
      env_strings.push_back(k + "=" + v);
    for (auto &e : env_strings)
      envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

int open_log(const ProcessOptions &opts) {
  if (!opts.log)
    return -1;
  int fd = ::open(opts.log->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(opts.log->string() + ": cannot create log: " + std::strerror(errno));
  return fd;
}

// In the child: reports errno on `errfd` (close-on-exec: nothing arrives when exec works).
[[noreturn]] void child_fail(int errfd) {
  int e = errno;
  (void)!write(errfd, &e, sizeof e);
  _exit(127);
}

// In the child after fork: cwd, output, environment, exec.
[[noreturn]] void child_exec(ExecImage &img, const ProcessOptions &opts, int outfd, int errfd) {
  if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0)
    child_fail(errfd);
  if (outfd >= 0) {
    dup2(outfd, 1);
    dup2(outfd, 2);
  }
  environ = img.envp.data();
  execvp(img.argv[0], img.argv.data());
  child_fail(errfd);
}

ProcessResult result_of(int status, std::chrono::steady_clock::time_point start) {
  ProcessResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

void reap(pid_t pid, int &status) {
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Waits for the exec report of a child: throws naming the program when it could not run.
void check_exec(int errfd, const std::vector<std::string> &argv, const ProcessOptions &opts,
                pid_t pid) {
  int child_errno = 0;
  ssize_t n;
  do
    n = read(errfd, &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  ::close(errfd);
  if (n != static_cast<ssize_t>(sizeof child_errno))
    return;
  int status = 0;
  reap(pid, status);
  throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(child_errno) +
                           (opts.cwd.empty() ? "" : " (in " + opts.cwd.string() + ")"));
}

} // namespace

ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts) {
  ExecImage img(argv, opts.env);
  int logfd = open_log(opts);
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // the child waits for one byte on `hold` before exec; EOF (the driver died) ends it
  int hold[2] = {-1, -1};
  if (opts.before_exec && pipe2(hold, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));

  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(errpipe[0]);
    if (hold[0] >= 0) {
      ::close(hold[1]);
      char go = 0;
      ssize_t n;
      do
        n = read(hold[0], &go, 1);
      while (n < 0 && errno == EINTR);
      if (n != 1)
        _exit(127);
      ::close(hold[0]);
    }
    child_exec(img, opts, logfd, errpipe[1]);
  }
  ::close(errpipe[1]);
  if (logfd >= 0)
    ::close(logfd);
  if (hold[0] >= 0) {
    ::close(hold[0]);
    try {
      opts.before_exec(pid);
    } catch (...) {
      ::close(hold[1]);
      ::close(errpipe[0]);
      ::kill(pid, SIGKILL);
      int status = 0;
      reap(pid, status);
      throw;
    }
    // the clock starts when the command does, not when the helper began attaching
    start = std::chrono::steady_clock::now();
    (void)!write(hold[1], "g", 1);
    ::close(hold[1]);
  }
  check_exec(errpipe[0], argv, opts, pid);
  int status = 0;
  reap(pid, status);
  return result_of(status, start);
}

ProcessResult run_shell(const std::string &command, const ProcessOptions &opts) {
  return run_process({"/bin/sh", "-c", command}, opts);
}

int start_process(const std::vector<std::string> &argv, const ProcessOptions &opts, int output_fd,
                  int inherit_fd) {
  ExecImage img(argv, opts.env);
  int logfd = output_fd >= 0 ? -1 : open_log(opts);
  const int outfd = output_fd >= 0 ? output_fd : logfd;
  int nullfd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(errpipe[0]);
    if (nullfd >= 0)
      dup2(nullfd, 0);
    if (inherit_fd >= 0)
      fcntl(inherit_fd, F_SETFD, 0); // survives exec
    child_exec(img, opts, outfd, errpipe[1]);
  }
  ::close(errpipe[1]);
  if (logfd >= 0)
    ::close(logfd);
  if (nullfd >= 0)
    ::close(nullfd);
  check_exec(errpipe[0], argv, opts, pid);
  return pid;
}

std::optional<ProcessResult> wait_process(int pid, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return result_of(status, start);
    if (r < 0 && errno != EINTR) {
      ProcessResult gone; // not our child (already reaped): nothing to wait for
      gone.exit_code = -1;
      return gone;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string tail_file(const std::filesystem::path &file, int lines) {
  std::ifstream in(file);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines)
      last.pop_front();
  }
  std::string out;
  for (const auto &l : last)
    out += "  | " + l + "\n";
  return out;
}

} // namespace vprof::driver
