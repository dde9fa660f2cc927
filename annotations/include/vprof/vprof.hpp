// vprof annotations for C++: RAII guards over the C ABI of <vprof/vprof.h>.
// C++11 and later; compiles to nothing unless VPROF_ENABLE is defined by the build.
//
// Example:
//
//   #include <vprof/vprof.hpp>
//
//   void Server::handle(Request& rq) {
//     VPROF_SCOPED_INTERVAL(iv, "GET");   // begins; ends when `iv` goes out of scope
//     rq.interval = iv.id();
//     pool_.submit([&rq] {
//       vprof::attachment a(rq.interval);   // this worker works for it until scope end
//       serve(rq);
//     });
//   }
//
// Across hosts (docs/multihost.md), the server's side of a request that carries the
// client's interval id `rq.interval` and a message key `rq.id` (the same value will do):
//
//   void Server::on_request(const Request& rq) {
//     vprof::remote_attachment work(rq.interval, rq.id);  // received; works for it
//     Reply rp = serve(rq);
//     work.reply();                                       // detached; the reply leaves
//     send_reply(rp);
//   }
#ifndef VPROF_VPROF_HPP
#define VPROF_VPROF_HPP

#include <vprof/vprof.h>

#include <cstdint>

namespace vprof {

#if defined(VPROF_ENABLE)

// Begins an interval in the constructor and ends it in the destructor. The label is a
// static descriptor (registered once, never hashed per call); VPROF_SCOPED_INTERVAL
// declares both in one line.
class interval {
public:
  explicit interval(vprof_label &label) : id_(vprof_interval_begin(&label)) {}
  interval() : id_(vprof_interval_begin(nullptr)) {}
  ~interval() {
    if (active_)
      vprof_interval_end(id_);
  }
  interval(const interval &) = delete;
  interval &operator=(const interval &) = delete;

  std::uint64_t id() const { return id_; }
  // Ends the interval now (e.g. before a reply is sent); the destructor then does nothing.
  void end() {
    if (active_) {
      vprof_interval_end(id_);
      active_ = false;
    }
  }
  // Gives the end away (another thread calls vprof_interval_end(id())).
  std::uint64_t release() {
    active_ = false;
    return id_;
  }

private:
  std::uint64_t id_;
  bool active_ = true;
};

// Attaches the calling thread to an interval for the guard's lifetime.
class attachment {
public:
  explicit attachment(std::uint64_t id) : id_(id) { vprof_interval_attach(id_); }
  ~attachment() { vprof_interval_detach(id_); }
  attachment(const attachment &) = delete;
  attachment &operator=(const attachment &) = delete;

private:
  std::uint64_t id_;
};

// The receiving end of a message that carries an interval: marks the receive of `key` and
// attaches to `interval` in the constructor; reply() detaches and marks the send of the
// reply under the same key (call it right before the reply leaves); the destructor
// detaches if reply() was not called.
class remote_attachment {
public:
  remote_attachment(std::uint64_t interval, std::uint64_t key) : id_(interval), key_(key) {
    vprof_msg_recv(key_);
    vprof_interval_attach(id_);
  }
  ~remote_attachment() {
    if (attached_)
      vprof_interval_detach(id_);
  }
  remote_attachment(const remote_attachment &) = delete;
  remote_attachment &operator=(const remote_attachment &) = delete;

  void reply() {
    if (attached_)
      vprof_interval_detach(id_);
    attached_ = false;
    vprof_msg_send(key_);
  }

private:
  std::uint64_t id_, key_;
  bool attached_ = true;
};

// Marks the blocking part of a custom primitive: wait begins in the constructor and
// ends in the destructor.
class custom_wait {
public:
  explicit custom_wait(const void *obj) : obj_(obj) { vprof_wait_begin(obj_); }
  ~custom_wait() { vprof_wait_end(obj_); }
  custom_wait(const custom_wait &) = delete;
  custom_wait &operator=(const custom_wait &) = delete;

private:
  const void *obj_;
};

#else // annotations disabled: empty inline types, no reference to the runtime

class interval {
public:
  explicit interval(vprof_label &) {}
  interval() = default;
  interval(const interval &) = delete;
  interval &operator=(const interval &) = delete;
  std::uint64_t id() const { return 0; }
  void end() {}
  std::uint64_t release() { return 0; }
};

class attachment {
public:
  explicit attachment(std::uint64_t) {}
  attachment(const attachment &) = delete;
  attachment &operator=(const attachment &) = delete;
};

class remote_attachment {
public:
  remote_attachment(std::uint64_t, std::uint64_t) {}
  remote_attachment(const remote_attachment &) = delete;
  remote_attachment &operator=(const remote_attachment &) = delete;
  void reply() {}
};

class custom_wait {
public:
  explicit custom_wait(const void *) {}
  custom_wait(const custom_wait &) = delete;
  custom_wait &operator=(const custom_wait &) = delete;
};

#endif // VPROF_ENABLE

} // namespace vprof

// Declares `var`, a vprof::interval labelled by a string literal, with its descriptor.
#define VPROF_SCOPED_INTERVAL(var, label_literal)                                                  \
  static vprof_label var##_vprof_label_{label_literal, 0};                                         \
  ::vprof::interval var(var##_vprof_label_)

#endif // VPROF_VPROF_HPP
