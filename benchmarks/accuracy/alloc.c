/* Accuracy program "alloc": the planted cause is allocation. Per interval alloc_scratch
 * mallocs a buffer of U(1, 16) MiB, touches every byte (memset), reads one byte back and
 * frees it. mallopt(M_MMAP_THRESHOLD, 64 KiB) makes every such malloc a fresh mmap, so
 * each interval pays page faults and zeroing in proportion to the drawn size (~0.25 ms
 * per MiB here) instead of reusing warm heap memory. The cost is set by libc and the
 * kernel, so the analytic share is not given; the realised share (~0.7-0.8) is the
 * reference. Siblings: alloc_parse constant 4 u, alloc_checksum U(0, 200) u
 * (Var 3333 u^2; 1 u = 10 us). The touch (memset) carries most of the cause's variance, and
 * its own share is printed on a `call:` line: on a loaded machine free()'s munmap (TLB
 * shootdowns to busy CPUs) takes more of the rest. */
#include "acc_common.h"

#include <malloc.h>

static double *g_bytes, *g_noise_u;
static double *g_cause_ns, *g_touch_ns, *g_lat_ns;
static volatile unsigned char g_sink;

void alloc_scratch(int i) {
  size_t len = (size_t)g_bytes[i];
  unsigned char *p = malloc(len);
  if (!p) {
    fprintf(stderr, "alloc: out of memory\n");
    exit(1);
  }
  uint64_t t = ACC_NOW_NS();
  memset(p, (int)(i & 0xff) | 1, len);
  g_touch_ns[i] = (double)(ACC_NOW_NS() - t);
  g_sink = p[len / 2];
  free(p);
}

void alloc_parse(int i) {
  (void)i;
  ACC_SPIN_UNITS(4);
}
void alloc_checksum(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per message. */
void handle_message(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "message");
  alloc_parse(i);
  uint64_t t = ACC_NOW_NS();
  alloc_scratch(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  alloc_checksum(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  mallopt(M_MMAP_THRESHOLD, 64 * 1024); /* fixed threshold: every big block is fresh */
  g_bytes = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_touch_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_bytes[i] = acc_uniform(&rng, 1 << 20, 16 << 20);
    g_noise_u[i] = acc_uniform(&rng, 0, 200);
  }
  for (int i = 0; i < n; ++i)
    handle_message(i);
  acc_report("alloc", "alloc_scratch", g_lat_ns, g_cause_ns, NULL, n, -1);
  acc_report_call("alloc", "memset", g_lat_ns, g_touch_ns, n);
  return 0;
}
