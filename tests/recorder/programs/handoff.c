/* The recorder's test program: threads A and B hand a token back and forth N times through a
 * pipe, a raw futex and an eventfd (B sleeps, A naps 20 us and wakes it), then a forked child
 * sleeps in nanosleep. It waits for one line on stdin before starting, so the recorder can
 * attach first.
 *
 *   handoff N    the three phases, then the child; prints "tids MAIN A B", "child PID" and
 *                "phase NAME START_NS END_NS SLEEPS" (B's own view of each phase: its
 *                CLOCK_MONOTONIC bounds and voluntary context switches)
 *   pingpong N   the futex phase only, N hand-offs; prints "tids ..." and
 *                "pingpong N SECONDS sleeps A_SLEEPS B_SLEEPS"
 *   idle N       N sleeps of 1 ms (a process the recorder must not see)
 *   room N       B asks A N times over an AF_UNIX stream socket pair: B sends a byte and
 *                sleeps in recv; A receives it (which wakes B for the room it freed: a room
 *                wake-up), naps 200 us and sends the answer (B's data); prints "tids ..." */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PHASE_PIPE, PHASE_FUTEX, PHASE_EVENTFD, PHASES };
static const char *const phase_names[PHASES] = {"pipe", "futex", "eventfd"};

static long rounds;
static int pipe_ab[2], pipe_ba[2];
static int event_ab, event_ba;
static atomic_int futex_ab, futex_ba;
static uint64_t b_begin[PHASES], b_end[PHASES];
static long b_switches[PHASES]; /* B's voluntary context switches in each phase */
static long a_switches;
static pid_t tid_a, tid_b;
static bool futex_only;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's voluntary context switches so far (its sleeps). */
static long voluntary_switches(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void pipe_send(int fd) {
  char c = 1;
  if (write(fd, &c, 1) != 1)
    die("write");
}

static void pipe_receive(int fd) {
  char c;
  if (read(fd, &c, 1) != 1)
    die("read");
}

static void event_send(int fd) {
  uint64_t one = 1;
  if (write(fd, &one, sizeof one) != sizeof one)
    die("eventfd write");
}

static void event_receive(int fd) {
  uint64_t n;
  if (read(fd, &n, sizeof n) != sizeof n)
    die("eventfd read");
}

/* Waits until *word moves past `seen`. */
static void futex_receive(atomic_int *word, int seen) {
  while (atomic_load(word) == seen)
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_send(atomic_int *word) {
  atomic_fetch_add(word, 1);
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *thread_b(void *arg) {
  (void)arg;
  tid_b = (pid_t)syscall(SYS_gettid);
  for (int phase = futex_only ? PHASE_FUTEX : 0; phase < PHASES; phase++) {
    long switches = voluntary_switches();
    b_begin[phase] = now_ns();
    for (long i = 0; i < rounds; i++) {
      if (phase == PHASE_PIPE) {
        pipe_receive(pipe_ab[0]);
        pipe_send(pipe_ba[1]);
      } else if (phase == PHASE_FUTEX) {
        futex_receive(&futex_ab, (int)i);
        futex_send(&futex_ba);
      } else {
        event_receive(event_ab);
        event_send(event_ba);
      }
    }
    b_end[phase] = now_ns();
    b_switches[phase] = voluntary_switches() - switches;
    if (futex_only)
      break;
  }
  return NULL;
}

static void nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* Thread A: sends, then waits for B's answer, `rounds` times per phase. */
static void run_a(void) {
  tid_a = (pid_t)syscall(SYS_gettid);
  long switches = voluntary_switches();
  for (int phase = futex_only ? PHASE_FUTEX : 0; phase < PHASES; phase++) {
    for (long i = 0; i < rounds; i++) {
      if (!futex_only)
        nap(20000); /* B is asleep in its receive by now, even on a loaded machine */
      if (phase == PHASE_PIPE) {
        pipe_send(pipe_ab[1]);
        pipe_receive(pipe_ba[0]);
      } else if (phase == PHASE_FUTEX) {
        futex_send(&futex_ab);
        futex_receive(&futex_ba, (int)i);
      } else {
        event_send(event_ab);
        event_receive(event_ba);
      }
    }
    if (futex_only)
      break;
  }
  a_switches = voluntary_switches() - switches;
}

static void *thread_a(void *arg) {
  (void)arg;
  run_a();
  return NULL;
}

/* room: B's end of the socket pair [0], A's [1] */
static int room_fd[2];

static void socket_send(int fd) {
  char c = 1;
  if (send(fd, &c, 1, 0) != 1)
    die("send");
}

static void socket_receive(int fd) {
  char c;
  if (recv(fd, &c, 1, 0) != 1)
    die("recv");
}

static void *room_client(void *arg) {
  (void)arg;
  tid_b = (pid_t)syscall(SYS_gettid);
  for (long i = 0; i < rounds; i++) {
    socket_send(room_fd[0]);
    socket_receive(room_fd[0]);
  }
  return NULL;
}

static void *room_server(void *arg) {
  (void)arg;
  tid_a = (pid_t)syscall(SYS_gettid);
  for (long i = 0; i < rounds; i++) {
    socket_receive(room_fd[1]);
    nap(200000);
    socket_send(room_fd[1]);
  }
  return NULL;
}

static int run_room(void) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, room_fd) != 0)
    die("socketpair");
  pthread_t a, b;
  if (pthread_create(&a, NULL, room_server, NULL) || pthread_create(&b, NULL, room_client, NULL))
    die("pthread_create");
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("tids %d %d %d\n", (int)getpid(), (int)tid_a, (int)tid_b);
  return 0;
}

static void sleep_ms(int n, long ms) {
  for (int i = 0; i < n; i++)
    nap(ms * 1000000L);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s handoff|pingpong|idle|room N\n", argv[0]);
    return 2;
  }
  rounds = atol(argv[2]);
  char go[16];
  if (!fgets(go, sizeof go, stdin))
    return 1;
  if (strcmp(argv[1], "idle") == 0) {
    sleep_ms((int)rounds, 1);
    return 0;
  }
  if (strcmp(argv[1], "room") == 0)
    return run_room();
  futex_only = strcmp(argv[1], "pingpong") == 0;
  if (pipe(pipe_ab) || pipe(pipe_ba))
    die("pipe");
  event_ab = eventfd(0, EFD_CLOEXEC);
  event_ba = eventfd(0, EFD_CLOEXEC);
  if (event_ab < 0 || event_ba < 0)
    die("eventfd");
  uint64_t begin = now_ns();
  pthread_t a, b;
  /* A first: B's phases must not overlap the main thread's mapping of a stack (a page fault
     of B's could then wait for the mmap lock, not for A) */
  if (pthread_create(&a, NULL, thread_a, NULL) || pthread_create(&b, NULL, thread_b, NULL))
    die("pthread_create");
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  double seconds = (double)(now_ns() - begin) / 1e9;
  printf("tids %d %d %d\n", (int)getpid(), (int)tid_a, (int)tid_b);
  if (futex_only) {
    printf("pingpong %ld %.6f sleeps %ld %ld\n", rounds, seconds, a_switches,
           b_switches[PHASE_FUTEX]);
    return 0;
  }
  for (int phase = 0; phase < PHASES; phase++)
    printf("phase %s %llu %llu %ld\n", phase_names[phase], (unsigned long long)b_begin[phase],
           (unsigned long long)b_end[phase], b_switches[phase]);
  fflush(stdout);
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    sleep_ms(5, 2);
    _exit(0);
  }
  printf("child %d\n", (int)child);
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("waitpid");
  return 0;
}
