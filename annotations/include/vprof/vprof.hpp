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
