/* Accuracy program "alloc": the planted cause is allocation. Per interval
 * alloc_scratch mallocs a buffer of U(64 KiB, 4 MiB), touches every byte (memset, so the
 * page faults and zeroing are paid), reads one byte back and frees it; its time grows
 * with the drawn size, through malloc/mmap, page faults and memset (libc and kernel: the
 * program does not control it exactly, so the analytic share is not given). Siblings:
 * alloc_parse constant 40 us, alloc_checksum U(0, 300) us (Var 7500 us^2). The realised
 * share Var(T_alloc_scratch)/Var(L) is the reference (~0.5-0.8 on the VMs here). */
#include "acc_common.h"

static double *g_bytes, *g_noise_us;
static double *g_cause_ns, *g_lat_ns;
static volatile unsigned char g_sink;

void alloc_scratch(int i) {
  size_t len = (size_t)g_bytes[i];
  unsigned char *p = malloc(len);
  if (!p) {
    fprintf(stderr, "alloc: out of memory\n");
    exit(1);
  }
  memset(p, (int)(i & 0xff), len);
  g_sink = p[len / 2];
  free(p);
}

void alloc_parse(int i) {
  (void)i;
  ACC_SPIN_US(40);
}
void alloc_checksum(int i) { ACC_SPIN_US(g_noise_us[i]); }

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
  acc_parse(argc, argv, &o, 1000);
  int n = o.intervals;
  uint64_t rng = o.seed;
  g_bytes = acc_xcalloc(n, sizeof(double));
  g_noise_us = acc_xcalloc(n, sizeof(double));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_bytes[i] = acc_uniform(&rng, 64 * 1024, 4 * 1024 * 1024);
    g_noise_us[i] = acc_uniform(&rng, 0, 300);
  }
  for (int i = 0; i < n; ++i)
    handle_message(i);
  acc_report("alloc", "alloc_scratch", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
