// minidb's TCP front end: `minidb --listen ADDR:PORT` serves transactions to minidb-client
// over TCP, one thread per connection, each request running on behalf of the client's
// interval (received by its id, VPROF_MSG_RECV + VPROF_ATTACH; replied with VPROF_MSG_SEND).
// `--plant-us N` plants a known cause of latency variance on the server (planted_stall).
#include "net.hpp"
#include "minidb.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <vprof/vprof.h>

namespace minidb {

struct NetOptions {
  std::string listen;
  int clients = 1; // connections to serve before exiting
  int warehouses = 2;
  int pool_pages = 256;
  int io_us = 100;
  bool fsync = false;
  int plant_us = 0; // planted_stall's scale (0: no planted cause)
  std::uint64_t seed = 42;
  std::string ready_file; // written once the server listens
  int timeout_s = 120;    // the server exits (status 1) after this long
};

namespace {

const char kNetUsage[] =
    "usage: minidb --listen ADDR:PORT [options]   (the TCP front end; docs/minidb.md)\n"
    "  --clients N        connections to serve, then exit (default 1)\n"
    "  --warehouses N     warehouses (default 2)\n"
    "  --pool-pages N     buffer pool frames (default 256)\n"
    "  --io-us N          simulated device latency of a page miss, us (default 100)\n"
    "  --fsync on|off     fsync the log at commit (default off)\n"
    "  --plant-us N       a planted cause: every request stalls 0, N, 2N or 6N us, drawn\n"
    "                     from its sequence number (planted_stall; default 0 = none)\n"
    "  --seed S           seed of the transactions drawn per request (default 42)\n"
    "  --ready-file PATH  written once the server listens\n"
    "  --timeout-s N      give up after N seconds (default 120)\n"
    "Prints a final line: minidb-net: served=.. clients=.. consistent=yes|no\n";

bool parse_net_options(int argc, char **argv, NetOptions &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kNetUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "minidb: %s: missing value\n%s", a.c_str(), kNetUsage);
      return false;
    }
    std::string v = argv[++i];
    char *end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    bool num = !v.empty() && !*end && n >= 0 && n <= 100000000;
    bool ok = true;
    if (a == "--listen")
      o.listen = v;
    else if (a == "--clients")
      ok = num && n >= 1 && (o.clients = int(n), true);
    else if (a == "--warehouses")
      ok = num && n >= 1 && (o.warehouses = int(n), true);
    else if (a == "--pool-pages")
      ok = num && n >= 1 && (o.pool_pages = int(n), true);
    else if (a == "--io-us")
      ok = num && (o.io_us = int(n), true);
    else if (a == "--plant-us")
      ok = num && (o.plant_us = int(n), true);
    else if (a == "--timeout-s")
      ok = num && n >= 1 && (o.timeout_s = int(n), true);
    else if (a == "--seed")
      ok = num && (o.seed = std::uint64_t(n), true);
    else if (a == "--fsync")
      ok = (v == "on" || v == "off") && (o.fsync = v == "on", true);
    else if (a == "--ready-file")
      o.ready_file = v;
    else {
      std::fprintf(stderr, "minidb: unknown option %s\n%s", a.c_str(), kNetUsage);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "minidb: bad value '%s' for %s\n", v.c_str(), a.c_str());
      return false;
    }
  }
  return true;
}

} // namespace

