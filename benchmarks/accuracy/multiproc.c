/* Accuracy program "multiproc": the planted cause runs in a second process. The parent
 * forks a server child; both share an anonymous MAP_SHARED page holding two
 * process-shared POSIX semaphores and the per-request records. Per interval the parent
 * runs mp_prepare (constant 10 u), posts the request semaphore, waits on the reply
 * semaphore, then runs mp_finish, U(0, 450) u (Var 16875 u^2). The child, woken by the
 * post, runs mp_server_work, U(0, 600) u (Var 30000 u^2), and posts the reply. The
 * cause is reachable only across processes (sem_post -> sem_wait wake-up edges).
 * Var(L) = 46875 u^2 (+ wake-up jitter); planted share 30000/46875 = 0.64.
 * Critical-path rule: if the reply was posted before the parent reached sem_wait (the
 * parent was preempted inside sem_post while the child worked; happens on a loaded
 * machine), the parent does not block, there is no wake-up edge, and the path stays on
 * the parent's thread: that interval's realised cause time is then 0. */
#include "acc_common.h"

#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared_area {
  sem_t request;
  sem_t reply;
  int index; /* request for the child; -1 = stop */
};

static struct shared_area *g_shm;
static double *g_work_u, *g_noise_u; /* drawn before fork: both processes see them */
static double *g_cause_ns;           /* in shared memory, written by the child */
static uint64_t *g_posted_ns;        /* in shared memory: when the child posted the reply */
static uint64_t *g_waiting_ns;       /* when the parent called sem_wait for the reply */
static double *g_lat_ns;

void mp_server_work(int i) { ACC_SPIN_UNITS(g_work_u[i]); }

/* Child process: serve until told to stop. */
static void server_loop(void) {
  for (;;) {
    while (sem_wait(&g_shm->request) != 0) {
    }
    int i = g_shm->index;
    if (i < 0)
      return;
    uint64_t t = ACC_NOW_NS();
    mp_server_work(i);
    g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
    g_posted_ns[i] = ACC_NOW_NS();
    sem_post(&g_shm->reply);
  }
}

void mp_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(10);
}
void mp_finish(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

void mp_call_server(int i) {
  g_shm->index = i;
  sem_post(&g_shm->request);
  g_waiting_ns[i] = ACC_NOW_NS();
  while (sem_wait(&g_shm->reply) != 0) {
  }
}

/* The root (parent process): one interval per call. */
void client_call(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "call");
  mp_prepare(i);
  mp_call_server(i);
  mp_finish(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  size_t bytes = sizeof(struct shared_area) + (size_t)n * (sizeof(double) + sizeof(uint64_t));
  void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("multiproc: mmap");
    return 1;
  }
  g_shm = mem;
  g_cause_ns = (double *)(g_shm + 1);
  g_posted_ns = (uint64_t *)(g_cause_ns + n);
  if (sem_init(&g_shm->request, 1, 0) != 0 || sem_init(&g_shm->reply, 1, 0) != 0) {
    perror("multiproc: sem_init");
    return 1;
  }
  g_work_u = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  g_waiting_ns = acc_xcalloc(n, sizeof(uint64_t));
  for (int i = 0; i < n; ++i) {
    g_work_u[i] = acc_uniform(&rng, 0, 600);
    g_noise_u[i] = acc_uniform(&rng, 0, 450);
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    perror("multiproc: fork");
    return 1;
  }
  if (child == 0) {
    server_loop();
    exit(0); /* not _exit: let the runtime finish its trace at exit */
  }
  for (int i = 0; i < n; ++i)
    client_call(i);
  g_shm->index = -1;
  sem_post(&g_shm->request);
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "multiproc: server process failed\n");
    return 1;
  }
  for (int i = 0; i < n; ++i)
    if (g_posted_ns[i] < g_waiting_ns[i]) /* the parent did not block: no wake-up edge */
      g_cause_ns[i] = 0;
  acc_report("multiproc", "mp_server_work", g_lat_ns, g_cause_ns, NULL, n, 30000.0 / 46875.0);
  return 0;
}
