/* Accuracy program "fsync_io": the planted cause is I/O wait. Per interval io_prepare is
 * constant (4 u); io_sync_block does k rounds of (write a 4-64 KiB block, fsync), k
 * drawn uniformly from {0, 1, 2} (Var(k) = 2/3), so its time is k fsyncs whose duration the
 * disk decides (~0.3-8 ms on the VMs here); io_index_update is U(0, 40) u of CPU
 * (Var 133 u^2 = 13333 us^2: U(0, 100) made the sibling dominate whenever this VM's disk
 * synced in ~0.3 ms). As the fsync time is not under the program's control the analytic
 * share is not given (nan); the realised share (Var of io_sync_block's measured time over
 * Var(L)) is the reference (tests/accuracy/test_loop.py needs it above 0.5, i.e.
 * dominant). The file lives in $ACC_IO_DIR (default:
 * the current directory); on tmpfs fsync is free and the share collapses. */
#include "acc_common.h"

#include <fcntl.h>
#include <unistd.h>

static double *g_bytes, *g_noise_u;
static int *g_rounds;
static double *g_cause_ns, *g_lat_ns;
static int g_fd = -1;
static char g_block[64 * 1024];

void io_sync_block(int i) {
  size_t len = (size_t)g_bytes[i];
  for (int k = 0; k < g_rounds[i]; ++k)
    if (write(g_fd, g_block, len) != (ssize_t)len || fsync(g_fd) != 0) {
      perror("fsync_io: write/fsync");
      exit(1);
    }
}

void io_prepare(int i) {
  (void)i;
  ACC_SPIN_UNITS(4);
}
void io_index_update(int i) { ACC_SPIN_UNITS(g_noise_u[i]); }

/* The root: one interval per commit. */
void commit_record(int i) {
  uint64_t iv;
  uint64_t t0 = ACC_NOW_NS();
  VPROF_INTERVAL_BEGIN(iv, "commit");
  io_prepare(i);
  uint64_t t = ACC_NOW_NS();
  io_sync_block(i);
  g_cause_ns[i] = (double)(ACC_NOW_NS() - t);
  io_index_update(i);
  VPROF_INTERVAL_END(iv);
  g_lat_ns[i] = (double)(ACC_NOW_NS() - t0);
}

int main(int argc, char **argv) {
  acc_options o;
  acc_parse(argc, argv, &o, 300);
  int n = o.intervals;
  uint64_t rng = o.seed;
  const char *dir = getenv("ACC_IO_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/acc_fsync_io.%ld.dat", dir && *dir ? dir : ".", (long)getpid());
  g_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_fd < 0) {
    fprintf(stderr, "fsync_io: cannot create %s\n", path);
    return 1;
  }
  memset(g_block, 'v', sizeof g_block);
  g_bytes = acc_xcalloc(n, sizeof(double));
  g_noise_u = acc_xcalloc(n, sizeof(double));
  g_rounds = acc_xcalloc(n, sizeof(int));
  g_cause_ns = acc_xcalloc(n, sizeof(double));
  g_lat_ns = acc_xcalloc(n, sizeof(double));
  for (int i = 0; i < n; ++i) {
    g_bytes[i] = acc_uniform(&rng, 4096, 65536);
    g_noise_u[i] = acc_uniform(&rng, 0, 40);
    g_rounds[i] = (int)(acc_rng_next(&rng) % 3);
  }
  for (int i = 0; i < n; ++i)
    commit_record(i);
  close(g_fd);
  unlink(path);
  acc_report("fsync_io", "io_sync_block", g_lat_ns, g_cause_ns, NULL, n, -1);
  return 0;
}
