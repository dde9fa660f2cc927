/* Test input: value-keyed message marks and clock samples; and the traceparent helpers.
 *   messages N             N keyed send/receive pairs, 10 us apart
 *   traceparent VALUE...   parses each value, prints it formatted again and its key */
#include <vprof/vprof.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do
    clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < us * 1000L);
}

int main(int argc, char **argv) {
  int i;
  if (argc > 1 && strcmp(argv[1], "traceparent") == 0) {
    for (i = 2; i < argc; i++) {
      vprof_traceparent tp;
      char out[VPROF_TRACEPARENT_LEN + 1];
      if (vprof_traceparent_parse(argv[i], strlen(argv[i]), &tp) != 0) {
        puts("invalid");
        continue;
      }
      vprof_traceparent_format(&tp, out);
      printf("%s %016llx\n", out, (unsigned long long)vprof_traceparent_key(&tp));
    }
    return 0;
  }
  if (argc > 2 && strcmp(argv[1], "messages") == 0) {
    int n = atoi(argv[2]);
    for (i = 0; i < n; i++) {
      VPROF_MSG_SEND(0x1000u + (unsigned)i);
      spin_us(5);
      VPROF_MSG_RECV(0x1000u + (unsigned)i);
      spin_us(5);
    }
    return 0;
  }
  return 2;
}
