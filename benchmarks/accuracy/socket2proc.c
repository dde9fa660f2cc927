/* Accuracy program "socket2proc": request and reply over a local socket between two
 * processes, the shape of a client and its server on one host. The parent makes a
 * socketpair(AF_UNIX, SOCK_STREAM) and forks a server child. Per interval the parent (the
 * client) runs sock_prepare (constant 10 u), sends the request's index, blocks in recv()
 * for the reply, then runs sock_finish, U(0, 450) u (Var 16875 u^2). The server, blocked in
 * recv() for the next request, runs sock_server_work, U(0, 600) u (Var 30000 u^2), and
 * sock_encode (constant 5 u), and sends the index back. The interval lives in the client;
 * the cause runs in another process and is reached only through the kernel's scheduler
 * wake-ups (the server's send wakes the client's recv), no pthread call on the path. The
 * kernel also wakes the client when the server's recv takes the request (room freed in the
 * client's send buffer, no data: a room wake-up); on a loaded machine the client may not
 * run before the reply, and only the recorder's data wake-up at the server's send names
 * the real release (docs/recorder.md, "Room wake-ups").
 * Var(L) = 46875 u^2 (+ wake-up jitter); planted share 30000 / 46875 = 0.64 when every
 * client blocks.
 * Critical-path rule: if recv() does not sleep (the reply came before the client got there:
 * it was preempted, a loaded machine), there is no wake-up edge and that interval's
 * realised cause time is 0. Whether it slept is read from the thread's voluntary context
 * switches around the call, the recorder's own criterion (a timestamp before the call
 * cannot see a reply that lands between it and the sleep). The server's times reach the
 * parent through an anonymous shared mapping.
 * How often that happens is the scheduler's choice (on 2 busy cores the woken worker often
 * preempts the client on its own CPU), and moving those intervals' cause time into the rest
 * gives a negative covariance that carries the realised share from 0.5 to above 1.0: no
 * closed form, analytic nan, the realised share is the reference. */
#include "acc_common.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static double *g_work_u, *g_noise_u; /* drawn before fork: both processes see them */
static double *g_cause_ns;           /* in shared memory, written by the server */
static unsigned char *g_slept;       /* the client's recv() slept: a wake-up edge */
static double *g_lat_ns;

/* One send()/recv() of exactly `size` bytes (an int: one call on a stream socket in
 * practice), retried on EINTR; `closed` runs when the peer has gone (recv returns 0);
 * any other outcome ends the process. A macro: the call stays a statement of the
 * function that waits (the wait node's name), not of a helper. */
#define SOCK_IO(call, fd, buf, size, closed)                                                       \
  do {                                                                                             \
    ssize_t sock_done_;                                                                            \
    while ((sock_done_ = call((fd), (buf), (size), 0)) < 0 && errno == EINTR) {                    \
    }                                                                                              \
    if (sock_done_ == 0) {                                                                         \
      closed;                                                                                      \
    }                                                                                              \
    if (sock_done_ != (ssize_t)(size)) {                                                           \
      perror("socket2proc: " #call);                                                               \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

void sock_server_work(int i) { ACC_SPIN_UNITS(g_work_u[i]); }
void sock_encode(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

/* Child process (the waker): serve requests until the client closes its end. */
void sock_server_loop(int fd) {
  for (;;) {
    int i = -1;
    SOCK_IO(recv, fd, &i, sizeof i, return);
    uint64_t t = ACC_NOW_NS();
    sock_server_work(i);
    g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
    sock_encode(i);
    SOCK_IO(send, fd, &i, sizeof i, );
  }
}

void sock_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void sock_finish(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* Sends request i to the server and receives its reply. */
void sock_call_server(int fd, int i) {
  int answer = -1;
  SOCK_IO(send, fd, &i, sizeof i, );
  long switches = ACC_VOLUNTARY_SWITCHES();
  SOCK_IO(recv, fd, &answer, sizeof answer, fprintf(stderr, "socket2proc: server gone\n"); exit(1));
  g_slept[i] = ACC_VOLUNTARY_SWITCHES() > switches;
  if (answer != i) {
    fprintf(stderr, "socket2proc: reply %d for request %d\n", answer, i);
    exit(1);
  }
}

/* The root (parent process): one interval per call. */
void sock_client_call(int fd, int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "call");
  sock_prepare(i);
  sock_call_server(fd, i);
  sock_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  size_t bytes = (size_t)n * sizeof(double);
  void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("socket2proc: mmap");
    return 1;
  }
  g_cause_ns = (double *)mem;
  g_work_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_slept = acc_xcalloc(n, 1);
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 450);
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    perror("socket2proc: socketpair");
    return 1;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    perror("socket2proc: fork");
    return 1;
  }
  if (child == 0) {
    close(fds[0]);
    sock_server_loop(fds[1]);
    exit(0); /* not _exit: let the runtime finish its trace at exit */
  }
  close(fds[1]);
  for (int i = 0; i < n; ++i)
    sock_client_call(fds[0], i);
  close(fds[0]); /* the server's recv() returns 0: it ends */
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "socket2proc: server process failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i)
    if (!g_slept[i]) /* recv() did not sleep: no wake-up edge */
      g_cause_ns[i] = 0;
  acc_report("socket2proc", "sock_server_work", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
