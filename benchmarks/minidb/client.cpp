// minidb-client: the remote client of minidb's TCP front end (`minidb --listen`). Each of
// --clients threads keeps one connection and runs its requests in a closed loop; every
// request is one vprof interval, begun here, sent with its id (VPROF_MSG_SEND), continued
// by the server on the client's behalf, and ended when the reply arrives (VPROF_MSG_RECV).
#include "net.hpp"

#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <vprof/vprof.h>

namespace {

struct ClientOptions {
  std::string connect;
  int clients = 4;
  int requests = 400; // in all, shared out over the connections
  int timeout_s = 60;
};

const char kUsage[] =
    "usage: minidb-client --connect ADDR:PORT [--clients N] [--requests N] [--timeout-s N]\n"
    "  --connect ADDR:PORT  a minidb --listen server (IPv4)\n"
    "  --clients N          connections, one thread each (default 4)\n"
    "  --requests N         requests in all (default 400)\n"
    "  --timeout-s N        give up after N seconds (default 60)\n"
    "Prints a final line: minidb-client: requests=.. p50_us=.. p99_us=.. mean_us=..\n"
    "Exit status: 0 ok, 1 a connection failed, 2 bad arguments.\n";

bool parse_options(int argc, char **argv, ClientOptions &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "minidb-client: %s: missing value\n%s", a.c_str(), kUsage);
      return false;
    }
    std::string v = argv[++i];
    char *end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    bool num = !v.empty() && !*end && n >= 1 && n <= 10000000;
    bool ok = true;
    if (a == "--connect")
      o.connect = v;
    else if (a == "--clients")
      ok = num && n <= 256 && (o.clients = int(n), true);
    else if (a == "--requests")
      ok = num && (o.requests = int(n), true);
    else if (a == "--timeout-s")
      ok = num && (o.timeout_s = int(n), true);
    else {
      std::fprintf(stderr, "minidb-client: unknown option %s\n%s", a.c_str(), kUsage);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "minidb-client: bad value '%s' for %s\n", v.c_str(), a.c_str());
      return false;
    }
  }
  return !o.connect.empty();
}

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

struct Worker {
  sockaddr_in addr;
  std::uint64_t first_seq = 0, count = 0;
  std::vector<double> latency_us;
  bool ok = true;
};

int connect_to(const sockaddr_in &addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0)
    return -1;
  if (connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// One request as one interval: begun here, ended when its reply is back.
bool run_request(int fd, std::uint64_t seq, Worker &w) {
  std::uint64_t iv = 0, t0 = now_ns();
  VPROF_INTERVAL_BEGIN(iv, "Request");
  minidb::WireRequest rq{iv, seq};
  minidb::WireReply rp{};
  VPROF_MSG_SEND(iv); // the interval id is the message key, both ways
  bool ok = minidb::write_full(fd, &rq, sizeof rq) && minidb::read_full(fd, &rp, sizeof rp);
  if (ok)
    VPROF_MSG_RECV(iv);
  VPROF_INTERVAL_END(iv);
  w.latency_us.push_back(double(now_ns() - t0) / 1e3);
  return ok && rp.interval == iv && rp.status == 0;
}

void *worker_main(void *arg) {
  auto &w = *static_cast<Worker *>(arg);
  int fd = connect_to(w.addr);
  if (fd < 0) {
    std::fprintf(stderr, "minidb-client: connect: %s\n", std::strerror(errno));
    w.ok = false;
    return nullptr;
  }
  for (std::uint64_t i = 0; i < w.count && w.ok; ++i)
    w.ok = run_request(fd, w.first_seq + i, w);
  close(fd);
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  ClientOptions o;
  sockaddr_in addr;
  if (!parse_options(argc, argv, o) || !minidb::parse_ipv4_endpoint(o.connect, addr)) {
    std::fprintf(stderr, "minidb-client: --connect ADDR:PORT (IPv4) is required\n%s", kUsage);
    return 2;
  }
  alarm(unsigned(o.timeout_s));
  std::vector<Worker> workers(std::size_t(o.clients));
  std::vector<pthread_t> threads(workers.size());
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].addr = addr;
    workers[i].first_seq = seq;
    workers[i].count = std::uint64_t(o.requests) / workers.size() +
                       (i < std::uint64_t(o.requests) % workers.size() ? 1 : 0);
    seq += workers[i].count;
    pthread_create(&threads[i], nullptr, worker_main, &workers[i]);
  }
  std::vector<double> all;
  bool ok = true;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    pthread_join(threads[i], nullptr);
    ok = ok && workers[i].ok;
    all.insert(all.end(), workers[i].latency_us.begin(), workers[i].latency_us.end());
  }
  std::sort(all.begin(), all.end());
  double mean = 0;
  for (double x : all)
    mean += x / double(all.size());
  auto rank = [&](double q) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, std::size_t(q * double(all.size())))];
  };
  std::printf("minidb-client: requests=%zu p50_us=%.1f p99_us=%.1f mean_us=%.1f ok=%s\n",
              all.size(), rank(0.5), rank(0.99), mean, ok ? "yes" : "no");
  return ok ? 0 : 1;
}
