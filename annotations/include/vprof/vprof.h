/* vprof annotations: mark semantic intervals (transactions, requests), the threads that
 * work for them, hand-offs between threads and custom blocking primitives.
 * C99 and C++; compiles to nothing unless VPROF_ENABLE is defined by the build
 * (-DVPROF_ENABLE), in which case the program must link libvprof_rt.
 *
 * Example (C):
 *
 *   #include <vprof/vprof.h>
 *
 *   void handle(struct request *rq) {
 *     uint64_t iv;
 *     VPROF_INTERVAL_BEGIN(iv, "GET");      // this thread now works for iv
 *     rq->interval = iv;
 *     VPROF_HANDOFF_SEND(&worker_queue);     // wakes a worker through a user queue
 *     enqueue(&worker_queue, rq);
 *     VPROF_DETACH(iv);                      // the worker carries on
 *   }
 *
 *   void worker(void) {
 *     struct request *rq = dequeue(&worker_queue);
 *     VPROF_HANDOFF_RECV(&worker_queue);
 *     VPROF_ATTACH(rq->interval);
 *     ...
 *     VPROF_INTERVAL_END(rq->interval);      // ends it, on another thread than BEGIN
 *   }
 *
 * C++ adds vprof::interval (RAII: begin in the constructor, end in the destructor) and
 * vprof::attachment (attach/detach), in <vprof/vprof.hpp>.
 *
 * Custom blocking primitives (spin-then-futex locks, event objects) supply wake-up
 * edges with VPROF_WAIT_BEGIN(obj) / VPROF_WAIT_END(obj) around the blocking part and
 * VPROF_WAKE(obj) where another thread releases it. pthread mutexes, condition
 * variables, rwlocks and POSIX semaphores need no marks: the runtime sees them.
 */
#ifndef VPROF_VPROF_H
#define VPROF_VPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A static descriptor of an interval type label ("NewOrder", "GET"). The runtime
 * gives it an id on first use and writes the text once; `id` is its cache. */
typedef struct vprof_label {
  const char *name;
  uint32_t id; /* 0 until the runtime registers the label */
} vprof_label;

/* The C ABI, implemented by libvprof_rt. All calls are cheap (a timestamp and a
 * 16-byte store), never block, never fail visibly, and do nothing while tracing is
 * off (VPROF_DISABLE=1 in the environment, or the trace directory cannot be created). */

/* Begins a new interval on this thread (which is attached to it) and returns its id,
 * unique across the processes of a run. `label` may be NULL. */
uint64_t vprof_interval_begin(vprof_label *label);
/* Begins an interval whose id the program chose (e.g. a transaction number). */
void vprof_interval_begin_id(uint64_t id, vprof_label *label);
/* Ends the interval; the calling thread need not be the one that began it. */
void vprof_interval_end(uint64_t id);
/* The calling thread starts / stops working on behalf of interval `id`. */
void vprof_interval_attach(uint64_t id);
void vprof_interval_detach(uint64_t id);
/* Hand-off through a user queue: SEND where work is published, RECV where another
 * thread takes it; the analyzer draws a wake-up edge from the send to the receive. */
void vprof_handoff_send(const void *obj);
void vprof_handoff_recv(const void *obj);
/* Custom blocking primitives. */
void vprof_wait_begin(const void *obj);
void vprof_wait_end(const void *obj);
void vprof_wake(const void *obj);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(VPROF_ENABLE)

#define VPROF_INTERVAL_BEGIN(id_lvalue, label_literal)                                             \
  do {                                                                                             \
    static vprof_label vprof_label_desc_ = {label_literal, 0};                                     \
    (id_lvalue) = vprof_interval_begin(&vprof_label_desc_);                                        \
  } while (0)
#define VPROF_INTERVAL_BEGIN_ID(id, label_literal)                                                 \
  do {                                                                                             \
    static vprof_label vprof_label_desc_ = {label_literal, 0};                                     \
    vprof_interval_begin_id((id), &vprof_label_desc_);                                             \
  } while (0)
#define VPROF_INTERVAL_END(id) vprof_interval_end(id)
#define VPROF_ATTACH(id) vprof_interval_attach(id)
#define VPROF_DETACH(id) vprof_interval_detach(id)
#define VPROF_HANDOFF_SEND(obj) vprof_handoff_send(obj)
#define VPROF_HANDOFF_RECV(obj) vprof_handoff_recv(obj)
#define VPROF_WAIT_BEGIN(obj) vprof_wait_begin(obj)
#define VPROF_WAIT_END(obj) vprof_wait_end(obj)
#define VPROF_WAKE(obj) vprof_wake(obj)

#else /* annotations disabled: no code, no reference to the runtime */

#define VPROF_INTERVAL_BEGIN(id_lvalue, label_literal)                                             \
  do {                                                                                             \
    (id_lvalue) = 0;                                                                               \
  } while (0)
#define VPROF_INTERVAL_BEGIN_ID(id, label_literal)                                                 \
  do {                                                                                             \
    (void)(id);                                                                                    \
  } while (0)
#define VPROF_INTERVAL_END(id) ((void)(id))
#define VPROF_ATTACH(id) ((void)(id))
#define VPROF_DETACH(id) ((void)(id))
#define VPROF_HANDOFF_SEND(obj) ((void)(obj))
#define VPROF_HANDOFF_RECV(obj) ((void)(obj))
#define VPROF_WAIT_BEGIN(obj) ((void)(obj))
#define VPROF_WAIT_END(obj) ((void)(obj))
#define VPROF_WAKE(obj) ((void)(obj))

#endif /* VPROF_ENABLE */

#endif /* VPROF_VPROF_H */
