/* The kernel half of the wake-up recorder: scheduler tracepoints of the traced process tree
 * become vprof_sched_record values (runtime/include/vprof/sched_format.h) in a ring buffer that
 * vprof-sched (recorder/src/vprof_sched.c) writes to sched.vpk. libbpf CO-RE, Linux >= 5.18.
 *
 * Cost for a task outside the tree: one task-storage lookup (a pointer load) when it is
 * switched in, one hash lookup (its tgid in `traced`) when it blocks or is woken, and one
 * task-storage lookup when it ends a socket send (the room wake-ups' data wake-up). A traced
 * thread that blocks costs one record, its wake-up another, and its return to the CPU a third
 * only when the task switched out before it was not a traced thread going to sleep (whose
 * SLEEP then carries VPROF_SCHED_NEXT_RUNS instead). A process that executes a program with
 * VPROF_DISABLE=1 in its environment (a load generator) leaves the traced set. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include <vprof/sched_format.h>
#include <vprof/stacks_format.h>

/* The helpers used (bpf_task_pt_regs, bpf_get_current_task_btf) want a GPL-compatible
   licence string. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define VPROF_TASK_RUNNING 0u
#define VPROF_TASK_DEAD 0x80u /* the final switch of an exiting task */
#define VPROF_PF_EXITING 0x4u /* task->flags: do_exit() has begun */
#define VPROF_ENOSYS 38
#define VPROF_EEXIST 17
#define VPROF_FIRST_EXTERNAL_VECTOR 0x20 /* x86: vectors below are exceptions */

/* Traced processes. */
#define VPROF_MAX_PROCESSES 16384

/* Ring fill level (bytes) from which a record wakes the reader up; below it the reader finds
   the records on its next poll (every 100 ms) and the writers pay no wake-up. */
const volatile __u64 wakeup_bytes = 2u << 20;

/* How many processes `traced` holds: the recorder reads it (mmapped .bss) after every poll
   to end once the tree is gone, without a system call. The loader sets it with the root. */
__u32 traced_processes = 0;

/* Nonzero while vprof-sched --alternate has recording paused (an overhead benchmark's
   within-run A/B, docs/recorder.md): the switch, wake-up and send programs return at once,
   the process tree is still followed. Never set otherwise. */
__u32 paused = 0;

/* tgids of the traced processes (value unused); the loader seeds the root. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, VPROF_MAX_PROCESSES);
  __type(key, __u32);
  __type(value, __u8);
} traced SEC(".maps");

/* Per traced thread (task local storage, created at its first sleep or its first room
   wake-up, freed with the task): whether it blocked (a SLEEP was taken) and has not run since.
   A task without it is not a traced thread that slept, which one pointer load tells at every
   switch. */
struct task_state {
  __u8 sleeping;
  /* a sleeper this task woke with a room wake-up (VPROF_SCHED_WAKE_ROOM) and owes the data
     wake-up of its next send (0: none) */
  __u32 room_tid, room_pid;
};
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct task_state);
} tasks SEC(".maps");

/* One ring buffer per CPU (the loader sizes them and fills `rings`): a record is written on
   its own CPU's ring, without the lock and the cache lines a shared ring makes every CPU
   pass to each other. Each ring is in time order; readers sort across CPUs. */
struct ring {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1u << 20);
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1); /* the loader sets the number of possible CPUs */
  __type(key, __u32);
  __array(values, struct ring);
} rings SEC(".maps");

/* Per-CPU counters: [VPROF_LOST_RECORDS] records that found the ring full, counted as the
   reader expands them (a SLEEP with NEXT_RUNS is two), or RUNs that could not be promised
   (no memory for the task's state); [VPROF_LOST_CHILDREN] processes forked by a traced one
   that `traced` had no room for;
   [VPROF_LOST_STACK_ENTRIES] stacks.vpk entries that found their ring full; [VPROF_EMPTY_STACKS]
   stacks the kernel could not walk (no user frame). */
