// Internal: the rules that turn the kernel's scheduler events (sched.vpk) into waits: the
// wait kind of a system call and the pseudo-waker of a wake-up by no traced thread
// (docs/analyzer.md, "Kernel waits").
#pragma once

#include "engine.hpp"

#include <cstdint>

namespace vprof::analyzer::detail {

// The wait kind of a kernel sleep in system call `syscall` (-1: none, a page fault):
// kFutex ... kKernel.
WaitKind kernel_wait_kind(std::int32_t syscall);

// What woke a kernel wait of kind `k` when the waker is no traced thread: `irq` when the
// wake-up ran in interrupt context or on an idle CPU (waker tid 0), else an untraced task.
// sleep -> timer; io -> block device; a page fault or other system call -> block device
// from an interrupt, else another process; poll/read/write -> network receive from an
// interrupt, else another process; futex/child -> timer from an interrupt (a timeout), else
// another process.
PseudoWaker pseudo_waker(WaitKind k, bool irq);

} // namespace vprof::analyzer::detail
