/* Accuracy program "pipe": a request handed to a worker thread through an eventfd and the
 * reply read back from a pipe, the shape of a server whose I/O thread talks to its workers
 * over file descriptors. Per interval the main thread runs pipe_prepare (constant 10 u),
 * stores the request's index and rings the worker's eventfd, blocks in read() on the reply
 * pipe, then runs pipe_finish, U(0, 375) u (Var 11719 u^2). The worker, blocked in read()
 * on the eventfd, runs pipe_compute, U(0, 600) u (Var 30000 u^2), pipe_encode (constant
 * 5 u), and writes the index to the pipe. No pthread call is on the path: only the
 * kernel's scheduler wake-ups (the pipe write wakes the client's read) give the wait its
 * waker. Var(L) = 41719 u^2 (+ wake-up jitter); planted share 30000 / 41718.75 = 0.719
 * when every client blocks.
 * Critical-path rule: if read() does not sleep (the reply was written before the client got
 * there: it was preempted, a loaded machine), there is no wake-up edge and that interval's
 * realised cause time is 0. Whether it slept is read from the thread's voluntary context
 * switches around the call, the recorder's own criterion.
 * How often that happens is the scheduler's choice (on 2 busy cores the woken worker often
 * preempts the client on its own CPU), and moving those intervals' cause time into the rest
 * gives a negative covariance that carries the realised share from 0.5 to above 1.0: no
 * closed form, analytic nan, the realised share is the reference. */
#include "acc_common.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <unistd.h>

static double *g_work_u, *g_noise_u, *g_cause_ns, *g_lat_ns;
static unsigned char *g_slept; /* the client's read() slept: a wake-up edge */
static int g_doorbell = -1;    /* eventfd: a request is waiting */
static int g_reply[2] = {-1, -1};
static atomic_int g_request = -1; /* the request's index; -2 ends the worker */

/* One read()/write() of exactly `size` bytes (small: one call on a pipe or eventfd), retried
 * on EINTR; any other outcome ends the program. A macro: the call stays a statement of the
 * function that waits (the wait node's name), not of a helper. */
#define PIPE_IO(call, fd, buf, size)                                                               \
  do {                                                                                             \
    ssize_t pipe_done_;                                                                            \
    while ((pipe_done_ = call((fd), (buf), (size))) < 0 && errno == EINTR) {                       \
    }                                                                                              \
    if (pipe_done_ != (ssize_t)(size)) {                                                           \
      perror("pipe: " #call);                                                                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

void pipe_compute(int i) { ACC_SPIN_UNITS(g_work_u[i]); }
void pipe_encode(int i) {
  (void)i;
  ACC_SPIN_UNITS(5);
}

/* The worker thread (the waker): one request per doorbell, answered on the pipe. */
void *pipe_worker(void *arg) {
  (void)arg;
  for (;;) {
    uint64_t rings;
    PIPE_IO(read, g_doorbell, &rings, sizeof rings);
    int i = atomic_load(&g_request);
    if (i == -2)
      return NULL;
    uint64_t t = ACC_NOW_NS();
    pipe_compute(i);
    g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
    pipe_encode(i);
    PIPE_IO(write, g_reply[1], &i, sizeof i);
  }
}

void pipe_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void pipe_finish(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* Rings the worker for request i and reads its reply. */
void pipe_call_worker(int i) {
  uint64_t ring = 1;
  int answer = -1;
  atomic_store(&g_request, i);
  PIPE_IO(write, g_doorbell, &ring, sizeof ring);
  long switches = ACC_VOLUNTARY_SWITCHES();
  PIPE_IO(read, g_reply[0], &answer, sizeof answer);
  g_slept[i] = ACC_VOLUNTARY_SWITCHES() > switches;
  if (answer != i) {
    fprintf(stderr, "pipe: reply %d for request %d\n", answer, i);
    exit(1);
  }
}

/* The root: one interval per request. */
void pipe_request(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "request");
  pipe_prepare(i);
  pipe_call_worker(i);
  pipe_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_work_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_slept = acc_xcalloc(n, 1);
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 375);
  }
  g_doorbell = eventfd(0, EFD_CLOEXEC);
  if (g_doorbell < 0) {
    perror("pipe: eventfd");
    return 1;
  };
  if (pipe(g_reply) != 0) {
    perror("pipe: pipe");
    return 1;
  };
  pthread_t worker;
  if (pthread_create(&worker, NULL, pipe_worker, NULL) != 0) {
    fprintf(stderr, "pipe: pthread_create failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i)
    pipe_request(i);
  uint64_t ring = 1;
  atomic_store(&g_request, -2);
  PIPE_IO(write, g_doorbell, &ring, sizeof ring);
  pthread_join(worker, NULL);
  close(g_doorbell);
  close(g_reply[0]);
  close(g_reply[1]);
  for (int i = 0; i < n; ++i)
    if (!g_slept[i]) /* read() did not sleep: no wake-up edge */
      g_cause_ns[i] = 0;
  acc_report("pipe", "pipe_compute", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
