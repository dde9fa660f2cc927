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
 * Messages between processes and hosts (docs/multihost.md): the program carries a 64-bit
 * key in its protocol (a request id; here the interval id) and marks both ends.
 *
 *   // client (host A)                      // server (host B)
 *   uint64_t iv;                            struct req rq;
 *   VPROF_INTERVAL_BEGIN(iv, "GET");         read_request(fd, &rq);
 *   rq.id = iv;                              VPROF_MSG_RECV(rq.id);  // after it arrived
 *   VPROF_MSG_SEND(rq.id);                   VPROF_ATTACH(rq.id);    // works for iv now
 *   write_request(fd, &rq);                  serve(&rq);
 *   read_reply(fd, &rp);                     VPROF_DETACH(rq.id);
 *   VPROF_MSG_RECV(rq.id);                   VPROF_MSG_SEND(rq.id);  // before it leaves
 *   VPROF_INTERVAL_END(iv);                  write_reply(fd, &rp);
 *
 * Programs that already propagate a W3C `traceparent` header use its parent-id as the
 * key: vprof_traceparent_parse / vprof_traceparent_format below.
 *
 * Custom blocking primitives (spin-then-futex locks, event objects) supply wake-up
 * edges with VPROF_WAIT_BEGIN(obj) / VPROF_WAIT_END(obj) around the blocking part and
 * VPROF_WAKE(obj) where another thread releases it. pthread mutexes, condition
 * variables, rwlocks and POSIX semaphores need no marks: the runtime sees them.
 */
#ifndef VPROF_VPROF_H
#define VPROF_VPROF_H

#include <stddef.h>
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
/* Messages: hand-offs keyed by a value the program carries in its messages (a request
 * id), so they pair across processes and hosts. SEND right before the message leaves,
 * RECV right after it arrived; every RECV pairs with the oldest unreceived SEND of the
 * same key, in any process of the traces analysed together (a request and its reply may
 * use one key). The analyzer draws a wake-up edge from the send to the receive and uses
 * the edges between hosts to align their clocks. */
void vprof_msg_send(uint64_t key);
void vprof_msg_recv(uint64_t key);
/* Custom blocking primitives. */
void vprof_wait_begin(const void *obj);
void vprof_wait_end(const void *obj);
void vprof_wake(const void *obj);

/* ---- W3C Trace Context: the `traceparent` header (https://www.w3.org/TR/trace-context/)
 * "00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>", 55 characters. Always
 * available (no runtime needed), no allocation. The message key of a request that carries
 * a traceparent is its parent-id: the sender's span id, which both ends know. */
typedef struct vprof_traceparent {
  uint64_t trace_id_hi, trace_id_lo; /* the 16-byte trace-id, big-endian halves */
  uint64_t parent_id;                /* the 8-byte parent-id (span id) */
  uint8_t flags;                     /* trace-flags (bit 0: sampled) */
} vprof_traceparent;

#define VPROF_TRACEPARENT_LEN 55 /* characters, without a terminator */

/* Writes the header value of `tp` (version 00, lower-case hex) and a NUL into `out`,
 * which must hold VPROF_TRACEPARENT_LEN + 1 bytes. */
static inline void vprof_traceparent_format(const vprof_traceparent *tp, char *out) {
  static const char hex[] = "0123456789abcdef";
  const uint64_t parts[3] = {tp->trace_id_hi, tp->trace_id_lo, tp->parent_id};
  int p, i, n = 0;
  out[n++] = '0';
  out[n++] = '0';
  for (p = 0; p < 3; p++) {
    if (p != 1)
      out[n++] = '-';
    for (i = 60; i >= 0; i -= 4)
      out[n++] = hex[(parts[p] >> i) & 0xf];
  }
  out[n++] = '-';
  out[n++] = hex[tp->flags >> 4];
  out[n++] = hex[tp->flags & 0xf];
  out[n] = '\0';
}

/* Reads `n` hex digits (0-9, a-f) into *v; returns 0, or -1 on another character. */
static inline int vprof_traceparent_hex_(const char *s, int n, uint64_t *v) {
  int i;
  *v = 0;
  for (i = 0; i < n; i++) {
    char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = (unsigned)(c - 'a' + 10);
    else
      return -1;
    *v = (*v << 4) | d;
  }
  return 0;
}

/* Parses a header value of `len` characters (surrounding blanks and tabs are allowed).
 * Returns 0 and fills `tp`, or -1 if it is not a valid traceparent: malformed, version ff,
 * an all-zero trace-id or parent-id, or a version-00 value with trailing data. A later
 * version's value is read by its first four fields, as the specification asks. */
static inline int vprof_traceparent_parse(const char *s, size_t len, vprof_traceparent *tp) {
  uint64_t version, flags;
  while (len && (*s == ' ' || *s == '\t')) {
    s++;
    len--;
  }
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  if (len < VPROF_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
    return -1;
  if (vprof_traceparent_hex_(s, 2, &version) || version == 0xff ||
      vprof_traceparent_hex_(s + 3, 16, &tp->trace_id_hi) ||
      vprof_traceparent_hex_(s + 19, 16, &tp->trace_id_lo) ||
      vprof_traceparent_hex_(s + 36, 16, &tp->parent_id) ||
      vprof_traceparent_hex_(s + 53, 2, &flags))
    return -1;
  if (version == 0 && len != VPROF_TRACEPARENT_LEN)
    return -1;
  if (version != 0 && len > VPROF_TRACEPARENT_LEN && s[VPROF_TRACEPARENT_LEN] != '-')
    return -1;
  if ((tp->trace_id_hi == 0 && tp->trace_id_lo == 0) || tp->parent_id == 0)
    return -1;
  tp->flags = (uint8_t)flags;
  return 0;
}

/* The message key of a traceparent: its parent-id. */
static inline uint64_t vprof_traceparent_key(const vprof_traceparent *tp) { return tp->parent_id; }

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
#define VPROF_MSG_SEND(key) vprof_msg_send(key)
#define VPROF_MSG_RECV(key) vprof_msg_recv(key)
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
#define VPROF_MSG_SEND(key) ((void)(key))
#define VPROF_MSG_RECV(key) ((void)(key))
#define VPROF_WAIT_BEGIN(obj) ((void)(obj))
#define VPROF_WAIT_END(obj) ((void)(obj))
#define VPROF_WAKE(obj) ((void)(obj))

#endif /* VPROF_ENABLE */

#endif /* VPROF_VPROF_H */