// The planted cause: a stall of 0, 1, 2 or 6 units drawn from the request's sequence number
// (a remote cache miss, say), so its share of the latency variance is known and large.
void planted_stall(std::uint64_t seq, int unit_us) {
  static const int kUnits[] = {0, 1, 2, 6};
  int units = kUnits[(seq * 0x9e3779b97f4a7c15ull) >> 62];
  if (unit_us <= 0 || units == 0)
    return;
  timespec ts{0, long(units) * unit_us * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

struct NetShared {
  Database *db;
  const NetOptions *opt;
  std::atomic<std::uint64_t> served{0};
};

// One request on behalf of the client's interval: the transaction drawn from its sequence
// number, after the planted stall.
std::uint64_t serve_request(NetShared &sh, const WireRequest &rq) {
  Txn txn;
  Rng rng(sh.opt->seed * 1000003ull + rq.seq);
  sh.db->generate(rng, txn);
  txn.seq = rq.seq;
  txn.interval = rq.interval;
  txn.start_ns = now_ns();
  planted_stall(rq.seq, sh.opt->plant_us);
  sh.db->execute(txn);
  return 0;
}

namespace {

struct Connection {
  NetShared *sh;
  int fd;
};

// A connection's thread: requests in order until the client closes it.
void *connection_main(void *arg) {
  std::unique_ptr<Connection> c(static_cast<Connection *>(arg));
  WireRequest rq;
  while (read_full(c->fd, &rq, sizeof rq)) {
    VPROF_MSG_RECV(rq.interval); // the request's key is the interval id
    VPROF_ATTACH(rq.interval);
    WireReply rp{rq.interval, serve_request(*c->sh, rq)};
    VPROF_DETACH(rq.interval);
    VPROF_MSG_SEND(rq.interval);
    if (!write_full(c->fd, &rp, sizeof rp))
      break;
    c->sh->served.fetch_add(1, std::memory_order_relaxed);
  }
  close(c->fd);
  return nullptr;
}

int listen_on(const sockaddr_in &addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0)
    return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0 ||
      listen(fd, 64) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void write_ready_file(const std::string &path) {
  if (path.empty())
    return;
  std::string tmp = path + ".tmp";
  if (FILE *f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%d\n", int(getpid()));
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

} // namespace

int serve_tcp(int argc, char **argv) {
  NetOptions o;
  sockaddr_in addr;
  if (!parse_net_options(argc, argv, o))
    return 2;
  if (!parse_ipv4_endpoint(o.listen, addr)) {
    std::fprintf(stderr, "minidb: --listen %s: expected an IPv4 ADDR:PORT\n", o.listen.c_str());
    return 2;
  }
  alarm(unsigned(o.timeout_s)); // a test that lost its client must not hang
  const char *tmpdir = std::getenv("TMPDIR");
  std::string dir_tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/minidb-net.XXXXXX";
  std::vector<char> buf(dir_tmpl.begin(), dir_tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    std::fprintf(stderr, "minidb: cannot create a temp dir: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string dir = buf.data(), data = dir + "/minidb.data", log = dir + "/minidb.wal";
  int rc = 0;
  {
    LockManager locks(LockPolicy::Fcfs);
    BufferPool pool(data, o.pool_pages, o.io_us);
    Wal wal(log, o.fsync);
    if (!pool.ok() || !wal.ok())
      return 1;
    Database db(o.warehouses, Scale{}, locks, pool, wal, Mix::Tpcc);
    calibrate_cpu_work();
    NetShared sh{&db, &o};
    int lfd = listen_on(addr);
    if (lfd < 0) {
      std::fprintf(stderr, "minidb: cannot listen on %s: %s\n", o.listen.c_str(),
                   std::strerror(errno));
      return 1;
    }
    write_ready_file(o.ready_file);
    std::vector<pthread_t> threads;
    while (int(threads.size()) < o.clients) {
      int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR)
          continue;
        std::fprintf(stderr, "minidb: accept: %s\n", std::strerror(errno));
        rc = 1;
        break;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      pthread_t t;
      pthread_create(&t, nullptr, connection_main, new Connection{&sh, fd});
      threads.push_back(t);
    }
    close(lfd);
    for (pthread_t t : threads)
      pthread_join(t, nullptr);
    std::string why;
    bool ok = db.consistent(why);
    if (!ok) {
      std::fprintf(stderr, "minidb: INCONSISTENT: %s\n", why.c_str());
      rc = 1;
    }
    std::printf("minidb-net: served=%llu clients=%d page_misses=%llu consistent=%s\n",
                static_cast<unsigned long long>(sh.served.load()), o.clients,
                static_cast<unsigned long long>(pool.misses()), ok ? "yes" : "no");
    std::fflush(stdout);
  }
  unlink(data.c_str());
  unlink(log.c_str());
  rmdir(dir.c_str());
  return rc;
}

} // namespace minidb
