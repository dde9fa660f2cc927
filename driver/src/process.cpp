// fork/exec of user commands with an extended environment and optional log capture.
#include "process.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace vprof::driver {

std::string ProcessResult::describe() const {
  if (signaled)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &opts) {
  if (argv.empty())
    throw std::runtime_error("no command given");
  // Build argv/envp before forking: the child only calls async-signal-safe functions.
  std::vector<char *> cargv;
  for (const auto &a : argv)
    cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char **e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && opts.env.count(kv.substr(0, eq)))
      continue;
    envs.push_back(std::move(kv));
  }
  for (const auto &[k, v] : opts.env)
    envs.push_back(k + "=" + v);
  std::vector<char *> cenv;
  for (auto &e : envs)
    cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int logfd = -1;
  if (opts.log) {
    logfd = ::open(opts.log->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (logfd < 0)
      throw std::runtime_error(opts.log->string() + ": cannot create log: " + std::strerror(errno));
  }
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));

  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(errpipe[0]);
    if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(errpipe[1], &e, sizeof e);
      _exit(127);
    }
    if (logfd >= 0) {
      dup2(logfd, 1);
      dup2(logfd, 2);
    }
    environ = cenv.data();
    execvp(cargv[0], cargv.data());
    int e = errno;
    (void)!write(errpipe[1], &e, sizeof e);
    _exit(127);
  }
  ::close(errpipe[1]);
  if (logfd >= 0)
    ::close(logfd);
  int child_errno = 0;
  ssize_t n = read(errpipe[0], &child_errno, sizeof child_errno);
  ::close(errpipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof child_errno))
    throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(child_errno) +
                             (opts.cwd.empty() ? "" : " (in " + opts.cwd.string() + ")"));
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

ProcessResult run_shell(const std::string &command, const ProcessOptions &opts) {
  return run_process({"/bin/sh", "-c", command}, opts);
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
