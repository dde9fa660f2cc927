/* Test program: emits numbered records (arg = sequence number) and then exits normally,
 * kills itself with SIGKILL, forks, or changes its ids. Usage:
 * emit plain|exec|clock|kill|fork|setxid N */
#define _GNU_SOURCE
#include <vprof/probe.h>
#include <vprof/vprof.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void emit_seq(uint64_t from, uint64_t n) {
  uint64_t i;
  for (i = 0; i < n; i++)
    vprof_emit_(VPROF_REC_ENTER, from + i);
}

static uint64_t begin_labelled(void) {
  uint64_t iv;
  VPROF_INTERVAL_BEGIN(iv, "Parent\tlabel");
  return iv;
}

/* 1 if a thread of this process is named `name` (/proc/self/task/<tid>/comm). */
static int has_thread_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int found = 0;
  while (d && (e = readdir(d)) != NULL && !found) {
    char path[300], comm[32] = "";
    FILE *f;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    f = fopen(path, "r");
    if (f && fgets(comm, sizeof comm, f)) {
      comm[strcspn(comm, "\n")] = 0;
      found = !strcmp(comm, name);
    }
    if (f)
      fclose(f);
  }
  if (d)
    closedir(d);
  return found;
}

int main(int argc, char **argv) {
  uint64_t n, iv;
  if (argc != 3)
    return 2;
  n = strtoull(argv[2], NULL, 10);
  if (!strcmp(argv[1], "plain")) {
    emit_seq(0, n);
    iv = begin_labelled();
    VPROF_INTERVAL_END(iv);
    printf("ok %llu %llx\n", (unsigned long long)n, (unsigned long long)iv);
    return 0;
  }
  if (!strcmp(argv[1], "exec")) { /* the new image records under the same pid */
    char *args[] = {argv[0], "plain", argv[2], NULL};
    emit_seq(0, n);
    execv(argv[0], args);
    return 4;
  }
  if (!strcmp(argv[1], "clock")) { /* two records 30 ms apart; N=1: then SIGKILL */
    struct timespec a, b, pause = {0, 30000000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    vprof_emit_(VPROF_REC_ENTER, 1);
    nanosleep(&pause, NULL);
    vprof_emit_(VPROF_REC_ENTER, 2);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    fflush(stdout);
    if (n == 1)
      kill(getpid(), SIGKILL);
    return 0;
  }
  if (!strcmp(argv[1], "kill")) {
    emit_seq(0, n);
    kill(getpid(), SIGKILL);
    return 3;
  }
  if (!strcmp(argv[1], "setxid")) {
    /* glibc makes every thread of the process change its ids (a signal to each): the
     * drain, which blocks the program's signals, must take part or this never returns */
    int drain;
    emit_seq(0, n);
    drain = has_thread_named("vprof-drain");
    if (setgid(getgid()) != 0 || setuid(getuid()) != 0)
      return 5;
    emit_seq(n, n);
    printf("drain %d\n", drain);
    return 0;
  }
  if (!strcmp(argv[1], "fork")) {
    pid_t child;
    int status;
    iv = begin_labelled();
    emit_seq(0, n);
    child = fork();
    if (child == 0) {
      uint64_t civ = begin_labelled(); /* label id inherited from the parent */
      emit_seq(1000000000, n / 2);
      VPROF_INTERVAL_END(civ);
      exit(0);
    }
    waitpid(child, &status, 0);
    emit_seq(n, n);
    VPROF_INTERVAL_END(iv);
    printf("%d %d\n", (int)getpid(), (int)child);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  return 2;
}
