/* What a socket send costs with the recorder on (benchmarks/recorder/send_cost.sh): one thread
 * sends a byte over an AF_UNIX stream socket pair and receives it, N times; prints the mean
 * nanoseconds of one send + receive. The recorder's sock_send_length program runs on every
 * send of the machine, traced or not. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  int fd[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) {
    perror("send_cost: socketpair");
    return 1;
  }
  char c = 1;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++)
    if (send(fd[0], &c, 1, 0) != 1 || recv(fd[1], &c, 1, 0) != 1) {
      perror("send_cost: send/recv");
      return 1;
    }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n);
  return 0;
}
