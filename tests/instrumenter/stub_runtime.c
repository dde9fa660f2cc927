/* Test-only stand-in for libvprof_rt: counts probe ENTER/EXIT records (the window stays
 * empty, so every record reaches vprof_emit_slow_now_) and prints the counts at exit, so the
 * golden tests can check that probes fire and are balanced. */
#include <stdio.h>
#include <vprof/probe.h>
#include <vprof/vprof.h>

__thread vprof_thread_window vprof_window_;
static unsigned long enters, exits;

void vprof_emit_slow_(unsigned kind, uint64_t arg, uint64_t ticks) {
  (void)arg;
  (void)ticks;
  if (kind == VPROF_REC_ENTER)
    ++enters;
  else if (kind == VPROF_REC_EXIT)
    ++exits;
}

void vprof_emit_slow_now_(unsigned kind, uint64_t arg) { vprof_emit_slow_(kind, arg, 0); }

uint64_t vprof_interval_begin(vprof_label *label) {
  (void)label;
  return 1;
}
void vprof_interval_begin_id(uint64_t id, vprof_label *label) { (void)id, (void)label; }
void vprof_interval_end(uint64_t id) { (void)id; }
void vprof_interval_attach(uint64_t id) { (void)id; }
void vprof_interval_detach(uint64_t id) { (void)id; }
void vprof_handoff_send(const void *obj) { (void)obj; }
void vprof_handoff_recv(const void *obj) { (void)obj; }
void vprof_wait_begin(const void *obj) { (void)obj; }
void vprof_wait_end(const void *obj) { (void)obj; }
void vprof_wake(const void *obj) { (void)obj; }

__attribute__((destructor)) static void vprof_stub_report(void) {
  fprintf(stderr, "vprof-stub: enter=%lu exit=%lu\n", enters, exits);
}