enum {
  VPROF_LOST_RECORDS = 0,
  VPROF_LOST_CHILDREN = 1,
  VPROF_LOST_STACK_ENTRIES = 2,
  VPROF_EMPTY_STACKS = 3,
  VPROF_COUNTERS = 4
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, VPROF_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(__u32 which, __u64 how_many) {
  __u64 *n = bpf_map_lookup_elem(&lost, &which);
  if (n)
    *n += how_many;
}

static __always_inline bool is_traced(__u32 tgid) {
  return tgid != 0 && bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

/* True when the current code runs in hard or soft interrupt context: the task `current` names
   was only interrupted, it is not the waker. preempt_count would say so directly, but it is a
   per-CPU variable whose address kernels without KALLSYMS_ALL do not give to BPF; the x86-64
   entry code tells it as well:
   - an interrupt of kernel code (a system call, a kernel thread, the idle task) runs on the
     CPU's interrupt stack, as do the softirqs it or local_bh_enable() runs: the BPF frame lies
     outside current's own stack [task->stack, end of its user frame);
   - an interrupt of user code runs on the task's stack, above the user frame it saved: that
     frame is then neither a system call's (ax == -ENOSYS, see blocked_syscall) nor an
     exception's (a page fault's error code, below 0x20, in orig_ax) but an interrupt's
     (orig_ax -1 for a system vector such as the timer's, the vector for a device).
   Softirqs in ksoftirqd run on its stack: their waker is ksoftirqd. False on other
   architectures. */
static __always_inline bool in_interrupt_context(void) {
#if defined(__TARGET_ARCH_x86)
  struct task_struct *task = bpf_get_current_task_btf();
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
  __u64 low = (__u64)task->stack, frame;
  if (!regs || low == 0)
    return false;
  __u64 high = (__u64)(regs + 1);
  asm volatile("%[frame] = r10" : [frame] "=r"(frame));
  if (frame < low || frame >= high)
    return true;
  if ((long)regs->ax == -VPROF_ENOSYS)
    return false;
  long code = (long)regs->orig_ax;
  return code < 0 || code >= VPROF_FIRST_EXTERNAL_VECTOR;
#else
  return false;
#endif
}

/* The system call `t` (a user task that just blocked) is in, or -1: a page fault, an
   exception, an io_uring worker. The x86-64 entry code stores -ENOSYS in the user frame's ax
   for the whole system call (the return value replaces it on the way out), while an
   exception's frame keeps the user's rax there and its error code in orig_ax. */
static __always_inline __s64 blocked_syscall(struct task_struct *t) {
#if defined(__TARGET_ARCH_x86)
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
  if (!regs || (long)regs->ax != -VPROF_ENOSYS)
    return -1;
  return (long)regs->orig_ax;
#else
  (void)t;
  return -1;
#endif
}

/* A system call that waits for data from a peer (x86-64 numbers): read, readv, recvfrom,
   recvmsg, recvmmsg. A task inside one that wakes a sleeper consumed data, which frees room in
   the sender's socket buffer; it hands over none. */
static __always_inline bool receives(__s64 nr) {
  return nr == 0 || nr == 19 || nr == 45 || nr == 47 || nr == 299;
}

/* Appends one record taken at `now`; a full ring counts it as lost. */
static __always_inline void emit(__u64 now, __u8 kind, __u8 flags, __u32 tid, __u32 pid,
                                 __u32 other, __u32 other_pid, __u32 arg) {
  __u32 cpu = bpf_get_smp_processor_id();
  void *ring = bpf_map_lookup_elem(&rings, &cpu);
  vprof_sched_record *r = ring ? bpf_ringbuf_reserve(ring, sizeof(*r), 0) : NULL;
  if (!r) {
    count_lost(VPROF_LOST_RECORDS, flags & VPROF_SCHED_NEXT_RUNS ? 2 : 1);
    return;
  }
  r->time_ns = now;
  r->tid = tid;
  r->pid = pid;
  r->other = other;
  r->other_pid = other_pid;
  r->kind = kind;
  r->flags = flags;
  r->cpu = (__u16)cpu;
  r->arg = arg;
  __u64 wake = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
                                                                          : BPF_RB_NO_WAKEUP;
  bpf_ringbuf_submit(r, wake);
}

/* ---- user stacks (stacks.vpk, runtime/include/vprof/stacks_format.h) ---- */

/* Set by the loader: take the sleeper's stack at each SLEEP and the waker's at each WAKE of a
   traced waker (the on-CPU samples come from their own program, attached only when wanted). */
const volatile __u32 take_stacks = 0;

/* One ring buffer per CPU for stacks.vpk's entries, as `rings` for sched.vpk's records. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1); /* the loader sets the number of possible CPUs */
  __type(key, __u32);
  __array(values, struct ring);
} stack_rings SEC(".maps");

/* A STACK entry being built (per CPU: too large for the BPF stack). */
struct stack_scratch {
  vprof_stacks_stack head;
  __u64 pc[VPROF_STACKS_MAX_FRAMES];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

/* Ids of the stacks written lately: a stack seen again costs a SAMPLE only. An evicted id is
   written again, and two CPUs may write the same new stack at once: the reader (vprof-sched)
   drops the repeats, so each id is defined once in the file. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u64);
  __type(value, __u8);
} known_stacks SEC(".maps");

/* The word at the user stack pointer of `task` (the return address into the caller when the
   user code was in a function that pushed no frame), 0 when unreadable. */
static __always_inline __u64 word_at_user_sp(struct task_struct *task) {
#if defined(__TARGET_ARCH_x86)
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
  __u64 word = 0;
  if (regs && bpf_probe_read_user(&word, sizeof word, (void *)regs->sp) == 0)
    return word;
#else
  (void)task;
#endif
  return 0;
}

/* FNV-1a over the frames and the stack-pointer word; never 0. */
static __always_inline __u64 stack_hash(const struct stack_scratch *s, __u32 frames) {
  __u64 h = 14695981039346656037ull ^ s->head.sp_word;
  for (__u32 i = 0; i < VPROF_STACKS_MAX_FRAMES; ++i) {
    if (i >= frames)
      break;
    h = (h ^ s->pc[i]) * 1099511628211ull;
  }
  h ^= frames;
  return h ? h : 1;
}

/* The id of the current task's user stack, its STACK entry written when the id is new; 0 when
   the kernel found no user frame or no ring. `ctx` is the program's context. */
static __always_inline __u64 user_stack_id(void *ctx, struct task_struct *task, void *ring) {
  __u32 zero = 0;
  struct stack_scratch *s = bpf_map_lookup_elem(&stack_scratch, &zero);
  if (!s || !ring)
    return 0;
  long bytes = bpf_get_stack(ctx, s->pc, sizeof s->pc, BPF_F_USER_STACK);
  if (bytes < (long)sizeof(__u64)) {
    count_lost(VPROF_EMPTY_STACKS, 1);
    return 0;
  }
  if (bytes > (long)sizeof s->pc)
    bytes = sizeof s->pc;
  __u32 frames = (__u32)bytes / sizeof(__u64);
  s->head.sp_word = word_at_user_sp(task);
  __u64 id = stack_hash(s, frames);
  if (bpf_map_lookup_elem(&known_stacks, &id))
    return id;
  s->head.entry.size = VPROF_STACKS_STACK_SIZE + frames * sizeof(__u64);
  s->head.entry.kind = VPROF_STACKS_STACK;
  s->head.id = id;
  s->head.frames = frames;
  s->head.flags = frames == VPROF_STACKS_MAX_FRAMES ? VPROF_STACKS_TRUNCATED : 0;
  __u64 size = VPROF_STACKS_STACK_SIZE + (__u64)bytes;
  if (size > sizeof *s)
    return 0;
  if (bpf_ringbuf_output(ring, s, size, 0) != 0) {
    count_lost(VPROF_LOST_STACK_ENTRIES, 1);
    return id; /* the SAMPLE names a stack the file lacks: the reader counts it */
  }
  __u8 one = 1;
  bpf_map_update_elem(&known_stacks, &id, &one, BPF_ANY);
  return id;
}

/* Appends one SAMPLE of the current task's user stack, taken at `now`. */
static __always_inline void emit_stack(void *ctx, __u64 now, __u8 what, __u8 flags, __u32 tid,
                                       __u32 pid, __u32 other) {
  __u32 cpu = bpf_get_smp_processor_id();
  void *ring = bpf_map_lookup_elem(&stack_rings, &cpu);
  __u64 id = user_stack_id(ctx, bpf_get_current_task_btf(), ring);
  if (id == 0)
    return;
  vprof_stacks_sample *e = bpf_ringbuf_reserve(ring, sizeof(*e), 0);
  if (!e) {
    count_lost(VPROF_LOST_STACK_ENTRIES, 1);
    return;
  }
  e->entry.size = VPROF_STACKS_SAMPLE_SIZE;
  e->entry.kind = VPROF_STACKS_SAMPLE;
  e->time_ns = now;
  e->stack = id;
  e->tid = tid;
  e->pid = pid;
  e->other = other;
  e->what = what;
  e->flags = flags;
  e->cpu = (__u16)cpu;
  bpf_ringbuf_submit(e, 0);
}

/* The CPU clock's sample (a perf software event on every CPU, at the loader's frequency): the
   user stack of a traced thread that is running. */
SEC("perf_event")
int vprof_cpu_sample(struct bpf_perf_event_data *ctx) {
  if (paused)
    return 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = (__u32)(id >> 32), tid = (__u32)id;
  if (tid == 0 || !is_traced(tgid))
    return 0;
  __u8 flags = 0;
#if defined(__TARGET_ARCH_x86)
  /* kernel addresses are the upper half (the context allows 8-byte loads only: not cs) */
  if (ctx->regs.ip >= 0xffff800000000000ull)
    flags = VPROF_STACKS_IN_KERNEL;
#endif
  emit_stack(ctx, bpf_ktime_get_ns(), VPROF_STACKS_ONCPU, flags, tid, tgid, 0);
  return 0;
}

/* prev_state is the state the scheduler acted on (Linux >= 5.18); prev->__state may already
   have been set back to running by a concurrent waker. One record at most per switch: the
   SLEEP of a traced `prev` also stands for the RUN of a traced `next` that slept
   (VPROF_SCHED_NEXT_RUNS), which the readers expand into a RUN record. */
SEC("tp_btf/sched_switch")
int BPF_PROG(vprof_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state) {
  if (paused)
    return 0;
  struct task_state *ns = bpf_task_storage_get(&tasks, next, NULL, 0);
  bool next_runs = ns && ns->sleeping;
  if (next_runs)
    ns->sleeping = 0;
  /* A preempted task stays runnable whatever its state says. An exiting task (its last
     switch, or waits while it closes its files) is done: no record follows its EXIT. */
  bool prev_sleeps = false;
  if (!preempt && prev_state != VPROF_TASK_RUNNING && !(prev_state & VPROF_TASK_DEAD) &&
      !(prev->flags & VPROF_PF_EXITING)) {
    struct task_state *ps = bpf_task_storage_get(&tasks, prev, NULL, 0);
    prev_sleeps = ps != NULL;
    if (!ps && is_traced(prev->tgid)) { /* a traced thread's first sleep */
      prev_sleeps = true;
      ps = bpf_task_storage_get(&tasks, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
      if (!ps)
        count_lost(VPROF_LOST_RECORDS, 1); /* no memory for its state: its RUN will be missing */
    }
    if (ps)
      ps->sleeping = 1;
  }
  __u64 now = bpf_ktime_get_ns();
  if (prev_sleeps) {
    emit(now, VPROF_SCHED_SLEEP, next_runs ? VPROF_SCHED_NEXT_RUNS : 0, prev->pid, prev->tgid,
         next->pid, next->tgid, vprof_sched_sleep_arg(blocked_syscall(prev), prev_state));
    if (take_stacks) /* prev is still the current task here */
      emit_stack(ctx, now, VPROF_STACKS_SLEEP, 0, prev->pid, prev->tgid, 0);
  } else if (next_runs) {
    emit(now, VPROF_SCHED_RUN, 0, next->pid, next->tgid, prev->pid, prev->tgid, 0);
  }
  return 0;
}

/* A wake-up of a traced task. Its arg is the system call the waker is in. A room wake-up: a
   traced task receiving (it consumed data from a socket, which frees room in the sender's
   buffer) wakes a sleeper that waits to receive too; the kernel wakes every sleeper on the
   socket's wait queue for that (AF_UNIX stream sockets), the data it waits for comes later.
   The waker then owes it the data wake-up of its next send (data_sent). */
SEC("tp_btf/sched_waking")
int BPF_PROG(vprof_sched_waking, struct task_struct *p) {
  if (paused)
    return 0;
  __u32 tgid = p->tgid;
  struct task_state *ps = bpf_task_storage_get(&tasks, p, NULL, 0);
  if ((!ps && !is_traced(tgid)) || (p->flags & VPROF_PF_EXITING))
    return 0;
  struct task_struct *current = bpf_get_current_task_btf();
  __u64 waker = bpf_get_current_pid_tgid();
  __u8 flags = 0;
  __s64 waker_syscall = -1;
  if (in_interrupt_context())
    flags = VPROF_SCHED_WAKER_IRQ;
  else
    waker_syscall = blocked_syscall(current);
  if (ps && ps->sleeping && receives(waker_syscall) && receives(blocked_syscall(p)) &&
      is_traced((__u32)(waker >> 32))) {
    struct task_state *ws =
        bpf_task_storage_get(&tasks, current, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (ws) {
      flags |= VPROF_SCHED_WAKE_ROOM;
      ws->room_tid = p->pid;
      ws->room_pid = tgid;
    }
  }
  __u64 now = bpf_ktime_get_ns();
  emit(now, VPROF_SCHED_WAKE, flags, p->pid, tgid, (__u32)waker, (__u32)(waker >> 32),
       vprof_sched_sleep_arg(waker_syscall, 0));
  if (take_stacks && !(flags & VPROF_SCHED_WAKER_IRQ) && is_traced((__u32)(waker >> 32)))
    emit_stack(ctx, now, VPROF_STACKS_WAKER, 0, (__u32)waker, (__u32)(waker >> 32), p->pid);
  return 0;
}

/* A traced task that owes a room wake-up's sleeper its data has sent: the data wake-up (a
   WAKE with VPROF_SCHED_WAKE_DATA, at the send's end). The kernel records none: the
   sleeper, runnable since the room wake-up, is no longer on the wait queue. Whether it still
   sleeps is the reader's to check (it may have run meanwhile). */
static __always_inline void data_sent(void) {
  struct task_struct *task = bpf_get_current_task_btf();
  struct task_state *ts = bpf_task_storage_get(&tasks, task, NULL, 0);
  if (!ts || ts->room_tid == 0)
    return;
  __u32 tid = ts->room_tid, pid = ts->room_pid;
  ts->room_tid = 0;
  __u64 me = bpf_get_current_pid_tgid();
  emit(bpf_ktime_get_ns(), VPROF_SCHED_WAKE, VPROF_SCHED_WAKE_DATA, tid, pid, (__u32)me,
       (__u32)(me >> 32), vprof_sched_sleep_arg(blocked_syscall(task), 0));
}

/* A socket send ended (write, writev, send, sendto, sendmsg, sendmmsg on a socket; Linux >=
   6.5): the data is in the receiver's queue, where the kernel would have woken a sleeper still
   on its wait queue. Fires on socket sends only: no other system call pays for it. A kernel
   without the tracepoint loads the rest (the loader turns this program off): room wake-ups
   keep their first waker there. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(vprof_sock_sent, struct sock *sk, int ret, int flags) {
  if (ret > 0 && !paused)
    data_sent();
  return 0;
}

/* Threads join with their process; a process forked by a traced one is traced from its first
   instruction (this runs before the child is first woken). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(vprof_sched_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 tgid = child->tgid;
  if (tgid == parent->tgid || !is_traced(parent->tgid))
    return 0;
  __u8 one = 1;
  long err = bpf_map_update_elem(&traced, &tgid, &one, BPF_NOEXIST);
  if (err == 0)
    __sync_fetch_and_add(&traced_processes, 1);
  else if (err != -VPROF_EEXIST)
    count_lost(VPROF_LOST_CHILDREN, 1);
  return 0;
}

/* Leaves the traced set: `p` (its process's only thread after exec) and its process; what the
   process forks from now on is not traced either. */
static __always_inline void untrace_process(struct task_struct *p) {
  __u32 tgid = p->tgid;
  bpf_task_storage_delete(&tasks, p);
  if (bpf_map_delete_elem(&traced, &tgid) == 0)
    __sync_fetch_and_sub(&traced_processes, 1);
}

/* The environment a program was started with, scanned for the runtime's switch-off
   (VPROF_DISABLE set to a true word, as runtime/src/options.c reads it). A per-CPU buffer:
   the BPF stack is too small for it. */
#define VPROF_ENV_SCAN 4096u /* bytes of the environment scanned */
#define VPROF_ENV_CHUNK 1024u
struct env_buffer {
  char bytes[VPROF_ENV_SCAN + 32];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct env_buffer);
} env_scratch SEC(".maps");

static const char vprof_disable_name[] = "VPROF_DISABLE=";

/* True when the variable starting at b[i] (i < VPROF_ENV_SCAN) reads
   VPROF_DISABLE=<1|true|yes|on>; what follows the scanned bytes is zeros (the buffer's slack). */
static __always_inline bool disables_tracing(const char *b, __u32 i) {
  const __u32 n = sizeof(vprof_disable_name) - 1;
  for (__u32 k = 0; k < n; ++k)
    if (b[i + k] != vprof_disable_name[k])
      return false;
  const char *v = b + i + n;
  return (v[0] == '1' && v[1] == 0) || (v[0] == 'o' && v[1] == 'n' && v[2] == 0) ||
         (v[0] == 'y' && v[1] == 'e' && v[2] == 's' && v[3] == 0) ||
         (v[0] == 't' && v[1] == 'r' && v[2] == 'u' && v[3] == 'e' && v[4] == 0);
}

struct env_scan {
  struct env_buffer *buf;
  bool disabled;
};

/* bpf_loop's step: byte i of the environment; stops at VPROF_DISABLE's true setting. */
static long scan_env_byte(__u32 i, void *ctx) {
  struct env_scan *scan = ctx;
  const char *b = scan->buf->bytes;
  if (i >= VPROF_ENV_SCAN)
    return 1;
  if (i > 0 && b[i - 1] != 0)
    return 0; /* not the start of a variable */
  if (b[i] != 'V' || !disables_tracing(b, i))
    return 0;
  scan->disabled = true;
  return 1;
}

/* A traced process that executes a program with VPROF_DISABLE=1 in its environment (a load
   generator the workload script starts, such as pgbench) records no streams: the kernel's view
   of its threads would cost every switch and wake-up of the run and give the analyzer nothing.
   It leaves the traced set here, before its first instruction. Only the environment's first
   VPROF_ENV_SCAN bytes are scanned (the variable should come early: `env VPROF_DISABLE=1 cmd`
   puts it first). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(vprof_sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
  if (!is_traced(p->tgid))
    return 0;
  __u32 zero = 0;
  struct env_buffer *buf = bpf_map_lookup_elem(&env_scratch, &zero);
  struct mm_struct *mm = p->mm;
  if (!buf || !mm)
    return 0;
  __u64 start = mm->env_start, end = mm->env_end;
  if (end <= start)
    return 0;
  __u64 size = end - start;
  if (size > VPROF_ENV_SCAN)
    size = VPROF_ENV_SCAN;
  /* the strings were just copied onto the new stack by exec: resident, readable here */
  for (__u32 c = 0; c < VPROF_ENV_SCAN / VPROF_ENV_CHUNK; ++c) {
    __u64 off = (__u64)c * VPROF_ENV_CHUNK;
    if (off >= size)
      break;
    long err = size - off >= VPROF_ENV_CHUNK
                   ? bpf_probe_read_user(buf->bytes + off, VPROF_ENV_CHUNK, (void *)(start + off))
                   : bpf_probe_read_user(buf->bytes + off, (size - off) & (VPROF_ENV_CHUNK - 1),
                                         (void *)(start + off));
    if (err != 0)
      return 0;
  }
  for (__u32 k = 0; k < 32; ++k)
    buf->bytes[size + k] = 0; /* ends the last, perhaps cut, string */
  struct env_scan scan = {.buf = buf, .disabled = false};
  bpf_loop((__u32)size, scan_env_byte, &scan, 0);
  if (scan.disabled)
    untrace_process(p);
  return 0;
}

/* Runs after do_exit() counted the thread out of signal->live: zero means the process's last
   thread is leaving (a leader that exits before its threads does not end the process). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(vprof_sched_exit, struct task_struct *p) {
  __u32 tgid = p->tgid;
  if (!is_traced(tgid))
    return 0;
  emit(bpf_ktime_get_ns(), VPROF_SCHED_EXIT, 0, p->pid, tgid, 0, 0,
       0); /* its state goes with the task */
  if (BPF_CORE_READ(p, signal, live.counter) == 0 && bpf_map_delete_elem(&traced, &tgid) == 0)
    __sync_fetch_and_sub(&traced_processes, 1);
  return 0;
}
