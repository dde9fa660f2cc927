// The rules of kernel waits: system call -> wait kind, untraced waker -> pseudo-waker
// (docs/analyzer.md, "Kernel waits").
#include "kernel_waits.hpp"

#include "vprof/sched_reader.hpp"

#include <cstring>

namespace vprof::analyzer::detail {

const char *pseudo_waker_tag(unsigned p) {
  static const char *tags[] = {"none",  "io-device",     "net-receive",
                               "timer", "other-process", "unrecorded-thread"};
  return p < kPseudoWakers ? tags[p] : "?";
}

const char *pseudo_waker_name(unsigned p) {
  static const char *names[] = {"[none]",  "[io] block device", "[net] receive",
                                "[timer]", "[process] other",   "[thread] without records"};
  return p < kPseudoWakers ? names[p] : "?";
}

bool is_kernel_wait_name(const std::string &name) {
  for (unsigned k = kFutex; k <= kKernel; ++k)
    if (name == wait_kind_name(k))
      return true;
  return false;
}

WaitKind kernel_wait_kind(std::int32_t syscall) {
  const char *name = trace::sched_wait_kind(syscall);
  for (unsigned k = kFutex; k <= kKernel; ++k)
    if (std::strcmp(name, wait_kind_name(k)) == 0)
      return static_cast<WaitKind>(k);
  return kKernel;
}

PseudoWaker pseudo_waker(WaitKind k, bool irq) {
  switch (k) {
  case kSleep:
    return kPseudoTimer;
  case kIo:
    return kPseudoIo;
  case kPoll:
  case kRead:
  case kWrite:
    return irq ? kPseudoNet : kPseudoProcess;
  case kFutex:
  case kChild:
    return irq ? kPseudoTimer : kPseudoProcess;
  default:
    return irq ? kPseudoIo : kPseudoProcess;
  }
}

} // namespace vprof::analyzer::detail
